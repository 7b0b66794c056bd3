package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
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
		{"another run's apply of the plan between a decision and its run's plan", []Event{decision("d1", "qa", "r1"), auth("a0", "qa", "r0", "D"), done("c0", "qa", "r0"), plan("p", "qa", "r1", "D")},
			[]OutcomeRecord{want("d1", "r1", OutcomeApplied, "D", "c0", "")}},
		{"a second plan in the run is followed from the decision on", []Event{decision("d1", "qa", "r1"), plan("p1", "qa", "r1", "D"), rejected("x", "qa", "E"), plan("p2", "qa", "r1", "E")},
			[]OutcomeRecord{want("d1", "r1", OutcomeRejected, "E", "x", ApprovalRejected)}},
		{"a final outcome is never replaced", []Event{decision("d1", "qa", "r1"), plan("p", "qa", "r1", "D"), rejected("x", "qa", "D"), outcome("o", "qa", "d1", OutcomeRejected), auth("a", "qa", "r2", "D"), done("c", "qa", "r2")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, DecisionOutcomes(tt.events)); diff != "" {
				t.Errorf("DecisionOutcomes (-want +got):\n%s", diff)
			}
			checkLedgerParity(t, tt.events, 1)
		})
	}
}

// checkLedgerParity checks, for every prefix of events and every split of
// it: folding the first part, keeping the summary (and a clone of it, and
// a copy through JSON, as a store keeps it) and folding the rest gives the
// outcomes DecisionOutcomes finds in the whole prefix, in the decisions'
// environments. A long chain is split every splits events only (and just
// before its end).
func checkLedgerParity(t *testing.T, events []Event, splits int) {
	t.Helper()
	for k := range len(events) + 1 {
		chain := events[:k]
		want := DecisionOutcomes(chain)
		for j := range k + 1 {
			if j%splits != 0 && j < k-1 {
				continue
			}
			kept := SummarizeGate(chain[:j])
			raw, err := json.Marshal(kept)
			if err != nil {
				t.Fatal(err)
			}
			stored := &GateSummary{}
			if err := json.Unmarshal(raw, stored); err != nil {
				t.Fatal(err)
			}
			for name, sum := range map[string]*GateSummary{"kept": kept, "clone": kept.Clone(), "stored": stored} {
				for _, e := range chain[j:] {
					sum.Fold(e)
				}
				got, envOf := sum.DecisionOutcomes()
				if diff := cmp.Diff(want, got); diff != "" {
					t.Fatalf("events[:%d], %s summary of %d events then the rest (-chain +summary):\n%s", k, name, j, diff)
				}
				for _, o := range got {
					if i := slices.IndexFunc(chain, func(e Event) bool { return e.ID == o.Decision }); envOf[o.Decision] != Environment(chain[i].Environment) {
						t.Fatalf("events[:%d]: decision %s in %q, the summary says %q", k, o.Decision, chain[i].Environment, envOf[o.Decision])
					}
				}
			}
		}
	}
}

