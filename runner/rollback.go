package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// A rollback returns an environment to a change it applied before: the
// contract, stack and modules as they were at a commit that planned that
// change, planned afresh against what runs now and put through the gate
// like any plan. Nothing of the earlier run is reused but its source: its
// approvals were of another plan, against other state.

// RollbackRecord is the data of nova.rollback.requested: the change an
// environment returns to, and the change it supersedes.
type RollbackRecord struct {
	Environment Environment `json:"environment"`
	// Target is the change returned to; TargetApply the event that
	// applied it in Environment, which makes it a change the environment
	// ran.
	Target      string `json:"target"`
	TargetApply string `json:"targetApply"`
	// Commit is the consumer commit whose contract and stack are planned:
	// one a plan of Target was made from.
	Commit string `json:"commit"`
	// Supersedes is the change the environment runs now, and
	// SupersedesApply the event that applied it (empty when nothing
	// completed there since the target).
	Supersedes      string `json:"supersedes,omitempty"`
	SupersedesApply string `json:"supersedesApply,omitempty"`
	// RequestedBy asked for the rollback; like a change's author, they
	// may not approve it.
	RequestedBy string `json:"requestedBy"`
}

// RollbackRef is what an authorization says of a rollback.
type RollbackRef struct {
	Target     string `json:"target"`
	Supersedes string `json:"supersedes,omitempty"`
}

// Ref is the authorization's reference to r; nil for a run that rolls
// nothing back.
func (r *RollbackRecord) Ref() *RollbackRef {
	if r == nil {
		return nil
	}
	return &RollbackRef{Target: r.Target, Supersedes: r.Supersedes}
}

// minChangePrefix is the shortest prefix of a change id `--to` accepts: a
// shorter one would match by accident as a contract's history grows.
const minChangePrefix = 7

// FindRollbackTarget reads a contract's chain for the change whose id is
// or starts with to, and what env runs now. It refuses a change the chain
// never names (ROLLBACK_TARGET_UNKNOWN), a prefix several changes share
// (ROLLBACK_TARGET_AMBIGUOUS), a change env never applied
// (ROLLBACK_TARGET_NOT_APPLIED) and one no plan names a commit for
// (ROLLBACK_SOURCE_MISSING).
func FindRollbackTarget(events []Event, env Environment, to string) (RollbackRecord, error) {
	to = strings.ToLower(strings.TrimSpace(to))
	if len(to) < minChangePrefix || strings.Trim(to, "0123456789abcdef") != "" {
		return RollbackRecord{}, Errorf(ConfigInvalid, "--to %q: want a change id, or %d or more of its first hex digits (`nova evidence query --type nova.change.identified --output jsonl` lists them, and each run's change line names its own)", to, minChangePrefix)
	}
	// Every change the chain names, with the commits its plans were made
	// from: env's own plans last, so they are preferred.
	commits := map[string][]string{}
	var known []string
	see := func(id string) {
		if id != "" && !slices.Contains(known, id) {
			known = append(known, id)
		}
	}
	for _, e := range events {
		switch e.Type {
		case EventChangeIdentified:
			var c ChangeRecord
			if DecodeEventData(e, &c) == nil {
				see(c.ID)
			}
		case EventPlanCreated:
			var p PlanRecord
			if DecodeEventData(e, &p) != nil || p.Change == "" {
				continue
			}
			see(p.Change)
			if p.Commit == "" {
				continue
			}
			if Environment(e.Environment) == env {
				commits[p.Change] = append(commits[p.Change], p.Commit)
			} else {
				commits[p.Change] = append([]string{p.Commit}, commits[p.Change]...)
			}
		}
	}
	var matches []string
	for _, id := range known {
		if strings.HasPrefix(id, to) {
			matches = append(matches, id)
		}
	}
	switch len(matches) {
	case 0:
		return RollbackRecord{}, Errorf(RollbackTargetUnknown, "no change of this contract starts with %s: the evidence names no such change", to)
	case 1:
	default:
		short := make([]string, len(matches))
		for i, m := range matches {
			short[i] = ShortDigest(m)
		}
		return RollbackRecord{}, Errorf(RollbackTargetAmbiguous, "%s starts %d changes (%s): give more of the id", to, len(matches), strings.Join(short, ", "))
	}
	target := matches[0]
	es := SummarizeGate(events).Env(env)
	applied := es.Applied[target]
	if applied == "" {
		return RollbackRecord{}, Errorf(RollbackTargetNotApplied, "change %s was never applied in %s: a rollback returns an environment to a change it ran, and %s ran %s", ShortDigest(target), env, env, appliedList(es))
	}
	cs := commits[target]
	if len(cs) == 0 {
		return RollbackRecord{}, Errorf(RollbackSourceMissing, "no plan of change %s names the commit it was made from, so its contract cannot be read back", ShortDigest(target))
	}
	rec := RollbackRecord{Environment: env, Target: target, TargetApply: applied, Commit: cs[len(cs)-1]}
	if last := es.LastApplied; last != nil {
		rec.Supersedes, rec.SupersedesApply = last.Change, last.Event
	}
	return rec, nil
}

