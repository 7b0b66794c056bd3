package runner

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Timeouts of a pending approval request, in business time (Monday to
// Friday, UTC): after one business day the request is escalated, after two
// it freezes and only a re-submission naming it in `supersedes` goes on.
const (
	EscalateAfter = 24 * time.Hour
	FreezeAfter   = 48 * time.Hour
)

// RequestRecord is the data of a nova.approval.requested event.
type RequestRecord struct {
	Environment Environment `json:"environment"`
	PlanDigest  string      `json:"planDigest"`
	// Supersedes is the request a re-submission replaces (the contract's
	// `supersedes`); it closes that request's clock.
	Supersedes string `json:"supersedes,omitempty"`
}

// EscalationRecord is the data of a nova.approval.escalated event.
type EscalationRecord struct {
	Environment Environment `json:"environment"`
	PlanDigest  string      `json:"planDigest"`
	Request     string      `json:"request"`
	Since       time.Time   `json:"since"`
}

// RefusalRecord is the data of a nova.approval.refused event: approvals
// that exist but may not authorize (separation of duties).
type RefusalRecord struct {
	Environment Environment `json:"environment"`
	PlanDigest  string      `json:"planDigest"`
	Reason      Reason      `json:"reason"`
	// Approvers are the refused approvers; QAApprovals the qa approval
	// events that disqualify them.
	Approvers   []string `json:"approvers"`
	QAApprovals []string `json:"qaApprovals"`
	// Eligible names who may approve instead.
	Eligible []string `json:"eligible"`
}

// gateInput is what the gate decides on besides the chain.
type gateInput struct {
	Env        Environment
	Digest     string
	Supersedes string
	Now        time.Time
	Approvers  *ApproverConfig
	// Members says whether each approver of this plan is in its group
	// now (stillMembers); an approver it does not list is not.
	Members map[Login]bool
	// ApprovedAfter and NotBy narrow the approvals that count: only those
	// recorded after the chain's seq ApprovedAfter (the environment's
	// latest apply, so an approval of the same digest given before the
	// environment last changed is not reused), and none by NotBy (who
	// asked for a rollback).
	ApprovedAfter int64
	NotBy         Login
}

// gateDecision is the gate's verdict for a guarded environment.
type gateDecision struct {
	Verdict  Verdict
	Reason   Reason
	Message  string
	Approval *Approval
	// Approvals are every approval that counts, one per approver, when
	// more than one is needed (decideDestroy).
	Approvals []Approval
	// Request is the pending request's event id; Also the events the
	// decision implies (escalation, refusal).
	Request    RequestRecord
	Also       []EventSpec
	RecordWait bool
}

// decideGate applies the approval rules of a guarded environment to one
// contract's verified chain, as its summary holds it. It is pure, so every
// rule is table-tested:
//
//   - a rejection of this plan holds it: a new plan is needed;
//   - an approval of this plan by the environment's group authorizes it,
//     except that for prod and dr an approver who approved this contract
//     in qa may not (separation of duties: refused, and recorded);
//   - otherwise the request waits, escalates after one business day and
//     freezes after two, unless the contract supersedes the frozen request.
func decideGate(sum *GateSummary, in gateInput) (gateDecision, error) {
	if sum.ApprovalError != "" {
		return gateDecision{}, Errorf(EvidenceLayoutInvalid, "%s", sum.ApprovalError)
	}
	es := sum.Env(in.Env)
	// The chain is read in order: an unreadable rejection before this
	// plan's rejection (or without one) stops the gate.
	rej, rejected := es.Rejections[in.Digest]
	if bad := es.BadRejection; bad != nil && (!rejected || bad.At < rej.At) {
		return gateDecision{}, Errorf(EvidenceLayoutInvalid, "%s", bad.Err)
	}
	if rejected {
		return gateDecision{Verdict: Fail, Reason: ApprovalRejected,
			Message: fmt.Sprintf("%s rejected plan %s for %s (%s); the contract is held: plan again and ask for a new approval", rej.Record.Approver, ShortDigest(in.Digest), in.Env, orNone(rej.Record.Reason))}, nil
	}
	group := in.Approvers.GroupFor(in.Env)
	valid, left := countedApprovals(es, in, group)
	if len(valid) == 0 && len(left) > 0 {
		return leftGroup(waiting(es, in), left, in, group), nil
	}
	if len(valid) > 0 && (in.Env == Prod || in.Env == DR) {
		var refusal *gateDecision
		if valid, refusal = separateDuties(valid, sum.Env(QA).Approvers, in, group); refusal != nil {
			return refused(*refusal, waiting(es, in)), nil
		}
	}
	if len(valid) > 0 {
		return gateDecision{Verdict: Pass, Approval: &valid[0]}, nil
	}
	return waiting(es, in), nil
}

// countedApprovals splits the approvals of in.Digest by group into those
// that count and those whose approver has left the group since. A
// decision taken after the pending request froze does not count: the
// request must be re-submitted first.
func countedApprovals(es *EnvGateSummary, in gateInput, group string) (valid, left []Approval) {
	freezeAt := time.Time{}
	if start := es.Request; start != nil && !resubmits(es, in) {
		freezeAt = AddBusinessDuration(start.Time, FreezeAfter)
	}
	for _, a := range es.Approvals[in.Digest] {
		if a.Group != group || (!freezeAt.IsZero() && !a.decidedAt().Before(freezeAt)) {
			continue
		}
		if (in.ApprovedAfter > 0 && a.Seq <= in.ApprovedAfter) || (in.NotBy != "" && LoginOf(a.Approver) == in.NotBy) {
			continue
		}
		if !in.Members[LoginOf(a.Approver)] {
			left = append(left, a)
			continue
		}
		valid = append(valid, a)
	}
	return valid, left
}

// leftGroup says in wait d that the approvals left do not count: their
// approvers are no longer in group.
func leftGroup(d gateDecision, left []Approval, in gateInput, group string) gateDecision {
	names := make([]string, len(left))
	for i, a := range left {
		names[i] = a.Approver
	}
	d.Reason = ApproverLeftGroup
	d.Message = fmt.Sprintf("%s approved plan %s but is no longer in group %s: the approval no longer counts; %s", strings.Join(slices.Compact(slices.Sorted(slices.Values(names))), ", "), ShortDigest(in.Digest), group, d.Message)
	return d
}

// refused is a refusal of the only approvals there are: the refusal is
// recorded, and the plan goes on waiting for someone who may approve it.
// Nothing is wrong with the change, so the run does not fail: it waits,
// saying why the approvals given do not count.
func refused(refusal, wait gateDecision) gateDecision {
	if wait.Verdict != AwaitingApproval {
		return wait
	}
	wait.Reason = refusal.Reason
	wait.Message = refusal.Message + "; " + wait.Message
	wait.Also = append(refusal.Also, wait.Also...)
	return wait
}

// separateDuties keeps the approvals of valid whose approver did not
// approve the contract in qa (qaApprovers: approver → their qa approval
// events). When none is left, the refusal names them and who else of
// group may approve.
func separateDuties(valid []Approval, qaApprovers map[Login][]string, in gateInput, group string) ([]Approval, *gateDecision) {
	var allowed []Approval
	refused := RefusalRecord{Environment: in.Env, PlanDigest: in.Digest, Reason: SeparationOfDutiesViolation}
	for _, a := range valid {
		if ids, ok := qaApprovers[LoginOf(a.Approver)]; ok {
			refused.Approvers = append(refused.Approvers, a.Approver)
			refused.QAApprovals = append(refused.QAApprovals, ids...)
			continue
		}
		allowed = append(allowed, a)
	}
	if len(allowed) > 0 {
		return allowed, nil
	}
	for _, m := range in.Approvers.Members(group) {
		if _, ok := qaApprovers[m]; !ok {
			refused.Eligible = append(refused.Eligible, string(m))
		}
	}
	for _, t := range in.Approvers.Groups[group].Teams {
		refused.Eligible = append(refused.Eligible, "members of "+t)
	}
	return nil, &gateDecision{Reason: SeparationOfDutiesViolation,
		Message: fmt.Sprintf("%s approved this contract in qa and may not approve it in %s; ask someone else from %s: %s",
			strings.Join(slices.Compact(slices.Sorted(slices.Values(refused.Approvers))), ", "), in.Env, group, orNone(strings.Join(refused.Eligible, ", "))),
		Also: []EventSpec{{Type: EventApprovalRefused, Data: refused}}}
}

// waiting decides a request no approval answers yet: how long it has been
// pending, and whether it escalates or freezes.
func waiting(es *EnvGateSummary, in gateInput) gateDecision {
	d := gateDecision{Verdict: AwaitingApproval, Reason: ApprovalRequired, RecordWait: true,
		Request: RequestRecord{Environment: in.Env, PlanDigest: in.Digest}}
	start, escalated := es.Request, es.Escalated
	if start == nil {
		d.Message = fmt.Sprintf("environment %s requires an approval bound to plan digest %s from group %s%s", in.Env, in.Digest, in.Approvers.GroupFor(in.Env), requestedSince(es, in.Digest))
		return d
	}
	if resubmits(es, in) {
		// The re-submission the freeze asked for: the old request is
		// closed and this one starts its own clock.
		d.Request.Supersedes = start.ID
		d.Message = fmt.Sprintf("re-submitted, superseding request %s: environment %s requires an approval bound to plan digest %s", start.ID, in.Env, in.Digest)
		return d
	}
	age := BusinessDuration(start.Time, in.Now)
	switch {
	case age >= FreezeAfter:
		return gateDecision{Verdict: Fail, Reason: ApprovalFrozen,
			Message: fmt.Sprintf("the approval request %s for %s has waited %s business time since %s; it is frozen: re-submit with `supersedes: %s` in the contract", start.ID, in.Env, age.Round(time.Minute), start.Time.Format(time.RFC3339), start.ID)}
	case age >= EscalateAfter && !escalated:
		d.Also = []EventSpec{{Type: EventApprovalEscalated, Data: EscalationRecord{Environment: in.Env, PlanDigest: in.Digest, Request: start.ID, Since: start.Time}}}
	}
	d.Message = fmt.Sprintf("environment %s requires an approval bound to plan digest %s from group %s%s", in.Env, in.Digest, in.Approvers.GroupFor(in.Env), requestedSince(es, in.Digest))
	return d
}

// requestedSince says when this plan's approval was first asked for. The
// environment's pending request may be another plan's (another pull
// request of the contract): its time is not this plan's.
func requestedSince(es *EnvGateSummary, digest string) string {
	at, ok := es.Requested[digest]
	if !ok {
		return ""
	}
	return " (requested " + at.UTC().Format(time.RFC3339) + ")"
}

// resubmits reports whether the run re-submits the pending request: the
// contract names it in supersedes, and it is frozen. Naming a request
// that is merely waiting changes nothing: `supersedes` comes from the
// change under review, and a clock its author could restart at will
// would never escalate or freeze.
func resubmits(es *EnvGateSummary, in gateInput) bool {
	start := es.Request
	return start != nil && in.Supersedes != "" && in.Supersedes == start.ID && BusinessDuration(start.Time, in.Now) >= FreezeAfter
}

// AddBusinessDuration returns the moment d of business time after from.
func AddBusinessDuration(from time.Time, d time.Duration) time.Time {
	t := from.UTC()
	for d > 0 {
		next := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		if wd := t.Weekday(); wd != time.Saturday && wd != time.Sunday {
			if left := next.Sub(t); d <= left {
				return t.Add(d)
			} else {
				d -= left
			}
		}
		t = next
	}
	return t
}

// BusinessDuration is the time between from and to that falls on Monday to
// Friday (UTC): a request made on Friday afternoon has waited a few hours,
// not two days, on Monday morning.
func BusinessDuration(from, to time.Time) time.Duration {
	from, to = from.UTC(), to.UTC()
	var total time.Duration
	for t := from; t.Before(to); {
		next := time.Date(t.Year(), t.Month(), t.Day()+1, 0, 0, 0, 0, time.UTC)
		if next.After(to) {
			next = to
		}
		if wd := t.Weekday(); wd != time.Saturday && wd != time.Sunday {
			total += next.Sub(t)
		}
		t = next
	}
	return total
}

func orNone(s string) string {
	if s == "" {
		return "none given"
	}
	return s
}
