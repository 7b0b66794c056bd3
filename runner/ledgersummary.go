package runner

import (
	"encoding/json"
	"slices"
)

// ledgerRuns is how many of the most recent runs a LedgerSummary keeps the
// facts of. A run's events are written by one process in a few minutes,
// so a decision never comes more than a few runs after its run's plan or
// failure; a run that dropped out of the window is taken to be over, which
// is what keeps the summary from growing with every run.
const ledgerRuns = 16

// LedgerSummary is what DecisionOutcomes reads of a chain, folded event by
// event as part of a GateSummary: the decisions whose final outcome is not
// recorded yet, each with its run's facts and how far the following of its
// plan has come, and the facts of the most recent runs. It gives the same
// outcomes as DecisionOutcomes over the whole chain written by Nova — a
// chain where no run writes events after ledgerRuns other runs did, and an
// outcome is recorded for a decision already in the chain and never
// replaces a final one (RecordDecisionOutcomes never does).
type LedgerSummary struct {
	// Runs are the facts of the most recent runs, the most recent last.
	Runs []LedgerRun `json:",omitempty"`
	// Decisions are the decisions without a recorded final outcome, in
	// chain order.
	Decisions []LedgerDecision `json:",omitempty"`
}

// LedgerRun is one run's runFacts.
type LedgerRun struct {
	ID    string
	Facts RunFacts
}

// RunFacts is runFacts as a summary keeps it.
type RunFacts struct {
	Digest        string  `json:",omitempty"`
	Failed        string  `json:",omitempty"`
	FailedStage   string  `json:",omitempty"`
	FailedVerdict Verdict `json:",omitempty"`
	FailedReason  Reason  `json:",omitempty"`
}

// LedgerDecision is a nova.ai.decision.made whose final outcome is not
// recorded.
type LedgerDecision struct {
	ID         string
	DecisionID string `json:",omitempty"`
	Run        string
	Env        Environment
	// Seen says an outcome is recorded for it, Recorded the last one.
	Seen     bool            `json:",omitempty"`
	Recorded DecisionOutcome `json:",omitempty"`
	// Facts are its run's; Live says the run is in the window, and while
	// it is, Steps are the events of Env since the decision, from which
	// Scan is rebuilt when a later plan of the run names another digest.
	Facts RunFacts
	Live  bool         `json:",omitempty"`
	Steps []LedgerStep `json:",omitempty"`
	Scan  PlanScan
}

// LedgerStep is what planOutcome and applyOutcome read of one event.
type LedgerStep struct {
	ID   string
	Type string
	Run  string
	// Readable says its data was read: Digest is a rejection's or an
	// authorization's plan digest, Applied a resolution's outcome.
	Readable bool   `json:",omitempty"`
	Digest   string `json:",omitempty"`
	Applied  bool   `json:",omitempty"`
	// Unknown and Reason are a nova.run.failed's failedUnknown and first
	// finding's reason.
	Unknown bool   `json:",omitempty"`
	Reason  Reason `json:",omitempty"`
}

// PlanScan is planOutcome's (then applyOutcome's) progress along the
// events after a decision, for plan Digest.
type PlanScan struct {
	Digest string `json:",omitempty"`
	// Auth and AuthRun are the authorization of Digest found, Open the
	// event that left its apply unknown.
	Auth    string `json:",omitempty"`
	AuthRun string `json:",omitempty"`
	Open    string `json:",omitempty"`
	// Final is the outcome once it can no longer change.
	Final *OutcomeRecord `json:",omitempty"`
}

// ledgerStep reads e as planOutcome and applyOutcome do, or reports that
// they skip it whatever it holds.
func ledgerStep(e Event) (LedgerStep, bool) {
	st := LedgerStep{ID: e.ID, Type: e.Type, Run: e.RunID}
	switch e.Type {
	case EventApprovalRejected:
		var a ApprovalRecord
		st.Readable = DecodeEventData(e, &a) == nil
		st.Digest = a.PlanDigest
	case EventApplyAuthorized:
		var a Authorization
		st.Readable = DecodeEventData(e, &a) == nil
		st.Digest = a.Digest
	case EventApplyResolved:
		var r Resolution
		st.Readable = DecodeEventData(e, &r) == nil
		st.Applied = r.Outcome == ResolvedApplied
	case EventRunFailed:
		st.Unknown = failedUnknown(e)
		var d StageEventData
		_ = json.Unmarshal(e.Data, &d)
		if len(d.Findings) > 0 {
			st.Reason = d.Findings[0].Reason
		}
	case EventApplyCompleted, EventApplyIndeterminate:
	default:
		return LedgerStep{}, false
	}
	return st, true
}

