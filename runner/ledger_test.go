package runner

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDecisionOutcomes(t *testing.T) {
	decision := func(id, env, run string) Event {
		return event(t, id, EventDecisionMade, env, run, "", map[string]any{"decisionId": "dec-" + id, "chosenAction": "proceed"})
	}
	plan := func(id, env, run, digest string) Event {
		return event(t, id, EventPlanCreated, env, run, "plan", PlanRecord{Digest: digest})
	}
	auth := func(id, env, run, digest string) Event {
		return event(t, id, EventApplyAuthorized, env, run, "gate", Authorization{Digest: digest})
	}
	done := func(id, env, run string) Event {
		return event(t, id, EventApplyCompleted, env, run, "apply", map[string]any{"applied": true})
	}
	failed := func(id, env, run, stage string, v Verdict, reason Reason) Event {
		raw, _ := json.Marshal(StageEventData{Stage: stage, Verdict: v, Findings: []Finding{{Reason: reason}}})
		return Event{ID: id, Type: EventRunFailed, Environment: env, RunID: run, Data: raw}
	}
	indeterminate := func(id, env, run string) Event {
		return event(t, id, EventApplyIndeterminate, env, run, "", map[string]string{"cause": "killed"})
	}
	resolved := func(id, env, outcome, resolves string) Event {
		return event(t, id, EventApplyResolved, env, "r-ops", "", Resolution{Outcome: outcome, Resolves: resolves})
	}
	rejected := func(id, env, digest string) Event {
		return event(t, id, EventApprovalRejected, env, "r-approve", "", ApprovalRecord{Environment: Environment(env), PlanDigest: digest, Approver: "qa-lead"})
	}
	outcome := func(id, env, decision string, o DecisionOutcome) Event {
		return event(t, id, EventDecisionOutcome, env, "r-x", "", OutcomeRecord{Decision: decision, Outcome: o})
	}
	want := func(decision, run string, o DecisionOutcome, digest, by string, reason Reason) OutcomeRecord {
		return OutcomeRecord{Decision: decision, DecisionID: "dec-" + decision, Run: run, Outcome: o, PlanDigest: digest, SettledBy: by, Reason: reason}
	}
	tests := []struct {
		name   string
		events []Event
		want   []OutcomeRecord
	}{
		{"nothing decided", nil, nil},
		{"an evaluation without a plan has no outcome", []Event{decision("d1", "dev", "r1")}, nil},
		{"dev run applied", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), decision("d2", "dev", "r1"), auth("a", "dev", "r1", "D"), done("c", "dev", "r1")},
			[]OutcomeRecord{want("d1", "r1", OutcomeApplied, "D", "c", ""), want("d2", "r1", OutcomeApplied, "D", "c", "")}},
		{"halted by the confidence signal", []Event{decision("d1", "qa", "r1"), failed("f", "qa", "r1", "confidence", Fail, ConfidenceBelowThreshold)},
			[]OutcomeRecord{want("d1", "r1", OutcomeRejected, "", "f", ConfidenceBelowThreshold)}},
		{"the plan stage could not evaluate", []Event{decision("d1", "dev", "r1"), failed("f", "dev", "r1", "plan", Errored, TerraformNotFound)},
			[]OutcomeRecord{want("d1", "r1", OutcomeFailed, "", "f", TerraformNotFound)}},
		{"awaiting approval has no outcome yet", []Event{decision("d1", "qa", "r1"), plan("p", "qa", "r1", "D")}, nil},
		{"refused for separation of duties is not final", []Event{decision("d1", "prod", "r1"), plan("p", "prod", "r1", "D"), failed("f", "prod", "r2", "gate", Fail, SeparationOfDutiesViolation)}, nil},
		{"approved in another run and applied there", []Event{decision("d1", "qa", "r1"), plan("p", "qa", "r1", "D"), auth("a", "qa", "r2", "D"), done("c", "qa", "r2")},
			[]OutcomeRecord{want("d1", "r1", OutcomeApplied, "D", "c", "")}},
		{"another environment's apply of the digest does not count", []Event{decision("d1", "qa", "r1"), plan("p", "qa", "r1", "D"), auth("a", "prod", "r2", "D"), done("c", "prod", "r2")}, nil},
		{"rejected by a human", []Event{decision("d1", "qa", "r1"), plan("p", "qa", "r1", "D"), rejected("x", "qa", "D")},
			[]OutcomeRecord{want("d1", "r1", OutcomeRejected, "D", "x", ApprovalRejected)}},
		{"terraform failed", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), auth("a", "dev", "r1", "D"), failed("f", "dev", "r1", "apply", Errored, TerraformApplyFailed)},
			[]OutcomeRecord{want("d1", "r1", OutcomeFailed, "D", "f", TerraformApplyFailed)}},
		{"interrupted", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), auth("a", "dev", "r1", "D"), failed("f", "dev", "r1", "apply", Errored, ApplyIndeterminate), indeterminate("i", "dev", "r1")},
			[]OutcomeRecord{want("d1", "r1", OutcomeIndeterminate, "D", "f", ApplyIndeterminate)}},
		{"nova died after authorizing", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), auth("a", "dev", "r1", "D")},
			[]OutcomeRecord{want("d1", "r1", OutcomeIndeterminate, "D", "a", ApplyIndeterminate)}},
		{"indeterminate recorded, then resolved as not applied", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), auth("a", "dev", "r1", "D"), indeterminate("i", "dev", "r1"), outcome("o", "dev", "d1", OutcomeIndeterminate), resolved("s", "dev", ResolvedNotApplied, "i")},
			[]OutcomeRecord{want("d1", "r1", OutcomeFailed, "D", "s", ApplyIndeterminate)}},
		{"resolved as applied", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), auth("a", "dev", "r1", "D"), indeterminate("i", "dev", "r1"), resolved("s", "dev", ResolvedApplied, "i")},
			[]OutcomeRecord{want("d1", "r1", OutcomeApplied, "D", "s", "")}},
		{"recorded once", []Event{decision("d1", "dev", "r1"), plan("p", "dev", "r1", "D"), auth("a", "dev", "r1", "D"), done("c", "dev", "r1"), outcome("o", "dev", "d1", OutcomeApplied)}, nil},
		{"the same plan again: each decision follows its own run's apply", []Event{
			decision("d1", "dev", "r1"), plan("p1", "dev", "r1", "D"), auth("a1", "dev", "r1", "D"), failed("f1", "dev", "r1", "apply", Errored, TerraformApplyFailed),
			decision("d2", "dev", "r2"), plan("p2", "dev", "r2", "D"), auth("a2", "dev", "r2", "D"), done("c2", "dev", "r2")},
			[]OutcomeRecord{want("d1", "r1", OutcomeFailed, "D", "f1", TerraformApplyFailed), want("d2", "r2", OutcomeApplied, "D", "c2", "")}},
		{"a final outcome is never replaced", []Event{decision("d1", "qa", "r1"), plan("p", "qa", "r1", "D"), rejected("x", "qa", "D"), outcome("o", "qa", "d1", OutcomeRejected), auth("a", "qa", "r2", "D"), done("c", "qa", "r2")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, DecisionOutcomes(tt.events)); diff != "" {
				t.Errorf("DecisionOutcomes (-want +got):\n%s", diff)
			}
		})
	}
}

