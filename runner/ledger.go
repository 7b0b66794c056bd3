package runner

import (
	"context"
	"encoding/json"
)

// EventDecisionOutcome records what became of an automated decision
// (nova.ai.decision.made): the ledger that answers "how often was the
// confidence signal right?". It is its own type, beside the controlled
// vocabulary in event.go, because it is written after the fact by whoever
// learns the outcome, never by the stage that decided.
const EventDecisionOutcome = "nova.decision.outcome"

// DecisionOutcome is what became of the change a decision was about.
type DecisionOutcome string

const (
	// OutcomeApplied: the plan the decision cleared was applied (or an
	// operator established that its interrupted apply had gone through).
	OutcomeApplied DecisionOutcome = "applied"
	// OutcomeRejected: the change was found wanting before it was applied
	// — by policy, by the confidence signal itself, or by a human.
	OutcomeRejected DecisionOutcome = "rejected"
	// OutcomeFailed: the change broke on its way — terraform reported a
	// failed apply, Nova could not evaluate it, or an interrupted apply was
	// established not to have gone through.
	OutcomeFailed DecisionOutcome = "failed"
	// OutcomeIndeterminate: the apply's end is unknown until an operator
	// resolves it; a later outcome event replaces it then.
	OutcomeIndeterminate DecisionOutcome = "indeterminate"
)

// OutcomeRecord is the data of a nova.decision.outcome event.
type OutcomeRecord struct {
	// Decision is the id of the nova.ai.decision.made event; DecisionID the
	// decision's own id inside it, and Run the run that made it.
	Decision   string          `json:"decision"`
	DecisionID string          `json:"decisionId,omitempty"`
	Run        string          `json:"run"`
	Outcome    DecisionOutcome `json:"outcome"`
	PlanDigest string          `json:"planDigest,omitempty"`
	// SettledBy is the id of the event the outcome is read from: an
	// nova.apply.completed, nova.run.failed, nova.approval.rejected,
	// nova.apply.indeterminate or nova.apply.resolved.
	SettledBy string `json:"settledBy"`
	Reason    Reason `json:"reason,omitempty"`
}

// stagesBeforeGate are the stages whose failure ends a change for good: its
// plan never cleared evaluation, so nothing can apply it later. A failure
// at the approvals stage or the gate is not final (another approval, a
// resolution, and `nova apply` goes on).
var stagesBeforeGate = map[string]bool{
	"setup": true, "schema": true, "policy": true, "nfr": true, "confidence": true,
	"plan": true, "plan-policy": true, "plan-confidence": true,
}

// DecisionOutcomes returns the outcomes one contract's chain shows for its
// decisions but does not record yet, in the order of the decisions: the
// rule over a whole chain, which LedgerSummary folds event by event and
// its parity tests hold it to. It is derived from the chain alone, so
// whoever runs it — the end of any run, a rejection, a resolution —
// records the same facts, a run that died before
// recording them leaves them to the next, and running it twice records
// nothing new. A decision gets at most one final outcome; an indeterminate
// one is followed by the final one once the apply is resolved.
//
// The rule, for a decision made in run R in environment E:
//
//   - R stopped before its plan cleared (a stage up to plan-confidence
//     failed): rejected when the stage reached a verdict, failed when it
//     could not evaluate;
//   - otherwise R's plan digest D is followed through E: a rejection of D
//     is rejected; an authorization of D is followed in its own run to
//     nova.apply.completed (applied), a failed apply (failed) or an unknown
//     end — nova.apply.indeterminate, a failure with APPLY_INDETERMINATE, or
//     no outcome at all — (indeterminate), and a nova.apply.resolved of
//     that apply settles it as applied or failed;
//   - anything else (awaiting approval, refused, an evaluation with no
//     plan) has no outcome yet.
func DecisionOutcomes(events []Event) []OutcomeRecord {
	recorded := map[string]DecisionOutcome{}
	runs := map[string]*runFacts{}
	run := func(id string) *runFacts {
		r, ok := runs[id]
		if !ok {
			r = &runFacts{}
			runs[id] = r
		}
		return r
	}
	var decisions []int
	for i := range events {
		e := &events[i]
		switch e.Type {
		case EventDecisionMade:
			decisions = append(decisions, i)
		case EventDecisionOutcome:
			var o OutcomeRecord
			if json.Unmarshal(e.Data, &o) == nil && o.Decision != "" {
				recorded[o.Decision] = o.Outcome
			}
		case EventPlanCreated:
			var p PlanRecord
			if DecodeEventData(*e, &p) == nil && p.Digest != "" {
				run(e.RunID).digest = p.Digest
			}
		case EventRunFailed:
			var d StageEventData
			if json.Unmarshal(e.Data, &d) == nil {
				r := run(e.RunID)
				r.failed, r.failedStage, r.failedVerdict = e, d.Stage, d.Verdict
				if len(d.Findings) > 0 {
					r.failedReason = d.Findings[0].Reason
				}
			}
		}
	}
	var out []OutcomeRecord
	for _, i := range decisions {
		d := &events[i]
		r := run(d.RunID)
		o, ok := decisionOutcome(events[i+1:], d, r)
		if !ok {
			continue
		}
		prev, seen := recorded[d.ID]
		if seen && (prev == o.Outcome || prev != OutcomeIndeterminate) {
			continue
		}
		var dec struct {
			DecisionID string `json:"decisionId"`
		}
		_ = json.Unmarshal(d.Data, &dec)
		o.Decision, o.DecisionID, o.Run = d.ID, dec.DecisionID, d.RunID
		out = append(out, o)
	}
	return out
}