// step advances the scan over the next event of its environment.
func (p *PlanScan) step(st LedgerStep) {
	switch {
	case p.Final != nil:
	case p.Auth == "":
		if !st.Readable || st.Digest != p.Digest {
			return
		}
		switch st.Type {
		case EventApprovalRejected:
			p.Final = &OutcomeRecord{Outcome: OutcomeRejected, PlanDigest: p.Digest, SettledBy: st.ID, Reason: ApprovalRejected}
		case EventApplyAuthorized:
			p.Auth, p.AuthRun = st.ID, st.Run
		}
	case p.Open == "" && st.Run == p.AuthRun && st.Type == EventApplyCompleted:
		p.Final = &OutcomeRecord{Outcome: OutcomeApplied, PlanDigest: p.Digest, SettledBy: st.ID}
	case p.Open == "" && st.Run == p.AuthRun && st.Type == EventApplyIndeterminate:
		p.Open = st.ID
	case p.Open == "" && st.Run == p.AuthRun && st.Type == EventRunFailed:
		if st.Unknown {
			p.Open = st.ID
			return
		}
		p.Final = &OutcomeRecord{Outcome: OutcomeFailed, PlanDigest: p.Digest, SettledBy: st.ID, Reason: st.Reason}
	case st.Type == EventApplyResolved:
		if !st.Readable {
			return
		}
		p.Final = &OutcomeRecord{Outcome: OutcomeFailed, PlanDigest: p.Digest, SettledBy: st.ID, Reason: ApplyIndeterminate}
		if st.Applied {
			p.Final = &OutcomeRecord{Outcome: OutcomeApplied, PlanDigest: p.Digest, SettledBy: st.ID}
		}
	case st.Type == EventApplyAuthorized && p.Open == "":
		p.Final = &OutcomeRecord{Outcome: OutcomeIndeterminate, PlanDigest: p.Digest, SettledBy: p.Auth, Reason: ApplyIndeterminate}
	}
}

// outcome is the scan's outcome so far: none until the plan is rejected or
// authorized, then indeterminate until its apply's end is known.
func (p *PlanScan) outcome() (OutcomeRecord, bool) {
	switch {
	case p.Final != nil:
		return *p.Final, true
	case p.Auth == "":
		return OutcomeRecord{}, false
	}
	settled := p.Auth
	if p.Open != "" {
		settled = p.Open
	}
	return OutcomeRecord{Outcome: OutcomeIndeterminate, PlanDigest: p.Digest, SettledBy: settled, Reason: ApplyIndeterminate}, true
}

// run returns the index of run id's facts, made and made the most recent
// when missing; a run pushed out of the window leaves its decisions with
// the facts they have.
func (l *LedgerSummary) run(id string) int {
	if i := slices.IndexFunc(l.Runs, func(r LedgerRun) bool { return r.ID == id }); i >= 0 {
		return i
	}
	l.Runs = append(l.Runs, LedgerRun{ID: id})
	if len(l.Runs) <= ledgerRuns {
		return len(l.Runs) - 1
	}
	gone := l.Runs[0].ID
	l.Runs = slices.Delete(l.Runs, 0, 1)
	for i := range l.Decisions {
		if d := &l.Decisions[i]; d.Run == gone {
			d.Live, d.Steps = false, nil
		}
	}
	// A decision whose run is over without a plan, or a failure before
	// its plan cleared, never gets an outcome.
	l.Decisions = slices.DeleteFunc(l.Decisions, func(d LedgerDecision) bool {
		return d.Run == gone && d.Facts.Digest == "" && !stagesBeforeGate[d.Facts.FailedStage]
	})
	if len(l.Decisions) == 0 {
		l.Decisions = nil
	}
	return len(l.Runs) - 1
}

// touch makes run id the most recent.
func (l *LedgerSummary) touch(id string) int {
	i := l.run(id)
	if i != len(l.Runs)-1 {
		r := l.Runs[i]
		l.Runs = append(slices.Delete(l.Runs, i, i+1), r)
	}
	return len(l.Runs) - 1
}

