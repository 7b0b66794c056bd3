package terraform

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

func TestBackend(t *testing.T) {
	contract := func(b *runner.Backend) *runner.Contract {
		return &runner.Contract{ID: "c-1", Environment: runner.QA, Backend: b}
	}
	tests := []struct {
		name     string
		cfg      Engine
		contract *runner.Contract
		wantType string
		want     []string
		reason   runner.Reason
	}{
		{"default local state per contract and environment", Engine{StateDir: "/s"}, contract(nil), "local",
			[]string{"path=" + filepath.Join("/s", "c-1", "qa", "terraform.tfstate")}, ""},
		{"contract backend passes through", Engine{StateDir: "/s"}, contract(&runner.Backend{Type: "s3", Config: map[string]string{"key": "k", "bucket": "b"}}), "s3",
			[]string{"bucket=b", "key=k"}, ""},
		{"flags win over the contract", Engine{StateDir: "/s", BackendType: "gcs", BackendConfig: []string{"bucket=ops"}}, contract(&runner.Backend{Type: "s3"}), "gcs",
			[]string{"bucket=ops"}, ""},
		{"operator may place local state", Engine{StateDir: "/s", BackendConfig: []string{"path=/elsewhere.tfstate"}}, contract(nil), "local",
			[]string{"path=/elsewhere.tfstate"}, ""},
		{"contract may not place local state", Engine{StateDir: "/s"}, contract(&runner.Backend{Type: "local", Config: map[string]string{"path": "/s/c-1/prod/terraform.tfstate"}}), "", nil, runner.BackendConfigInvalid},
		{"pg state per contract and environment", Engine{StateDir: "/s", BackendType: "pg", BackendConfig: []string{"conn_str=postgres://db/tf"}}, contract(nil), "pg",
			[]string{"conn_str=postgres://db/tf", "schema_name=nova_c1_qa"}, ""},
		{"pg schema chosen by the operator", Engine{StateDir: "/s", BackendType: "pg", BackendConfig: []string{"schema_name=shared"}}, contract(nil), "pg",
			[]string{"schema_name=shared"}, ""},
		{"malformed flag", Engine{StateDir: "/s", BackendConfig: []string{"secret-token-without-equals"}}, contract(nil), "", nil, runner.BackendConfigInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			typ, entries, err := tt.cfg.Backend(tt.contract)
			if tt.reason != "" {
				if runner.ReasonOf(err) != tt.reason {
					t.Fatalf("err = %v, want %s", err, tt.reason)
				}
				return
			}
			if err != nil || typ != tt.wantType || !slices.Equal(entries, tt.want) {
				t.Errorf("Backend = %q %q %v, want %q %q", typ, entries, err, tt.wantType, tt.want)
			}
		})
	}
}

func TestHasChangesAndSummary(t *testing.T) {
	change := func(addr string, a ...tfjson.Action) *tfjson.ResourceChange {
		return &tfjson.ResourceChange{Address: addr, Change: &tfjson.Change{Actions: a}}
	}
	p := &tfjson.Plan{ResourceChanges: []*tfjson.ResourceChange{
		change("a", tfjson.ActionNoop), change("b", tfjson.ActionRead),
	}}
	if HasChanges(p) {
		t.Error("no-op and read count as changes")
	}
	p.OutputChanges = map[string]*tfjson.Change{"o": {Actions: tfjson.Actions{tfjson.ActionUpdate}}}
	if !HasChanges(p) {
		t.Error("an output change is a change")
	}
	p.ResourceChanges = append(p.ResourceChanges, change("c", tfjson.ActionCreate), change("d", tfjson.ActionDelete, tfjson.ActionCreate),
		change("e", tfjson.ActionUpdate), change("f", tfjson.ActionDelete))
	sum, list := Summarize(p)
	if sum != (runner.ChangeSummary{Add: 2, Change: 1, Destroy: 2, Replace: 1}) || len(list) != 4 {
		t.Errorf("summary %+v, %d listed", sum, len(list))
	}
}

// fakeLock records what the engine asks of a run lock.
type fakeLock struct {
	name string
	log  *[]string
	err  error
}

func (l fakeLock) Lock(_ context.Context, req runner.LockRequest) (func() error, error) {
	*l.log = append(*l.log, "lock "+l.name+" "+req.Key+" "+req.Holder.RunID)
	if l.err != nil {
		return nil, l.err
	}
	return func() error { *l.log = append(*l.log, "release "+l.name); return nil }, nil
}

type serializingLock struct{ fakeLock }

func (l serializingLock) SerializeInit(_ context.Context, init func() error) error {
	*l.log = append(*l.log, "init turn "+l.name)
	return init()
}