// novaRuns is a contract's chain as Nova writes it, run after run: the
// outcomes of earlier runs recorded at the end of each (as
// RecordDecisionOutcomes does), plans left awaiting approval, approved
// later, rejected, failed, interrupted and resolved, the same plan planned
// again, in four environments — more runs than a LedgerSummary keeps the
// facts of.
func novaRuns(t *testing.T, runs int) []Event {
	var events []Event
	n := 0
	add := func(typ, env, run, stage string, data any) {
		n++
		events = append(events, event(t, fmt.Sprintf("e%03d", n), typ, env, run, stage, data))
	}
	fail := func(env, run, stage string, v Verdict, reason Reason) {
		n++
		raw, _ := json.Marshal(StageEventData{Stage: stage, Verdict: v, Findings: []Finding{{Reason: reason}}})
		events = append(events, Event{ID: fmt.Sprintf("e%03d", n), Type: EventRunFailed, Environment: env, RunID: run, Data: raw})
	}
	record := func() {
		for _, o := range DecisionOutcomes(events) {
			env := events[slices.IndexFunc(events, func(e Event) bool { return e.ID == o.Decision })].Environment
			add(EventDecisionOutcome, env, "r-end", "", o)
		}
	}
	envs := []string{"dev", "qa", "prod", "dr"}
	waiting := map[string]string{}
	for k := range runs {
		env, run := envs[k%4], fmt.Sprintf("r%02d", k)
		digest := fmt.Sprintf("D%d", k%7)
		add(EventDecisionMade, env, run, "", map[string]any{"decisionId": "pre-" + run})
		switch k % 9 {
		case 4:
			fail(env, run, "policy", Fail, PolicyCriticalFail)
			record()
			continue
		case 6:
			// An evaluation that stops before planning.
			continue
		}
		add(EventPlanCreated, env, run, "plan", PlanRecord{Digest: digest})
		add(EventDecisionMade, env, run, "", map[string]any{"decisionId": "post-" + run})
		if env != "dev" && k%5 == 2 {
			// Awaiting approval; a later run of another plan approves it.
			add(EventApprovalRequested, env, run, "gate", RequestRecord{Environment: Environment(env), PlanDigest: digest})
			waiting[env] = digest
			record()
			continue
		}
		if env != "dev" && k%11 == 3 {
			add(EventApprovalRejected, env, "r-approve", "", ApprovalRecord{Environment: Environment(env), PlanDigest: digest, Approver: "qa-lead"})
			record()
			continue
		}
		if w, ok := waiting[env]; ok && k%3 == 0 {
			digest = w
			delete(waiting, env)
		}
		add(EventApplyAuthorized, env, run, "gate", Authorization{Digest: digest})
		switch k % 8 {
		case 5:
			fail(env, run, "apply", Errored, TerraformApplyFailed)
		case 7:
			fail(env, run, "apply", Errored, ApplyIndeterminate)
			add(EventApplyIndeterminate, env, run, "", map[string]string{"cause": "killed"})
			record()
			outcome := ResolvedApplied
			if k%16 == 15 {
				outcome = ResolvedNotApplied
			}
			add(EventApplyResolved, env, "r-ops", "", Resolution{Outcome: outcome})
		default:
			add(EventApplyCompleted, env, run, "apply", map[string]any{"applied": true})
		}
		record()
	}
	return events
}

func TestDecisionOutcomesParityOverManyRuns(t *testing.T) {
	events := novaRuns(t, 3*ledgerRuns)
	if runs := len(slices.CompactFunc(slices.Clone(events), func(a, b Event) bool { return a.RunID == b.RunID })); runs <= ledgerRuns {
		t.Fatalf("the chain has %d runs, no more than the summary keeps", runs)
	}
	// Between a run's end and its outcomes' recording, the prefixes have
	// outcomes to compare, of every kind.
	kinds := map[DecisionOutcome]bool{}
	for k := range events {
		for _, o := range DecisionOutcomes(events[:k]) {
			kinds[o.Outcome] = true
		}
	}
	if len(kinds) != 4 {
		t.Fatalf("the prefixes' outcomes are only %v", kinds)
	}
	checkLedgerParity(t, events, 20)
	// What the summary keeps does not grow with the runs: the facts of a
	// window of them, and the decisions still open.
	sum := SummarizeGate(events)
	if len(sum.Ledger.Runs) > ledgerRuns || len(sum.Ledger.Decisions) > 2*ledgerRuns {
		t.Errorf("the summary keeps %d runs and %d decisions", len(sum.Ledger.Runs), len(sum.Ledger.Decisions))
	}
}

// TestLedgerSummaryWindow: a run that writes again after ledgerRuns other
// runs did is taken to be over by the summary — the one place it may
// differ from DecisionOutcomes over the whole chain, which Nova never
// writes.
func TestLedgerSummaryWindow(t *testing.T) {
	events := []Event{event(t, "d", EventDecisionMade, "dev", "r-slow", "", map[string]any{"decisionId": "x"})}
	for i := range ledgerRuns {
		events = append(events, event(t, fmt.Sprintf("o%d", i), EventApprovalChecked, "dev", fmt.Sprintf("r%d", i), "", map[string]any{}))
	}
	events = append(events,
		event(t, "p", EventPlanCreated, "dev", "r-slow", "plan", PlanRecord{Digest: "D"}),
		event(t, "a", EventApplyAuthorized, "dev", "r-slow", "gate", Authorization{Digest: "D"}),
		event(t, "c", EventApplyCompleted, "dev", "r-slow", "apply", map[string]any{}))
	if len(DecisionOutcomes(events)) != 1 {
		t.Fatal("the chain's rules see no outcome")
	}
	if got, _ := SummarizeGate(events).DecisionOutcomes(); len(got) != 0 {
		t.Errorf("the summary settled a decision of a run it took to be over: %+v", got)
	}
	// One run fewer in between, and the summary follows it.
	short := slices.Delete(slices.Clone(events), 1, 2)
	if diff := cmp.Diff(DecisionOutcomes(short), must(SummarizeGate(short).DecisionOutcomes())); diff != "" {
		t.Errorf("within the window (-chain +summary):\n%s", diff)
	}
}

func must[T, U any](v T, _ U) T { return v }

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