// fold adds the next event of the chain, read as DecisionOutcomes reads
// it.
func (l *LedgerSummary) fold(e Event) {
	r := &l.Runs[l.touch(e.RunID)]
	facts := r.Facts
	switch e.Type {
	case EventDecisionMade:
		var dec struct {
			DecisionID string `json:"decisionId"`
		}
		_ = json.Unmarshal(e.Data, &dec)
		l.Decisions = append(l.Decisions, LedgerDecision{ID: e.ID, DecisionID: dec.DecisionID, Run: e.RunID, Env: Environment(e.Environment),
			Facts: r.Facts, Live: true, Scan: PlanScan{Digest: r.Facts.Digest}})
		return
	case EventDecisionOutcome:
		var o OutcomeRecord
		if json.Unmarshal(e.Data, &o) != nil || o.Decision == "" {
			break
		}
		if i := slices.IndexFunc(l.Decisions, func(d LedgerDecision) bool { return d.ID == o.Decision }); i >= 0 {
			l.Decisions[i].Seen, l.Decisions[i].Recorded = true, o.Outcome
			if o.Outcome != OutcomeIndeterminate {
				// Final: DecisionOutcomes never reports it again.
				l.Decisions = slices.Delete(l.Decisions, i, i+1)
				if len(l.Decisions) == 0 {
					l.Decisions = nil
				}
			}
		}
	case EventPlanCreated:
		var p PlanRecord
		if DecodeEventData(e, &p) == nil && p.Digest != "" {
			r.Facts.Digest = p.Digest
		}
	case EventRunFailed:
		var d StageEventData
		if json.Unmarshal(e.Data, &d) == nil {
			r.Facts.Failed, r.Facts.FailedStage, r.Facts.FailedVerdict = e.ID, d.Stage, d.Verdict
			if len(d.Findings) > 0 {
				r.Facts.FailedReason = d.Findings[0].Reason
			}
		}
	}
	if r.Facts != facts {
		for i := range l.Decisions {
			d := &l.Decisions[i]
			if d.Run != e.RunID {
				continue
			}
			d.Facts = r.Facts
			if d.Scan.Digest != r.Facts.Digest {
				// Another plan of the run: its decisions follow it from
				// where they were made.
				d.Scan = PlanScan{Digest: r.Facts.Digest}
				for _, st := range d.Steps {
					d.Scan.step(st)
				}
			}
		}
	}
	st, ok := ledgerStep(e)
	if !ok {
		return
	}
	for i := range l.Decisions {
		d := &l.Decisions[i]
		if string(d.Env) != e.Environment {
			continue
		}
		if d.Live {
			d.Steps = append(d.Steps, st)
		}
		if d.Scan.Digest != "" {
			d.Scan.step(st)
		}
	}
}

// outcomes is DecisionOutcomes of the folded chain.
func (l *LedgerSummary) outcomes() []OutcomeRecord {
	var out []OutcomeRecord
	for _, d := range l.Decisions {
		var o OutcomeRecord
		var ok bool
		switch {
		case d.Facts.Failed != "" && stagesBeforeGate[d.Facts.FailedStage]:
			o, ok = OutcomeRecord{Outcome: OutcomeRejected, SettledBy: d.Facts.Failed, Reason: d.Facts.FailedReason, PlanDigest: d.Facts.Digest}, true
			if d.Facts.FailedVerdict != Fail {
				o.Outcome = OutcomeFailed
			}
		case d.Facts.Digest != "":
			o, ok = d.Scan.outcome()
		}
		if !ok || d.Seen && (d.Recorded == o.Outcome || d.Recorded != OutcomeIndeterminate) {
			continue
		}
		o.Decision, o.DecisionID, o.Run = d.ID, d.DecisionID, d.Run
		out = append(out, o)
	}
	return out
}

// clone returns a copy that folding does not share with l.
func (l LedgerSummary) clone() LedgerSummary {
	c := LedgerSummary{Runs: slices.Clone(l.Runs), Decisions: slices.Clone(l.Decisions)}
	for i := range c.Decisions {
		c.Decisions[i].Steps = slices.Clip(c.Decisions[i].Steps)
	}
	return c
}
