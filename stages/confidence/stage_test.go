package confidence

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/nova-platform/nova/runner"
)

type verifierFunc func(ctx context.Context, dir, commit string) (runner.CommitSignature, error)

func (f verifierFunc) VerifyCommit(ctx context.Context, dir, commit string) (runner.CommitSignature, error) {
	return f(ctx, dir, commit)
}

func stageState(t *testing.T, env runner.Environment) *runner.State {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "reports"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"e2e.xml", "load.xml"} {
		if err := os.WriteFile(filepath.Join(dir, "reports", name), []byte(`<testsuite><testcase name="a"/><testcase name="b"/></testsuite>`), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return &runner.State{
		Dir:    dir,
		Commit: "abc",
		Contract: &runner.Contract{ID: "c", Environment: env, Runbook: "r", Dashboard: "d", Oncall: "o",
			Validation: &runner.Validation{E2ESuite: "reports/e2e.xml", LoadTest: "reports/load.xml"}},
		Target:    &runner.TargetStack{Instances: []runner.Instance{{Name: "a", Pinned: true}}},
		Completed: []string{"schema", "policy", "nfr"},
		Cost:      &runner.CostEstimate{Skipped: true},
	}
}

func TestStageVerdicts(t *testing.T) {
	verified := verifierFunc(func(context.Context, string, string) (runner.CommitSignature, error) {
		return runner.CommitVerified, nil
	})
	tests := []struct {
		name      string
		env       runner.Environment
		mutate    func(*runner.State)
		verdict   runner.Verdict
		reason    runner.Reason
		wantEvent string
	}{
		{"qa pass", runner.QA, func(*runner.State) {}, runner.Pass, "", "proceed"},
		{"dr below threshold", runner.DR, func(st *runner.State) {
			st.PCRs = []runner.PCR{{Engine: runner.EngineRego, Severity: runner.High, Result: runner.PCRFail}}
		}, runner.Fail, runner.ConfidenceBelowThreshold, "halt"},
		{"critical blocks", runner.Dev, func(st *runner.State) {
			st.PCRs = []runner.PCR{{Engine: runner.EngineRego, Severity: runner.Critical, Result: runner.PCRFail}}
		}, runner.Fail, runner.PolicyCriticalFail, "block"},
		{"nfr stage missing", runner.Dev, func(st *runner.State) { st.Completed = []string{"schema", "policy"} }, runner.Fail, runner.ConfidenceInputMissing, "block"},
		{"required report missing", runner.QA, func(st *runner.State) {
			st.Contract.Validation.LoadTest = "reports/nope.xml"
		}, runner.Fail, runner.ConfidenceInputMissing, "block"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := stageState(t, tt.env)
			tt.mutate(st)
			res, err := New(runner.PrePlan, verified).Run(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tt.verdict {
				t.Errorf("verdict %s (%s), want %s", res.Verdict, res.Summary, tt.verdict)
			}
			if tt.reason != "" && (len(res.Findings) == 0 || res.Findings[0].Reason != tt.reason) {
				t.Errorf("findings %+v, want %s", res.Findings, tt.reason)
			}
			if res.Event != runner.EventConfidenceComputed || len(res.Also) != 1 || res.Also[0].Type != runner.EventDecisionMade {
				t.Fatalf("events %s %+v, want %s then %s", res.Event, res.Also, runner.EventConfidenceComputed, runner.EventDecisionMade)
			}
			d := res.Also[0].Data.(Decision)
			if d.ChosenAction != tt.wantEvent || d.HumanOverride || d.DecisionID == "" {
				t.Errorf("decision %+v, want action %s", d, tt.wantEvent)
			}
			if st.Confidence == nil {
				t.Error("state has no confidence")
			}
		})
	}
}

func TestPostPlanCanOnlyLower(t *testing.T) {
	st := stageState(t, runner.QA)
	if _, err := New(runner.PrePlan, nil).Run(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	pre := st.Confidence.Score
	st.Completed = append(st.Completed, "confidence", "plan", "plan-policy")
	st.PCRs = append(st.PCRs, runner.PCR{Engine: runner.EnginePlan, RuleID: "nova.plan.destroy", Severity: runner.Medium, Result: runner.PCRFail})
	res, err := New(runner.PostPlan, nil).Run(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if st.Confidence.Score >= pre || st.Confidence.Phase != runner.PostPlan {
		t.Errorf("post-plan score %.3f (phase %s), want below pre-plan %.3f", st.Confidence.Score, st.Confidence.Phase, pre)
	}
	if res.Stage != "" || New(runner.PostPlan, nil).Name() != "plan-confidence" {
		t.Errorf("post-plan stage name %q", New(runner.PostPlan, nil).Name())
	}

	// Without the plan-level policy stage the post-plan score cannot be
	// computed at all.
	st.Completed = []string{"schema", "policy", "nfr"}
	res, _ = New(runner.PostPlan, nil).Run(t.Context(), st)
	if res.Verdict != runner.Fail || res.Findings[0].Reason != runner.ConfidenceInputMissing {
		t.Errorf("post-plan without plan-policy: %s %+v", res.Verdict, res.Findings)
	}
}
