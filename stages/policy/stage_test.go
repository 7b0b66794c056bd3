package policy

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// fakeEngine is a policy engine made of a function.
type fakeEngine struct {
	name     string
	evaluate func(context.Context, runner.PolicyPayload) ([]runner.PCR, error)
}

func (f fakeEngine) Name() string     { return f.name }
func (f fakeEngine) Configured() bool { return true }
func (f fakeEngine) Evaluate(ctx context.Context, p runner.PolicyPayload) ([]runner.PCR, error) {
	return f.evaluate(ctx, p)
}

const contractID = "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"

var now = time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)

func returning(name string, pcrs []runner.PCR, err error) fakeEngine {
	return fakeEngine{name, func(context.Context, runner.PolicyPayload) ([]runner.PCR, error) { return pcrs, err }}
}

func state() *runner.State {
	return &runner.State{
		Contract: &runner.Contract{ID: contractID, Environment: runner.Dev, Stack: "hello"},
		Target:   &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0"},
		PCRs:     []runner.PCR{{RuleID: "earlier.stage"}},
	}
}

func run(t *testing.T, phase runner.Phase, st *runner.State, engines ...runner.PolicyEngine) runner.Result {
	t.Helper()
	res, err := New(engines, phase, WithClock(func() time.Time { return now })).Run(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

// brief is what the stage tests compare of a record.
type brief struct {
	Engine, RuleID string
	Severity       runner.Severity
	Result         runner.PCRResult
	Reason         runner.Reason
}

func briefs(pcrs []runner.PCR) []brief {
	out := make([]brief, 0, len(pcrs))
	for _, p := range pcrs {
		out = append(out, brief{p.Engine, p.RuleID, p.Severity, p.Result, runner.PCRReason(p)})
	}
	return out
}

func fail(engine, rule string, sev runner.Severity) runner.PCR {
	return runner.PCR{Engine: engine, RuleID: rule, Severity: sev, Result: runner.PCRFail, Message: rule + " failed"}
}

func TestStageNames(t *testing.T) {
	if got := New(nil, runner.PrePlan).Name(); got != "policy" {
		t.Errorf("pre-plan stage is %q, want policy", got)
	}
	if got := New(nil, runner.PostPlan).Name(); got != "plan-policy" {
		t.Errorf("post-plan stage is %q, want plan-policy", got)
	}
}

func TestNonCriticalFailuresPass(t *testing.T) {
	st := state()
	res := run(t, runner.PrePlan, st,
		returning("rego", []runner.PCR{fail("rego", "nova.tags.required", runner.Medium)}, nil),
		returning("checkov", []runner.PCR{fail("checkov", "checkov.CKV_AWS_20", runner.High)}, nil),
	)
	if res.Verdict != runner.Pass || len(res.Findings) != 0 {
		t.Errorf("verdict %s findings %+v, want pass without findings", res.Verdict, res.Findings)
	}
	want := []brief{
		{"rego", "nova.tags.required", runner.Medium, runner.PCRFail, ""},
		{"checkov", "checkov.CKV_AWS_20", runner.High, runner.PCRFail, ""},
		{"rego", MetaRuleID, runner.Critical, runner.PCRPass, ""},
	}
	if diff := cmp.Diff(want, briefs(res.PCRs)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if diff := cmp.Diff(res.PCRs, st.PCRs[1:]); diff != "" || st.PCRs[0].RuleID != "earlier.stage" {
		t.Errorf("state records are not the earlier ones plus the result's (-result +state)\n%s", diff)
	}
	if res.Event != runner.EventPolicyEvaluated {
		t.Errorf("event %q, want %s", res.Event, runner.EventPolicyEvaluated)
	}
	data := res.Data.(Data)
	wantCounts := runner.Counts{Pass: 1, Fail: 2, Failed: map[runner.Severity]int{runner.High: 1, runner.Medium: 1}}
	if data.Phase != runner.PrePlan || !cmp.Equal(data.Counts, wantCounts) {
		t.Errorf("data %+v, want phase pre-plan and counts %+v", data, wantCounts)
	}
	for _, p := range res.PCRs {
		if p.ContractID != contractID || !p.EvaluatedAt.Equal(now) {
			t.Errorf("record %s not stamped: %+v", p.RuleID, p)
		}
	}
}

func TestCriticalFailureBlocks(t *testing.T) {
	st := state()
	crit := fail("rego", "nova.secrets.plaintext", runner.Critical)
	crit.ResourceRef = "contract:/inputs/db_password"
	res := run(t, runner.PrePlan, st, returning("rego", []runner.PCR{crit}, nil))
	if res.Verdict != runner.Fail {
		t.Fatalf("verdict %s, want fail", res.Verdict)
	}
	want := []runner.Finding{{
		Reason:  runner.PolicyCriticalFail,
		Message: "blocked: critical failure(s) nova.secrets.plaintext at contract:/inputs/db_password",
		Field:   "/inputs/db_password",
	}}
	if diff := cmp.Diff(want, res.Findings); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	meta := res.PCRs[len(res.PCRs)-1]
	if got := (brief{meta.Engine, meta.RuleID, meta.Severity, meta.Result, runner.PCRReason(meta)}); got != (brief{"rego", MetaRuleID, runner.Critical, runner.PCRFail, runner.PolicyCriticalFail}) {
		t.Errorf("meta record %+v", got)
	}
	if len(st.PCRs) != 3 {
		t.Errorf("a blocked evaluation still records its PCRs in the state: got %d", len(st.PCRs))
	}
}

// TestCriticalRuleThatCouldNotEvaluateBlocks: a critical rule that could
// not be evaluated blocks as its failure would; an engine error (high)
// does not.
func TestCriticalRuleThatCouldNotEvaluateBlocks(t *testing.T) {
	unevaluated := runner.PCR{Engine: "rego", RuleID: "nova.secrets.plaintext", Severity: runner.Critical, Result: runner.PCRError,
		Message: "evaluating rule nova.secrets.plaintext: eval_conflict_error"}
	res := run(t, runner.PostPlan, &runner.State{Contract: state().Contract, Target: state().Target, PlanJSON: []byte(`{}`)},
		returning("rego", []runner.PCR{unevaluated}, nil))
	if res.Verdict != runner.Fail {
		t.Fatalf("verdict %s, want fail", res.Verdict)
	}
	want := []runner.Finding{{
		Reason:  runner.PolicyCriticalFail,
		Message: "blocked: critical failure(s) nova.secrets.plaintext (could not be evaluated)",
	}}
	if diff := cmp.Diff(want, res.Findings); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestEngineFailuresBecomeRecords(t *testing.T) {
	tests := []struct {
		name   string
		engine runner.PolicyEngine
		want   []brief
	}{
		{"error", returning("checkov", nil, errors.New("exit status 2: Traceback (most recent call last)")),
			[]brief{{"checkov", "POLICY_ENGINE_ERROR", runner.High, runner.PCRError, runner.PolicyEngineError}}},
		{"error with a reason, after partial results", returning("rego",
			[]runner.PCR{fail("rego", "nova.tags.required", runner.Medium)},
			runner.Errorf(runner.PolicyCompileFailed, "compiling consumer policies: 1 error")),
			[]brief{{"rego", "nova.tags.required", runner.Medium, runner.PCRFail, ""}, {"rego", "POLICY_COMPILE_FAILED", runner.High, runner.PCRError, runner.PolicyCompileFailed}}},
		{"panic", fakeEngine{"kyverno", func(context.Context, runner.PolicyPayload) ([]runner.PCR, error) { panic("nil map") }},
			[]brief{{"kyverno", "POLICY_ENGINE_ERROR", runner.High, runner.PCRError, runner.PolicyEngineError}}},
		{"malformed record", returning("kyverno", []runner.PCR{{Engine: "kyverno", RuleID: "kyverno.x", Severity: "severe", Result: runner.PCRFail, Message: "m"}}, nil),
			[]brief{{"kyverno", "POLICY_RESULT_INVALID", runner.High, runner.PCRError, runner.PolicyResultInvalid}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := run(t, runner.PrePlan, state(), tc.engine, returning("rego", nil, nil))
			if res.Verdict != runner.Pass {
				t.Errorf("verdict %s, want pass: an engine failure never stops the run", res.Verdict)
			}
			got := briefs(res.PCRs)
			if diff := cmp.Diff(tc.want, got[:len(tc.want)]); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			errRec := res.PCRs[len(tc.want)-1]
			if !strings.Contains(errRec.Message, tc.engine.Name()) {
				t.Errorf("message %q does not name the engine", errRec.Message)
			}
		})
	}
}

func TestPostPlanSeesThePlan(t *testing.T) {
	st := state()
	st.PlanJSON = []byte(`{"format_version":"1.2"}`)
	var seen runner.PolicyPayload
	spy := fakeEngine{"rego", func(_ context.Context, p runner.PolicyPayload) ([]runner.PCR, error) { seen = p; return nil, nil }}
	res := run(t, runner.PostPlan, st, spy)
	if seen.Phase != runner.PostPlan || string(seen.Plan) != `{"format_version":"1.2"}` || seen.Contract != st.Contract || seen.Target != st.Target {
		t.Errorf("payload %+v", seen)
	}
	if meta := res.PCRs[len(res.PCRs)-1]; meta.ResourceRef != "plan" {
		t.Errorf("post-plan meta record covers %q, want plan", meta.ResourceRef)
	}
}

func TestStageCannotEvaluate(t *testing.T) {
	tests := []struct {
		name  string
		phase runner.Phase
		st    *runner.State
		eng   runner.PolicyEngine
		want  runner.Reason
	}{
		{"no contract", runner.PrePlan, &runner.State{}, returning("rego", nil, nil), runner.InternalError},
		{"post-plan without a plan", runner.PostPlan, state(), returning("rego", nil, nil), runner.InternalError},
		{"engine outside the vocabulary", runner.PrePlan, state(), returning("semgrep", nil, nil), runner.InternalError},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New([]runner.PolicyEngine{tc.eng}, tc.phase).Run(t.Context(), tc.st)
			if got := runner.ReasonOf(err); got != tc.want {
				t.Errorf("error %v with reason %s, want %s", err, got, tc.want)
			}
		})
	}
}

func TestCancelledRunIsAnError(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	eng := fakeEngine{"checkov", func(ctx context.Context, _ runner.PolicyPayload) ([]runner.PCR, error) { return nil, ctx.Err() }}
	_, err := New([]runner.PolicyEngine{eng}, runner.PrePlan).Run(ctx, state())
	if got := runner.ReasonOf(err); got != runner.RunCancelled {
		t.Errorf("error %v with reason %s, want RUN_CANCELLED", err, got)
	}
}
