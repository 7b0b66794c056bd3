package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// Destroying a contract's environment goes through the gate like any
// other plan, with rules of its own (this file): the promotion order is
// walked backwards, dr → prod → qa → dev, so an environment is destroyed
// only once every environment after it runs nothing of the contract; a
// destroy needs DestroyApprovalsFor distinct approvers of the
// environment's group (two in prod and dr by default), with the same
// separation of duties as an apply; and the operation is part of the plan
// digest, so approving an update never authorises a destroy.

// Operation is what applying a plan does. The zero value creates and
// updates; it is never written, so events and digests of such plans are
// what they were before destroys existed.
type Operation string

// OperationDestroy destroys everything the contract's state in an
// environment holds, then removes the state.
const OperationDestroy Operation = "destroy"

// IsDestroy says whether o destroys. Any rule that must never let a
// destroy through (a break-glass grant, say) asks this of the plan's
// operation, the one field the digest binds.
func (o Operation) IsDestroy() bool { return o == OperationDestroy }

// DestroyRecord is the data of nova.destroy.identified: what a destroy
// in an environment would take away, read from the evidence.
type DestroyRecord struct {
	Environment Environment `json:"environment"`
	// Change is the change the environment runs (its latest completed
	// apply), Receipt that apply's event.
	Change  string `json:"change,omitempty"`
	Receipt string `json:"receipt,omitempty"`
	// NothingApplied says the evidence shows nothing of the contract
	// running there: the run ends without planning.
	NothingApplied bool `json:"nothingApplied,omitempty"`
}

// DestroyedRecord is the data of nova.destroy.completed, recorded right
// after the nova.apply.completed of a destroy: the environment no longer
// runs the contract.
type DestroyedRecord struct {
	Environment Environment `json:"environment"`
	Digest      string      `json:"digest"`
	// Change is the change the destroy took away.
	Change string `json:"change,omitempty"`
	// StateRemoved says the state itself is gone (the local backend's
	// file); otherwise State says what is left of it.
	StateRemoved bool   `json:"stateRemoved"`
	State        string `json:"state,omitempty"`
}

// StateRemoval is what removing a destroyed environment's state did.
type StateRemoval struct {
	Removed bool
	// Note says what is left when the state was not removed.
	Note string
}

// DestroyPlanner is implemented by workspaces that can plan a destroy.
type DestroyPlanner interface {
	// PlanDestroy saves a plan that destroys everything in the state to
	// planFile and reads it back.
	PlanDestroy(ctx context.Context, planFile string) (*SavedPlan, error)
}

// StateRemover is implemented by workspaces that can remove their state
// once a destroy completed.
type StateRemover interface {
	// RemoveState checks that the state holds no resource
	// (DESTROY_INCOMPLETE otherwise) and removes it where the backend
	// keeps it in a file Nova owns.
	RemoveState(ctx context.Context) (StateRemoval, error)
}

// defaultDestroyApprovals is how many distinct approvers a destroy needs
// per environment, unless approvers.yml says otherwise; dev is autonomous.
var defaultDestroyApprovals = map[Environment]int{QA: 1, Prod: 2, DR: 2}

// maxDestroyApprovals bounds destroyApprovals: a number nobody can ever
// reach would make the environment impossible to destroy through Nova.
const maxDestroyApprovals = 10

// DestroyApprovalsFor is how many distinct approvers a destroy in env
// needs (0 for dev, which is autonomous).
func (c *ApproverConfig) DestroyApprovalsFor(env Environment) int {
	if n, ok := c.DestroyApprovals[env]; ok {
		return n
	}
	return defaultDestroyApprovals[env]
}

// checkDestroyApprovals validates destroyApprovals as written: only
// guarded environments, at least one approver, and no more than the group
// can give when it lists its members only. The defaults are not held to
// the last rule: a config written before destroys existed stays valid,
// and its one-member sre group cannot destroy prod until it grows or the
// config lowers the number, which the waiting destroy says.
func (c *ApproverConfig) checkDestroyApprovals() error {
	for _, env := range slices.Sorted(maps.Keys(c.DestroyApprovals)) {
		n := c.DestroyApprovals[env]
		if !env.Valid() || env.Autonomous() {
			return Errorf(ApproversInvalid, "%s: destroyApprovals: %q is not qa, prod or dr (dev destroys, like dev applies, need no approval)", ApproversFile, env)
		}
		if n < 1 || n > maxDestroyApprovals {
			return Errorf(ApproversInvalid, "%s: destroyApprovals: %s needs %d approvers; want 1 to %d", ApproversFile, env, n, maxDestroyApprovals)
		}
		group := c.GroupFor(env)
		if g := c.Groups[group]; len(g.Teams) == 0 && len(g.Members) < n {
			return Errorf(ApproversInvalid, "%s: destroyApprovals: a destroy in %s needs %d distinct approvers, and group %s has %d member(s)", ApproversFile, env, n, group, len(g.Members))
		}
	}
	return nil
}

