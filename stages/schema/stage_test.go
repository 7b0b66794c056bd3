package schema_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

func embeddedRegistry(t *testing.T) *registry.Registry {
	t.Helper()
	reg, err := registry.Load(registry.Embedded())
	if err != nil {
		t.Fatalf("loading the embedded registry: %v", err)
	}
	return reg
}

// writeContract puts data at dir/rel, creating its directory.
func writeContract(t *testing.T, dir, rel string, data []byte) {
	t.Helper()
	path := filepath.Join(dir, rel)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestStageRun(t *testing.T) {
	reg := embeddedRegistry(t)
	example := readExample(t)
	const loc = ".nova/contract.yml"

	tests := []struct {
		name string
		// setup fills the consumer checkout.
		setup        func(t *testing.T, dir string)
		contractPath string
		env          runner.Environment
		// wantErr is the reason of the error Run returns, if it returns one.
		wantErr     runner.Reason
		wantVerdict runner.Verdict
		wantWhere   []where
		// wantIdentity says the state names the contract even though the
		// run failed.
		wantIdentity bool
	}{
		{
			name:        "the example",
			setup:       func(t *testing.T, dir string) { writeContract(t, dir, loc, example) },
			wantVerdict: runner.Pass,
		},
		{
			name:         "a contract elsewhere",
			setup:        func(t *testing.T, dir string) { writeContract(t, dir, "deploy/nova.yml", example) },
			contractPath: "deploy/nova.yml",
			wantVerdict:  runner.Pass,
		},
		{
			name: "10 MB contract",
			setup: func(t *testing.T, dir string) {
				big := append(append([]byte{}, example...), strings.Repeat("# padding padding padding\n", 10<<20/26)...)
				writeContract(t, dir, loc, big)
			},
			wantVerdict: runner.Fail,
			wantWhere:   []where{{runner.ContractTooLarge, "", loc}},
		},
		{
			name:    "no contract",
			setup:   func(t *testing.T, dir string) {},
			wantErr: runner.ContractNotFound,
		},
		{
			name: "a directory where the contract should be",
			setup: func(t *testing.T, dir string) {
				if err := os.MkdirAll(filepath.Join(dir, loc), 0o755); err != nil {
					t.Fatal(err)
				}
			},
			wantErr: runner.FileNotRegular,
		},
		{
			name: "unknown stack",
			setup: func(t *testing.T, dir string) {
				writeContract(t, dir, loc, []byte(strings.Replace(devContract, "stack: hello", "stack: goodbye", 1)))
			},
			wantVerdict: runner.Fail,
			wantWhere:   []where{{runner.StackUnknown, "/stack", loc + ":3:8"}},
			// Resolution failed, but the contract itself was read.
			wantIdentity: true,
		},
		{
			name: "input of the wrong type",
			setup: func(t *testing.T, dir string) {
				writeContract(t, dir, loc, []byte(devContract+"inputs:\n  greeting: Hi\n  repeat: two\n"))
			},
			wantVerdict:  runner.Fail,
			wantWhere:    []where{{runner.InputTypeMismatch, "/inputs/repeat", loc + ":7:11"}},
			wantIdentity: true,
		},
		{
			name: "input the stack does not declare",
			setup: func(t *testing.T, dir string) {
				writeContract(t, dir, loc, []byte(devContract+"inputs:\n  colour: blue\n"))
			},
			wantVerdict:  runner.Fail,
			wantWhere:    []where{{runner.InputUnknown, "/inputs/colour", loc + ":6:11"}},
			wantIdentity: true,
		},
		{
			name: "schema failure",
			setup: func(t *testing.T, dir string) {
				writeContract(t, dir, loc, []byte(devContract+"nfr:\n  availability: 150\n"))
			},
			wantVerdict:  runner.Fail,
			wantWhere:    []where{{runner.ContractFieldValue, "/nfr/availability", loc + ":6:17"}},
			wantIdentity: true,
		},
		{
			name:        "YAML failure",
			setup:       func(t *testing.T, dir string) { writeContract(t, dir, loc, []byte(devContract+"inputs: [a, b\n")) },
			wantVerdict: runner.Fail,
			wantWhere:   []where{{runner.ContractYAMLInvalid, "", loc + ":5"}},
		},
		{
			// Terraform cannot encrypt state: planning would write in
			// plaintext what the contract asks to keep encrypted.
			name: "encrypted state on terraform",
			setup: func(t *testing.T, dir string) {
				writeContract(t, dir, loc, []byte(devContract+"backend:\n  type: local\n  encryption:\n    keyProvider: pbkdf2\n"))
			},
			wantVerdict:  runner.Fail,
			wantWhere:    []where{{runner.StateEncryptionUnsupported, "/backend/encryption", loc + ":8:5"}},
			wantIdentity: true,
		},
		{
			name:        "--env dr on a prod contract",
			setup:       func(t *testing.T, dir string) { writeContract(t, dir, loc, []byte(prodContract)) },
			env:         runner.DR,
			wantVerdict: runner.Fail,
			wantWhere:   []where{{runner.ContractEnvFieldMissing, "/drDrillRef", loc + ":4:14"}},
			// The identity carries the environment --env chose.
			wantIdentity: true,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(t, dir)
			st := &runner.State{Dir: dir, ContractPath: tc.contractPath, EnvOverride: tc.env}

			res, err := schema.New(reg).Run(t.Context(), st)

			if tc.wantErr != "" {
				if got := runner.ReasonOf(err); got != tc.wantErr {
					t.Fatalf("error reason = %s (%v), want %s", got, err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if res.Verdict != tc.wantVerdict {
				t.Fatalf("verdict = %s, want %s (%s)", res.Verdict, tc.wantVerdict, res.Summary)
			}
			var gotWhere []where
			for _, f := range res.Findings {
				gotWhere = append(gotWhere, where{f.Reason, f.Field, f.Location})
			}
			if diff := cmp.Diff(tc.wantWhere, gotWhere); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if res.Verdict == runner.Pass {
				checkPassed(t, st, res)
				return
			}
			if st.Target != nil || st.ContractDigest != "" {
				t.Errorf("a failed run set target %v and digest %q", st.Target, st.ContractDigest)
			}
			if got := st.Contract != nil; got != tc.wantIdentity {
				t.Errorf("state names the contract: %t, want %t", got, tc.wantIdentity)
			}
			if tc.env != "" && st.Contract != nil && st.Contract.Environment != tc.env {
				t.Errorf("state environment = %s, want %s", st.Contract.Environment, tc.env)
			}
		})
	}
}

func checkPassed(t *testing.T, st *runner.State, res runner.Result) {
	t.Helper()
	if st.Contract == nil || st.Target == nil {
		t.Fatalf("contract %v, target %v: want both set", st.Contract, st.Target)
	}
	digest, err := runner.Digest(st.Contract)
	if err != nil {
		t.Fatal(err)
	}
	if st.ContractDigest != digest {
		t.Errorf("contract digest = %q, want %q", st.ContractDigest, digest)
	}
	if st.Target.Stack != "hello" || st.Target.Instance("message") == nil || st.Target.Instance("echo") == nil {
		t.Errorf("target = %+v, want the hello stack's message and echo", st.Target)
	}
	if got := st.Target.Instance("echo").Inputs["repeat"].Value; got != any(json.Number("2")) {
		t.Errorf("echo repeat = %v, want the contract's 2", got)
	}
	if res.Event != runner.EventContractValidated {
		t.Errorf("event = %q, want %q", res.Event, runner.EventContractValidated)
	}
	targetDigest, err := runner.Digest(st.Target)
	if err != nil {
		t.Fatal(err)
	}
	want := schema.Data{ContractID: st.Contract.ID, Environment: runner.Dev, ContractDigest: digest, TargetDigest: targetDigest, Target: st.Target.Redacted()}
	if diff := cmp.Diff(want, res.Data); diff != "" {
		t.Errorf("event data (-want +got):\n%s", diff)
	}
	// Events are kept forever: no input value may reach one.
	for _, in := range res.Data.(schema.Data).Target.Instances {
		for name, v := range in.Inputs {
			if v.Value != nil || v.Type == "" {
				t.Errorf("event carries input %s.%s = %v (type %q); want the type only", in.Name, name, v.Value, v.Type)
			}
		}
	}
}

// TestEngineOverride: --engine replaces the contract's engine for the run,
// so the contract digest (and the plan digest it feeds) names the engine
// that runs, while the contract's content as written stays that of the
// file; naming the engine the contract already runs changes nothing.
func TestEngineOverride(t *testing.T) {
	reg := embeddedRegistry(t)
	run := func(t *testing.T, contract, override string) *runner.State {
		t.Helper()
		dir := t.TempDir()
		writeContract(t, dir, ".nova/contract.yml", []byte(contract))
		st := &runner.State{Dir: dir, EngineOverride: override}
		res, err := schema.New(reg).Run(t.Context(), st)
		if err != nil || res.Verdict != runner.Pass {
			t.Fatalf("schema: %v %+v", err, res)
		}
		return st
	}
	plain := run(t, devContract, "")
	same := run(t, devContract, runner.EngineTerraform)
	tofu := run(t, devContract, runner.EngineOpenTofu)
	written := run(t, devContract+"engine: opentofu\n", "")
	back := run(t, devContract+"engine: opentofu\n", runner.EngineTerraform)

	if tofu.Contract.EngineName() != runner.EngineOpenTofu || back.Contract.EngineName() != runner.EngineTerraform {
		t.Errorf("engines %s and %s, want opentofu and terraform", tofu.Contract.EngineName(), back.Contract.EngineName())
	}
	if same.ContractDigest != plain.ContractDigest || same.ContractContent != plain.ContractContent {
		t.Error("--engine naming the contract's own engine changed its digests")
	}
	if tofu.ContractDigest == plain.ContractDigest || tofu.ContractDigest != written.ContractDigest {
		t.Error("the contract digest does not name the engine that runs")
	}
	if tofu.ContractContent != plain.ContractContent || back.ContractContent != written.ContractContent {
		t.Error("--engine changed the contract's content as written")
	}
}
