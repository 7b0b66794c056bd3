package runner

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// event builds a chain event; data is wrapped in the pipeline's stage
// envelope when stage is set, as a stage's own event is.
func event(t *testing.T, id, typ, env, run, stage string, data any) Event {
	t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		t.Fatal(err)
	}
	if stage != "" {
		if raw, err = json.Marshal(StageEventData{Stage: stage, Verdict: Pass, Result: raw}); err != nil {
			t.Fatal(err)
		}
	}
	return Event{ID: id, Type: typ, Environment: env, RunID: run, Data: raw}
}

func TestUnresolvedApply(t *testing.T) {
	ind := func(id, env string) Event {
		return event(t, id, EventApplyIndeterminate, env, "r", "", map[string]string{"cause": "interrupted"})
	}
	res := func(id, env string) Event {
		return event(t, id, EventApplyResolved, env, "r", "", Resolution{Outcome: ResolvedNotApplied, Resolves: "x"})
	}
	auth := func(id, env, run string) Event {
		return event(t, id, EventApplyAuthorized, env, run, "gate", Authorization{Digest: "d"})
	}
	done := func(id, env, run string) Event {
		return event(t, id, EventApplyCompleted, env, run, "apply", map[string]any{"digest": "d", "applied": true})
	}
	failed := func(id, env, run string, reason Reason) Event {
		raw, _ := json.Marshal(StageEventData{Stage: "apply", Verdict: Errored, Findings: []Finding{{Reason: reason}}})
		return Event{ID: id, Type: EventRunFailed, Environment: env, RunID: run, Data: raw}
	}
	tests := []struct {
		name   string
		events []Event
		env    Environment
		want   string
	}{
		{"nothing recorded", nil, QA, ""},
		{"open in qa", []Event{ind("1", "qa")}, QA, "1"},
		{"another environment's is not ours", []Event{ind("1", "qa")}, Prod, ""},
		{"resolved", []Event{ind("1", "qa"), res("2", "qa")}, QA, ""},
		{"resolved elsewhere does not count", []Event{ind("1", "qa"), res("2", "prod")}, QA, "1"},
		{"a newer one after a resolution", []Event{ind("1", "qa"), res("2", "qa"), ind("3", "qa")}, QA, "3"},
		{"authorized and completed", []Event{auth("1", "dev", "r1"), done("2", "dev", "r1")}, Dev, ""},
		{"authorized, then nova died", []Event{auth("1", "dev", "r1")}, Dev, "1"},
		{"authorized, then nova died; the next run's events do not settle it", []Event{auth("1", "dev", "r1"), event(t, "2", EventPlanCreated, "dev", "r2", "plan", PlanRecord{}), failed("3", "dev", "r2", ApplyIndeterminate)}, Dev, "1"},
		{"authorized, then terraform failed cleanly", []Event{auth("1", "dev", "r1"), failed("2", "dev", "r1", TerraformApplyFailed)}, Dev, ""},
		{"authorized, then refused before apply", []Event{auth("1", "dev", "r1"), failed("2", "dev", "r1", PlanDigestMismatch)}, Dev, ""},
		{"authorized, then failed with an unknown outcome but no indeterminate event", []Event{auth("1", "dev", "r1"), failed("2", "dev", "r1", ApplyIndeterminate)}, Dev, "1"},
		{"authorized, interrupted", []Event{auth("1", "dev", "r1"), failed("2", "dev", "r1", ApplyIndeterminate), ind("3", "dev")}, Dev, "3"},
		{"authorized, then died, then resolved", []Event{auth("1", "dev", "r1"), res("2", "dev")}, Dev, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if open := UnresolvedApply(tt.events, tt.env); open != nil {
				got = open.ID
			}
			if got != tt.want {
				t.Errorf("UnresolvedApply = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestAppliedReceipt(t *testing.T) {
	events := []Event{
		event(t, "1", EventApplyCompleted, "dev", "r1", "apply", map[string]any{"digest": "d1", "applied": true}),
		event(t, "2", EventApplyCompleted, "qa", "r2", "apply", map[string]any{"digest": "d2", "applied": true}),
	}
	if r := AppliedReceipt(events, Dev, "d1"); r == nil || r.ID != "1" {
		t.Errorf("receipt of d1 in dev = %v", r)
	}
	if r := AppliedReceipt(events, Dev, "d2"); r != nil {
		t.Errorf("d2 was applied in qa, not dev: %v", r)
	}
}

func TestPlanCleared(t *testing.T) {
	planned := func(run, env, digest string) Event {
		return event(t, "p-"+run, EventPlanCreated, env, run, "plan", PlanRecord{Digest: digest})
	}
	scored := func(run, env string, phase Phase, band Band) Event {
		return event(t, "c-"+run, EventConfidenceComputed, env, run, "plan-confidence", Confidence{Phase: phase, Band: band})
	}
	tests := []struct {
		name   string
		events []Event
		want   bool
	}{
		{"planned and passed", []Event{planned("r1", "dev", "d"), scored("r1", "dev", PostPlan, BandPass)}, true},
		{"planned, never scored", []Event{planned("r1", "dev", "d")}, false},
		{"scored below threshold", []Event{planned("r1", "dev", "d"), scored("r1", "dev", PostPlan, BandFail)}, false},
		{"only the pre-plan score passed", []Event{planned("r1", "dev", "d"), scored("r1", "dev", PrePlan, BandPass)}, false},
		{"another run passed", []Event{planned("r1", "dev", "d"), scored("r2", "dev", PostPlan, BandPass)}, false},
		{"another digest passed", []Event{planned("r1", "dev", "other"), scored("r1", "dev", PostPlan, BandPass)}, false},
		{"another environment", []Event{planned("r1", "qa", "d"), scored("r1", "qa", PostPlan, BandPass)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := PlanCleared(tt.events, Dev, "d"); got != tt.want {
				t.Errorf("PlanCleared = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestApprovalsReadsDirectAndWrappedData(t *testing.T) {
	events := []Event{
		event(t, "1", EventApprovalRecorded, "qa", "r", "", ApprovalRecord{Environment: QA, Approver: "qa-lead", PlanDigest: "d1"}),
		event(t, "2", EventApprovalRecorded, "prod", "r", "", ApprovalRecord{Environment: Prod, Approver: "sre-1", PlanDigest: "d1"}),
		event(t, "3", EventApprovalRecorded, "qa", "r", "approve", ApprovalRecord{Environment: QA, Approver: "qa-2", PlanDigest: "d2"}),
	}
	got, err := Approvals(events, QA)
	if err != nil {
		t.Fatal(err)
	}
	want := []Approval{
		{ApprovalRecord: ApprovalRecord{Environment: QA, Approver: "qa-lead", PlanDigest: "d1"}, EventID: "1"},
		{ApprovalRecord: ApprovalRecord{Environment: QA, Approver: "qa-2", PlanDigest: "d2"}, EventID: "3"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("qa approvals (-want +got):\n%s", diff)
	}
	broken := append(events, Event{ID: "4", Type: EventApprovalRecorded, Data: json.RawMessage(`"not an object"`)})
	if _, err := Approvals(broken, QA); ReasonOf(err) != EvidenceLayoutInvalid {
		t.Errorf("unreadable approval: %v, want %s", err, EvidenceLayoutInvalid)
	}
}

func TestPlanEvaluation(t *testing.T) {
	pcr := PCR{RuleID: "nova.tags.required", Result: PCRPass}
	withPCRs := func(id, typ, run, stage string, data any, pcrs ...PCR) Event {
		raw, _ := json.Marshal(data)
		env, _ := json.Marshal(StageEventData{Stage: stage, Verdict: Pass, Result: raw, PCRs: pcrs})
		return Event{ID: id, Type: typ, Environment: "qa", RunID: run, Data: env}
	}
	events := []Event{
		withPCRs("1", EventPolicyEvaluated, "r1", "policy", map[string]any{}, pcr),
		withPCRs("2", EventPlanCreated, "r1", "plan", PlanRecord{Digest: "d"}),
		withPCRs("3", EventConfidenceComputed, "r1", "plan-confidence", Confidence{Phase: PostPlan, Score: 0.9}),
		withPCRs("4", EventPolicyEvaluated, "r2", "policy", map[string]any{}, PCR{RuleID: "other-run"}),
	}
	pcrs, conf := PlanEvaluation(events, QA, "d")
	if len(pcrs) != 1 || pcrs[0].RuleID != "nova.tags.required" || conf == nil || conf.Score != 0.9 {
		t.Errorf("PlanEvaluation = %+v, %+v", pcrs, conf)
	}
	if pcrs, conf := PlanEvaluation(events, QA, "unknown"); pcrs != nil || conf != nil {
		t.Errorf("unknown digest: %+v, %+v", pcrs, conf)
	}
}

func TestAppliedTarget(t *testing.T) {
	ev := func(run, env, typ, data string) Event {
		return Event{RunID: run, Environment: env, Type: typ, Data: json.RawMessage(data)}
	}
	validated := func(run, env, digest string) Event {
		return ev(run, env, EventContractValidated, `{"stage":"schema","verdict":"pass","summary":"","durationMs":0,"result":{"targetDigest":"`+digest+`"}}`)
	}
	events := []Event{
		validated("r1", "dev", "t1"), ev("r1", "dev", EventApplyCompleted, `{}`),
		validated("r2", "dev", "t2"), // planned, never applied
		validated("r3", "qa", "t3"), ev("r3", "qa", EventApplyCompleted, `{}`),
	}
	if d, run, ok := AppliedTarget(events, Dev); !ok || d != "t1" || run != "r1" {
		t.Errorf("dev: %q %q %v, want t1 from r1", d, run, ok)
	}
	if d, _, ok := AppliedTarget(events, QA); !ok || d != "t3" {
		t.Errorf("qa: %q %v", d, ok)
	}
	if _, _, ok := AppliedTarget(events, Prod); ok {
		t.Error("prod was never applied")
	}
}