// runFacts is what one run recorded that decides its decisions' outcome.
type runFacts struct {
	digest        string
	failed        *Event
	failedStage   string
	failedVerdict Verdict
	failedReason  Reason
}

// decisionOutcome reads the outcome of decision d, made in run r, from the
// events after it: the same plan may be planned again in a later run, and
// only an authorization that follows the decision is about its change.
func decisionOutcome(after []Event, d *Event, r *runFacts) (OutcomeRecord, bool) {
	if r.failed != nil && stagesBeforeGate[r.failedStage] {
		o := OutcomeRecord{Outcome: OutcomeRejected, SettledBy: r.failed.ID, Reason: r.failedReason, PlanDigest: r.digest}
		if r.failedVerdict != Fail {
			o.Outcome = OutcomeFailed
		}
		return o, true
	}
	if r.digest == "" {
		return OutcomeRecord{}, false
	}
	return planOutcome(after, Environment(d.Environment), r.digest)
}

// planOutcome follows plan digest through env: the first rejection or
// authorization of it settles what happened to it.
func planOutcome(events []Event, env Environment, digest string) (OutcomeRecord, bool) {
	for i, e := range events {
		if e.Environment != string(env) {
			continue
		}
		switch e.Type {
		case EventApprovalRejected:
			var a ApprovalRecord
			if DecodeEventData(e, &a) == nil && a.PlanDigest == digest {
				return OutcomeRecord{Outcome: OutcomeRejected, PlanDigest: digest, SettledBy: e.ID, Reason: ApprovalRejected}, true
			}
		case EventApplyAuthorized:
			var a Authorization
			if DecodeEventData(e, &a) == nil && a.Digest == digest {
				if o, ok := applyOutcome(events[i+1:], e); ok {
					o.PlanDigest = digest
					return o, true
				}
			}
		}
	}
	return OutcomeRecord{}, false
}

// applyOutcome reads what became of the apply auth authorized, from the
// events after it: its own run's outcome, then a resolution if that was
// unknown. An authorization a failure of its own run refused before
// terraform ran (a swapped plan file) is failed too: nothing was applied.
func applyOutcome(after []Event, auth Event) (OutcomeRecord, bool) {
	var open *Event
	for _, e := range after {
		if e.Environment != auth.Environment {
			continue
		}
		switch {
		case open == nil && e.RunID == auth.RunID && e.Type == EventApplyCompleted:
			return OutcomeRecord{Outcome: OutcomeApplied, SettledBy: e.ID}, true
		case open == nil && e.RunID == auth.RunID && e.Type == EventApplyIndeterminate:
			open = &e
		case open == nil && e.RunID == auth.RunID && e.Type == EventRunFailed:
			if failedUnknown(e) {
				open = &e
				continue
			}
			var d StageEventData
			_ = json.Unmarshal(e.Data, &d)
			o := OutcomeRecord{Outcome: OutcomeFailed, SettledBy: e.ID}
			if len(d.Findings) > 0 {
				o.Reason = d.Findings[0].Reason
			}
			return o, true
		case e.Type == EventApplyResolved:
			// A resolution settles whatever held the environment — this
			// apply, when nothing else came between (UnresolvedApply's
			// rule: only a resolution closes an open apply).
			var res Resolution
			if DecodeEventData(e, &res) != nil {
				continue
			}
			if res.Outcome == ResolvedApplied {
				return OutcomeRecord{Outcome: OutcomeApplied, SettledBy: e.ID}, true
			}
			return OutcomeRecord{Outcome: OutcomeFailed, SettledBy: e.ID, Reason: ApplyIndeterminate}, true
		case e.Type == EventApplyAuthorized:
			// A later authorization means the gate saw this one settled
			// (it refuses while one is open), so anything unresolved here
			// was settled by a resolution already read, or never opened.
			if open == nil {
				return OutcomeRecord{Outcome: OutcomeIndeterminate, SettledBy: auth.ID, Reason: ApplyIndeterminate}, true
			}
		}
	}
	settled := auth.ID
	if open != nil {
		settled = open.ID
	}
	return OutcomeRecord{Outcome: OutcomeIndeterminate, SettledBy: settled, Reason: ApplyIndeterminate}, true
}

// RecordDecisionOutcomes records through em the outcomes DecisionOutcomes
// finds in the contract's verified chain, and returns how many it
// recorded. Callers run it when a run, a rejection or a resolution ends;
// an error leaves the outcomes for the next caller, since they are derived
// from the chain. It reads them from the contract's gate summary, which
// folds them event by event, so that the end of every run does not cost
// more with every past event.
func RecordDecisionOutcomes(ctx context.Context, r EvidenceReader, em *Emitter, contractID string) (int, error) {
	sum, err := ReadGateSummary(ctx, r, contractID)
	if err != nil {
		return 0, err
	}
	outcomes, envOf := sum.DecisionOutcomes()
	for i, o := range outcomes {
		if _, err := em.Emit(ctx, EventDecisionOutcome, contractID, envOf[o.Decision], o); err != nil {
			return i, err
		}
	}
	return len(outcomes), nil
}