// identifyDestroy is the change stage of a destroy: it reads from the
// evidence what the environment runs, and ends the run when it runs
// nothing of the contract.
func identifyDestroy(ctx context.Context, evidence EvidenceReader, st *State) (Result, error) {
	if evidence == nil {
		return Result{}, Errorf(InternalError, "a destroy needs the evidence to tell what the environment runs")
	}
	sum, err := ReadGateSummary(ctx, evidence, st.Contract.ID)
	if err != nil {
		return Result{}, err
	}
	env := st.Contract.Environment
	es := sum.Env(env)
	rec := DestroyRecord{Environment: env}
	if es.LastApplied == nil && es.Open == nil {
		rec.NothingApplied = true
		msg := fmt.Sprintf("the evidence shows nothing of contract %s running in %s (never applied): nothing to destroy", st.Contract.ID, env)
		// A forge's job runs every environment's destroy again after each
		// approval, and its comment on the environment is this message:
		// it must still say that the environment was destroyed, and by
		// which event, rather than read as if it never ran anything.
		if d := es.Destroyed; d != nil {
			what := "its deployment"
			if d.Change != "" {
				what = "change " + ShortDigest(d.Change)
			}
			msg = fmt.Sprintf("contract %s was destroyed in %s (%s taken away by %s): nothing to destroy", st.Contract.ID, env, what, d.Event)
		}
		return Result{Verdict: Pass, Done: true, Event: EventDestroyIdentified, Data: rec, Summary: msg,
			Findings: []Finding{{Reason: DestroyNothingApplied, Message: msg}}}, nil
	}
	summary := fmt.Sprintf("destroy of contract %s in %s", st.Contract.ID, env)
	if last := es.LastApplied; last != nil {
		rec.Change, rec.Receipt = last.Change, last.Event
		summary = fmt.Sprintf("destroy of change %s in %s (applied by %s)", ShortDigest(last.Change), env, last.Event)
	}
	// An apply of unknown outcome is left to the gate, which refuses it
	// as it refuses any apply then.
	return Result{Verdict: Pass, Event: EventDestroyIdentified, Data: rec, Summary: summary}, nil
}

// destroyOrder holds a destroy in env while an environment after it still
// runs the contract, or has an apply nobody knows the end of: dr goes
// first, dev last.
func destroyOrder(sum *GateSummary, env Environment) (Result, bool) {
	var running []string
	for _, later := range Environments[env.Guard()+1:] {
		es := sum.Env(later)
		switch {
		case es.Open != nil:
			running = append(running, fmt.Sprintf("%s has an apply of unknown outcome (%s)", later, es.Open.ID))
		case es.LastApplied != nil:
			running = append(running, fmt.Sprintf("%s runs change %s (%s)", later, ShortDigest(es.LastApplied.Change), es.LastApplied.Event))
		}
	}
	if len(running) == 0 {
		return Result{}, false
	}
	msg := fmt.Sprintf("destroys go dr → prod → qa → dev, and %s: destroy there first", strings.Join(running, ", "))
	return Result{Verdict: Fail, Summary: "destroy out of order in " + string(env), Findings: []Finding{{Reason: DestroyOrderViolation, Message: msg}}}, true
}

// destroy is the gate of a destroy plan. dev is autonomous; qa, prod and
// dr need the distinct approvals decideDestroy counts.
func (g Gate) destroy(ctx context.Context, st *State, sum *GateSummary) (Result, error) {
	env := st.Contract.Environment
	if res, blocked := destroyOrder(sum, env); blocked {
		return res, nil
	}
	auth := &Authorization{Digest: st.Plan.Digest, Environment: env, Operation: OperationDestroy, PullRequest: st.PullRequest}
	if last := sum.Env(env).LastApplied; last != nil {
		auth.Change = last.Change
	}
	if env.Autonomous() {
		auth.Approver = "autonomous"
		st.Authorization = auth
		return g.authorized(ctx, st, fmt.Sprintf("%s is autonomous: destroy plan %s authorized", env, ShortDigest(st.Plan.Digest)))
	}
	approvers, err := g.approverConfig(ctx, env)
	if err != nil {
		return Result{}, err
	}
	members, err := stillMembers(ctx, g.Membership, sum.Env(env).Approvals[st.Plan.Digest], approvers)
	if err != nil {
		return Result{}, err
	}
	d, err := decideDestroy(sum, gateInput{Env: env, Digest: st.Plan.Digest, Supersedes: st.Contract.Supersedes, Now: g.clock().UTC(), Approvers: approvers, Members: members, ApprovedAfter: approvedAfter(sum, env)})
	if err != nil {
		return Result{}, err
	}
	switch d.Verdict {
	case Pass:
		for _, a := range d.Approvals {
			auth.Approvers = append(auth.Approvers, a.Approver)
			auth.Approvals = append(auth.Approvals, a.EventID)
		}
		auth.Approver = auth.Approvers[0]
		st.Authorization = auth
		return g.authorized(ctx, st, fmt.Sprintf("destroy plan %s approved for %s by %s", ShortDigest(st.Plan.Digest), env, strings.Join(auth.Approvers, " and ")))
	case AwaitingApproval:
		return Result{
			Verdict:  AwaitingApproval,
			Summary:  fmt.Sprintf("approval required: destroying %s needs %d distinct approver(s) of plan %s", env, approvers.DestroyApprovalsFor(env), ShortDigest(st.Plan.Digest)),
			Findings: []Finding{{Reason: d.Reason, Message: d.Message}},
			Event:    EventApprovalRequested,
			Data:     d.Request,
			Also:     d.Also,
		}, nil
	}
	return Result{Verdict: Fail, Summary: d.Message, Findings: []Finding{{Reason: d.Reason, Message: d.Message}}, Also: d.Also}, nil
}