func appliedList(es *EnvGateSummary) string {
	if len(es.Applied) == 0 {
		return "nothing yet"
	}
	var ids []string
	for id := range es.Applied {
		ids = append(ids, ShortDigest(id))
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// RollbackCheck is the stage after the change is identified in a
// rollback's run: the contract read back from the target's commit must
// still be that change. A registry whose stack or modules changed since,
// or another engine version, would deploy something the environment
// never ran under the target's name.
type RollbackCheck struct {
	Record RollbackRecord
}

var _ Stage = (*RollbackCheck)(nil)

// Name implements Stage.
func (*RollbackCheck) Name() string { return "rollback" }

// Run implements Stage.
func (s *RollbackCheck) Run(_ context.Context, st *State) (Result, error) {
	if st.Change == nil || st.Contract == nil {
		return Result{}, Errorf(InternalError, "rollback reached without an identified change")
	}
	r := s.Record
	if st.Change.ID != r.Target {
		msg := fmt.Sprintf("the contract at commit %s is change %s today, not %s: the stack, a module or the engine version differs from what %s ran (content %v, %s)",
			ShortDigest(r.Commit), ShortDigest(st.Change.ID), ShortDigest(r.Target), r.Environment, st.Change.Content, st.Change.Engine)
		return Result{Verdict: Fail, Summary: msg, Findings: []Finding{{Reason: RollbackTargetChanged, Message: msg}}}, nil
	}
	st.Rollback = &r
	summary := fmt.Sprintf("%s returns to change %s (applied by %s)", r.Environment, ShortDigest(r.Target), r.TargetApply)
	if r.Supersedes != "" {
		summary += fmt.Sprintf(", superseding change %s", ShortDigest(r.Supersedes))
	}
	return Result{Verdict: Pass, Summary: summary, Event: EventRollbackRequested, Data: r}, nil
}

// RollbackRequester is who asked for the rollback whose run planned
// digest in env, when a run of the chain rolled back to it: they may not
// approve it, as an author may not approve their change.
func RollbackRequester(events []Event, env Environment, digest string) string {
	requested := map[string]string{}
	for _, e := range events {
		if Environment(e.Environment) != env {
			continue
		}
		switch e.Type {
		case EventRollbackRequested:
			var r RollbackRecord
			if DecodeEventData(e, &r) == nil {
				requested[e.RunID] = r.RequestedBy
			}
		case EventPlanCreated:
			var p PlanRecord
			if DecodeEventData(e, &p) == nil && p.Digest == digest && requested[e.RunID] != "" {
				return requested[e.RunID]
			}
		}
	}
	return ""
}