// chainReader is an EvidenceReader over a fixed chain.
type chainReader struct{ events *[]Event }

func (c chainReader) Chain(context.Context, string) ([]Event, error) { return *c.events, nil }

// appendRecorder records into the same slice chainReader reads, so a
// second backfill sees the first one's events.
type appendRecorder struct{ events *[]Event }

func (a appendRecorder) Record(_ context.Context, e Event) error {
	*a.events = append(*a.events, e)
	return nil
}

func TestRecordDecisionOutcomesIsIdempotent(t *testing.T) {
	events := []Event{
		event(t, "d1", EventDecisionMade, "dev", "r1", "", map[string]string{"decisionId": "x"}),
		event(t, "p", EventPlanCreated, "dev", "r1", "plan", PlanRecord{Digest: "D"}),
		event(t, "a", EventApplyAuthorized, "dev", "r1", "gate", Authorization{Digest: "D"}),
		event(t, "c", EventApplyCompleted, "dev", "r1", "apply", map[string]any{"applied": true}),
	}
	em := NewEmitter(appendRecorder{&events}, "urn:test", "r-end", nil)
	for i, want := range []int{1, 0} {
		n, err := RecordDecisionOutcomes(t.Context(), chainReader{&events}, em, "c-1")
		if err != nil || n != want {
			t.Fatalf("backfill %d: recorded %d (%v), want %d", i+1, n, err, want)
		}
	}
	last := events[len(events)-1]
	var o OutcomeRecord
	if err := json.Unmarshal(last.Data, &o); err != nil || last.Type != EventDecisionOutcome || last.Environment != "dev" || o.Outcome != OutcomeApplied {
		t.Errorf("recorded %s in %q: %+v (%v)", last.Type, last.Environment, o, err)
	}
}