// decideDestroy applies the approval rules of a destroy in a guarded
// environment. It is pure, so every rule is table-tested:
//
//   - a rejection, an unreadable approval and a frozen request decide as
//     they do for any plan (decideGate);
//   - the approvals of this plan by the environment's group count once
//     per approver, however often each approved;
//   - in prod and dr an approver who approved the contract in qa does not
//     count (separation of duties: refused, and recorded);
//   - the plan is authorized once DestroyApprovalsFor(env) approvers
//     count; until then it waits, saying how many more it needs.
func decideDestroy(sum *GateSummary, in gateInput) (gateDecision, error) {
	d, err := decideGate(sum, in)
	if err != nil || d.Verdict == Fail {
		return d, err
	}
	es := sum.Env(in.Env)
	group := in.Approvers.GroupFor(in.Env)
	need := in.Approvers.DestroyApprovalsFor(in.Env)
	valid, left := countedApprovals(es, in, group)
	var refusedBy []Approval
	if in.Env == Prod || in.Env == DR {
		qa := sum.Env(QA).Approvers
		var allowed []Approval
		for _, a := range valid {
			if _, ok := qa[LoginOf(a.Approver)]; ok {
				refusedBy = append(refusedBy, a)
				continue
			}
			allowed = append(allowed, a)
		}
		valid = allowed
	}
	// One approval per approver, the first: approving twice is still one
	// person's judgement.
	var counted []Approval
	for _, a := range valid {
		if !slices.ContainsFunc(counted, func(c Approval) bool { return LoginOf(c.Approver) == LoginOf(a.Approver) }) {
			counted = append(counted, a)
		}
	}
	if len(counted) >= need {
		return gateDecision{Verdict: Pass, Approval: &counted[0], Approvals: counted}, nil
	}
	w := waiting(es, in)
	if w.Verdict != AwaitingApproval {
		return w, nil
	}
	names := make([]string, len(counted))
	for i, a := range counted {
		names[i] = a.Approver
	}
	w.Message = fmt.Sprintf("destroying %s needs %d distinct approvers from group %s, and %s; %s", in.Env, need, group, countedSoFar(names), w.Message)
	switch {
	case len(counted) > 0:
		w.Reason = DestroyNeedsMoreApprovals
	case len(refusedBy) > 0:
		w.Reason = SeparationOfDutiesViolation
	case len(left) > 0:
		w = leftGroup(w, left, in, group)
	}
	if len(refusedBy) > 0 {
		refusal := RefusalRecord{Environment: in.Env, PlanDigest: in.Digest, Reason: SeparationOfDutiesViolation}
		for _, a := range refusedBy {
			refusal.Approvers = append(refusal.Approvers, a.Approver)
			refusal.QAApprovals = append(refusal.QAApprovals, sum.Env(QA).Approvers[LoginOf(a.Approver)]...)
		}
		refusal.QAApprovals = slices.Compact(slices.Sorted(slices.Values(refusal.QAApprovals)))
		for _, m := range in.Approvers.Members(group) {
			if _, ok := sum.Env(QA).Approvers[m]; !ok {
				refusal.Eligible = append(refusal.Eligible, string(m))
			}
		}
		w.Message = fmt.Sprintf("%s approved this contract in qa and may not approve its destroy in %s (separation of duties); %s",
			strings.Join(slices.Compact(slices.Sorted(slices.Values(refusal.Approvers))), ", "), in.Env, w.Message)
		w.Also = append([]EventSpec{{Type: EventApprovalRefused, Data: refusal}}, w.Also...)
	}
	return w, nil
}

// clock is the gate's clock: Now, or time.Now.
func (g Gate) clock() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func countedSoFar(names []string) string {
	switch len(names) {
	case 0:
		return "none counts yet"
	case 1:
		return "only " + names[0] + " counts so far"
	}
	return strings.Join(names, ", ") + " count so far"
}

// decommissioned records that e (a destroy's nova.apply.completed, or a
// resolution that found one applied) took everything away: the
// environment runs nothing of the contract, has applied no change as far
// as promotion goes (a new deployment starts over in order), and no pull
// request holds it.
func (es *EnvGateSummary) decommissioned(e Event) {
	change := es.AuthorizedChange
	if change == "" && es.LastApplied != nil {
		change = es.LastApplied.Change
	}
	es.Destroyed = &AppliedChange{Change: change, Event: e.ID}
	es.LastApplied, es.Applied, es.Hold, es.Drifted = nil, nil, nil, false
	es.AuthorizedChange, es.AuthorizedOp, es.AuthorizedPR = "", "", 0
}