// TestOpenHoldsTheRunLocksUntilClose: the locks are taken before terraform
// runs, held while the workspace is open (the run's span) and released
// last-taken first; a refused lock runs no terraform.
func TestOpenHoldsTheRunLocksUntilClose(t *testing.T) {
	marks := t.TempDir()
	tf := scripted(t, "echo \"$1\" >> "+filepath.Join(marks, "calls")+"\nexit 0\n")
	var log []string
	engine := func(locks ...runner.StateLock) *Engine {
		return &Engine{
			Terraform: Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}},
			StateDir:  t.TempDir(), Holder: runner.LockHolder{RunID: "run-1"},
			Locks: func(typ string, _ []string) ([]runner.StateLock, error) {
				log = append(log, "backend "+typ)
				return locks, nil
			},
		}
	}
	c := &runner.Contract{ID: "c-1", Environment: runner.Dev}

	ws, err := engine(fakeLock{"local", &log, nil}, serializingLock{fakeLock{"pg", &log, nil}}).Open(t.Context(), t.TempDir(), t.TempDir(), c)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Close(); err != nil {
		t.Fatal(err)
	}
	want := []string{"backend local", "lock local c-1/dev run-1", "lock pg c-1/dev run-1", "init turn pg", "release pg", "release local"}
	if !slices.Equal(log, want) {
		t.Errorf("calls:\n%q\nwant\n%q", log, want)
	}

	log = nil
	calls := filepath.Join(marks, "calls")
	os.Remove(calls)
	_, err = engine(fakeLock{"local", &log, nil}, fakeLock{"pg", &log, runner.Errorf(runner.StateLocked, "held by run-0")}).Open(t.Context(), t.TempDir(), t.TempDir(), c)
	if runner.ReasonOf(err) != runner.StateLocked {
		t.Fatalf("refused lock: %v", err)
	}
	if want := []string{"backend local", "lock local c-1/dev run-1", "lock pg c-1/dev run-1", "release local"}; !slices.Equal(log, want) {
		t.Errorf("calls:\n%q\nwant\n%q", log, want)
	}
	if _, err := os.Stat(calls); err == nil {
		t.Error("terraform ran without the run lock")
	}
}

// TestDriftNamesAttributesNotValues: what a plan says about drift is kept
// as addresses and attribute names; the values, which may be secrets,
// stay in the plan.
func TestDriftNamesAttributesNotValues(t *testing.T) {
	p := &tfjson.Plan{
		ResourceDrift: []*tfjson.ResourceChange{
			{Address: "aws_instance.web", Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionUpdate},
				Before: map[string]any{"instance_type": "t3.micro", "ami": "ami-1", "tags": map[string]any{"a": "b"}},
				After:  map[string]any{"instance_type": "t3.large", "ami": "ami-1", "tags": map[string]any{"a": "c"}}}},
			{Address: "aws_s3_bucket.gone", Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionDelete},
				Before: map[string]any{"bucket": "logs"}}},
		},
		ResourceChanges: []*tfjson.ResourceChange{
			{Address: "module.m.terraform_data.x", Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionUpdate},
				Before: map[string]any{"input": "tampered", "output": "tampered", "id": "1"},
				After:  map[string]any{"input": "hello", "id": "1"}, AfterUnknown: map[string]any{"output": true}}},
			{Address: "terraform_data.same", Change: &tfjson.Change{Actions: tfjson.Actions{tfjson.ActionNoop}}},
		},
	}
	want := []runner.DriftedResource{
		{Address: "aws_instance.web", Kind: runner.DriftOutside, Actions: []string{"update"}, Attributes: []string{"instance_type", "tags"}},
		{Address: "aws_s3_bucket.gone", Kind: runner.DriftOutside, Actions: []string{"delete"}},
		{Address: "module.m.terraform_data.x", Kind: runner.DriftConfiguration, Actions: []string{"update"}, Attributes: []string{"input", "output"}},
	}
	if diff := cmp.Diff(want, Drift(p)); diff != "" {
		t.Errorf("Drift (-want +got):\n%s", diff)
	}
}

// TestShowVouchesForTheFileItRead: the saved plan's hash comes with what
// was read from it, and a file that changes while terraform reads it is
// refused, so a digest is never paired with another file's hash.
func TestShowVouchesForTheFileItRead(t *testing.T) {
	for _, tamper := range []bool{false, true} {
		planFile := filepath.Join(t.TempDir(), "tfplan")
		if err := os.WriteFile(planFile, []byte("the plan terraform made"), 0o644); err != nil {
			t.Fatal(err)
		}
		body := `echo '{"format_version":"1.2","terraform_version":"1.11.4"}'` + "\n"
		if tamper {
			body = "echo 'another plan' > \"$4\"\n" + body
		}
		tf, err := New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		want, err := runner.HashFile(planFile)
		if err != nil {
			t.Fatal(err)
		}
		sp, err := (&workspace{tf: tf}).Show(t.Context(), planFile)
		switch {
		case !tamper && (err != nil || sp.FileSHA256 != want):
			t.Errorf("untouched plan: %v, hash %q, want %q", err, sp.FileSHA256, want)
		case tamper && (runner.ReasonOf(err) != runner.TerraformShowFailed || !strings.Contains(err.Error(), "changed while terraform read it")):
			t.Errorf("plan changed during show: %v (%s), want %s", err, runner.ReasonOf(err), runner.TerraformShowFailed)
		}
	}
}
