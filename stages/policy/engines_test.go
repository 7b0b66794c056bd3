package policy_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/policy"
)

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o755); err != nil {
		t.Fatal(err)
	}
}

func names(engines []runner.PolicyEngine) []string {
	var out []string
	for _, e := range engines {
		out = append(out, e.Name())
	}
	return out
}

func TestEnginesFollowTheConfig(t *testing.T) {
	repo := t.TempDir()
	cfg := policy.DefaultConfig()
	cfg.CheckovPath = filepath.Join(repo, "no-checkov")
	engines, err := policy.Engines(t.Context(), repo, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"rego", "checkov", "kyverno"}, names(engines)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	cfg.Engines = []string{"kyverno", "rego"}
	engines, err = policy.Engines(t.Context(), repo, cfg, nil)
	if err != nil || !cmp.Equal(names(engines), []string{"kyverno", "rego"}) {
		t.Errorf("got %v %v", names(engines), err)
	}
}

// confidenceSpy stands in for the stage after policy: it records that the
// run reached it.
type confidenceSpy struct{ reached *bool }

func (confidenceSpy) Name() string { return "confidence" }
func (s confidenceSpy) Run(context.Context, *runner.State) (runner.Result, error) {
	*s.reached = true
	return runner.Result{Verdict: runner.Pass, Summary: "reached"}, nil
}

// TestAbsentAndCrashingToolsDoNotStopTheRun: with checkov missing and
// kyverno-json crashing, the run gets one skipped record for checkov, one
// error record for kyverno-json, and continues to the next stage.
func TestAbsentAndCrashingToolsDoNotStopTheRun(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, ".nova", "kyverno", "policy.yaml"), "apiVersion: json.kyverno.io/v1alpha1\nkind: ValidatingPolicy\n")
	crash := filepath.Join(repo, "bin", "kyverno-json")
	writeFile(t, crash, "#!/bin/sh\necho 'panic: runtime error: invalid memory address' >&2\nexit 2\n")
	cfg := policy.DefaultConfig()
	cfg.CheckovPath = filepath.Join(repo, "bin", "checkov") // absent
	cfg.KyvernoPath = crash
	engines, err := policy.Engines(t.Context(), repo, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &runner.State{
		Contract: &runner.Contract{ID: "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", Environment: runner.Dev, Stack: "hello"},
		Target:   &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0"},
		PlanJSON: []byte(`{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":[]}`),
	}
	reached := false
	p := runner.Pipeline{Stages: []runner.Stage{
		policy.New(engines, runner.PrePlan),
		confidenceSpy{&reached},
		policy.New(engines, runner.PostPlan),
	}}
	out := p.Run(t.Context(), st)
	if out.Verdict != runner.Pass || !reached {
		t.Fatalf("verdict %s, reached confidence %v: %+v", out.Verdict, reached, out)
	}
	type rec struct {
		Engine, RuleID string
		Result         runner.PCRResult
	}
	var got []rec
	for _, pcr := range st.PCRs {
		if pcr.Engine != runner.EngineRego {
			got = append(got, rec{pcr.Engine, pcr.RuleID, pcr.Result})
		}
	}
	want := []rec{
		{"checkov", "CHECKOV_NOT_CONFIGURED", runner.PCRSkipped},
		{"kyverno", "POLICY_ENGINE_ERROR", runner.PCRError},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestEnginesRejectABadPolicyDir(t *testing.T) {
	repo := t.TempDir()
	writeFile(t, filepath.Join(repo, ".nova", "policy"), "not a directory")
	_, err := policy.Engines(t.Context(), repo, policy.DefaultConfig(), nil)
	if runner.ReasonOf(err) != runner.PolicyConfigInvalid {
		t.Errorf("error %v, want POLICY_CONFIG_INVALID", err)
	}
}

// TestPlatformRulesAlwaysRun: .nova/config.yml comes with the change it
// configures, so no engines list in it may switch the platform rules off:
// a plaintext AWS key in the contract is blocked whatever it lists.
func TestPlatformRulesAlwaysRun(t *testing.T) {
	tests := []struct {
		name, engines string
		want          []string
	}{
		{"checkov only", "[checkov]", []string{"rego", "checkov"}},
		{"none", "[]", []string{"rego"}},
		{"external engines only", "[kyverno, checkov]", []string{"rego", "kyverno", "checkov"}},
		{"rego placed last", "[checkov, rego]", []string{"checkov", "rego"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			repo := t.TempDir()
			writeFile(t, filepath.Join(repo, policy.ConfigFile), "policy:\n  engines: "+tc.engines+"\n  checkov:\n    path: /nonexistent/checkov\n")
			cfg, err := policy.LoadConfig(repo)
			if err != nil {
				t.Fatal(err)
			}
			engines, err := policy.Engines(t.Context(), repo, cfg, nil)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, names(engines)); diff != "" {
				t.Errorf("engines (-want +got)\n%s", diff)
			}
			st := &runner.State{
				Contract: &runner.Contract{ID: "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", Environment: runner.Dev, Stack: "hello",
					Inputs: map[string]any{"deploy_key": "AKIAIOSFODNN7EXAMPLE"}},
				Target: &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0"},
			}
			res, err := policy.New(engines, runner.PrePlan).Run(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != runner.Fail {
				t.Errorf("verdict %s, want fail: the plaintext key got through", res.Verdict)
			}
		})
	}
}

// TestUnreadablePlanBlocks: when the platform rules cannot evaluate the
// plan at all, the critical ones still block the run.
func TestUnreadablePlanBlocks(t *testing.T) {
	repo := t.TempDir()
	cfg := policy.DefaultConfig()
	cfg.Engines = []string{"rego"}
	engines, err := policy.Engines(t.Context(), repo, cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := &runner.State{
		Contract: &runner.Contract{ID: "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", Environment: runner.Dev, Stack: "hello"},
		Target:   &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0"},
		PlanJSON: []byte(`{"resource_changes": [`),
	}
	res, err := policy.New(engines, runner.PostPlan).Run(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if res.Verdict != runner.Fail || len(res.Findings) != 1 || res.Findings[0].Reason != runner.PolicyCriticalFail {
		t.Errorf("verdict %s findings %+v, want blocked by POLICY_CRITICAL_FAIL", res.Verdict, res.Findings)
	}
}

// TestPolicyDirsStayInTheCheckout: a policy directory that is a link out
// of the checkout (to / it would walk the machine) is refused, and so is a
// kyverno-json policies directory that leads out.
func TestPolicyDirsStayInTheCheckout(t *testing.T) {
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "steal.rego"), "package contract\n\ndeny contains \"x\" if { true }\n")
	for _, target := range []string{outside, "/"} {
		repo := t.TempDir()
		if err := os.MkdirAll(filepath.Join(repo, ".nova"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, filepath.Join(repo, ".nova", "policy")); err != nil {
			t.Fatal(err)
		}
		if _, err := policy.Engines(t.Context(), repo, policy.DefaultConfig(), nil); runner.ReasonOf(err) != runner.PathOutsideCheckout {
			t.Errorf("policy dir linked to %s: %v, want %s", target, err, runner.PathOutsideCheckout)
		}
		cfg := policy.DefaultConfig()
		cfg.PolicyDir = ".nova/none"
		cfg.Engines = []string{"kyverno"}
		cfg.KyvernoPolicies = ".nova/policy"
		if _, err := policy.Engines(t.Context(), repo, cfg, nil); runner.ReasonOf(err) != runner.PathOutsideCheckout {
			t.Errorf("kyverno policies linked to %s: %v, want %s", target, err, runner.PathOutsideCheckout)
		}
	}
}
