package runner

import (
	"context"
	"fmt"
	"time"
)

// Gate holds a run between plan and apply until the environment's approval
// rule is met, deciding from the evidence repo alone: dev is autonomous;
// qa, prod and dr need an approval of this plan digest by the
// environment's approver group, recorded in the evidence by the approvals
// stage before it (decideGate has the rules).
type Gate struct {
	// Evidence is the contract's verified chain. Without it only dev can
	// be authorized.
	Evidence EvidenceReader
	// Approvers reads the approver config from the trusted base; a
	// guarded environment cannot be authorized without one.
	Approvers ApproversReader
	// Membership resolves team members when the gate checks that each
	// approver is still in the group; without it only listed members
	// count.
	Membership TeamMembership
	// Attest, when set, signs the authorization's in-toto attestation.
	Attest Attestor
	// Now is the clock for request timeouts; nil means time.Now.
	Now func() time.Time
}

// Name implements Stage.
func (Gate) Name() string { return "gate" }

// Run implements Stage.
func (g Gate) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil || st.Plan == nil {
		return Result{}, Errorf(InternalError, "gate reached without a validated contract and a plan")
	}
	env := st.Contract.Environment
	sum := &GateSummary{}
	if g.Evidence != nil {
		// The summary, not the chain: what the rules read of a contract's
		// history, so the gate costs the same however long that is.
		var err error
		if sum, err = ReadGateSummary(ctx, g.Evidence, st.Contract.ID); err != nil {
			return Result{}, err
		}
		if open := sum.Env(env).Open; open != nil {
			// Applying on top of an apply whose outcome nobody knows could
			// double a change or fight a half-finished one.
			msg := fmt.Sprintf("an earlier apply of contract %s in %s has an unknown outcome (event %s, %s); inspect the state, then record what happened with `nova evidence resolve`", st.Contract.ID, env, open.ID, open.Type)
			return Result{Verdict: Fail, Summary: "earlier apply indeterminate: " + open.ID, Findings: []Finding{{Reason: ApplyIndeterminate, Message: msg}}}, nil
		}
	}
	if st.Plan.Operation.IsDestroy() {
		return g.destroy(ctx, st, sum)
	}
	change := ""
	if st.Change != nil {
		change = st.Change.ID
	}
	if env.Autonomous() {
		st.Authorization = &Authorization{Digest: st.Plan.Digest, Environment: env, Approver: "autonomous", Change: change, PullRequest: st.PullRequest, Rollback: st.Rollback.Ref()}
		return g.authorized(ctx, st, fmt.Sprintf("%s is autonomous: plan %s authorized", env, ShortDigest(st.Plan.Digest)))
	}
	approvers, err := g.approverConfig(ctx, env)
	if err != nil {
		return Result{}, err
	}
	if res, blocked := promotionOrder(sum, env, st.Contract.Declared, st.Change); blocked {
		if st.UntilMerge && !env.Previous().Autonomous() {
			// The environment before applies only after the merge, so
			// this one cannot be planned for approval on the pull
			// request: it is, on the merged commit, once that applied.
			return Result{Verdict: Pass, Done: true, Summary: fmt.Sprintf("%s is planned for approval after the merge, once %s applied the change", env, env.Previous())}, nil
		}
		return res, nil
	}
	// One instant for the whole decision: the approval rules and the
	// break-glass rules judge the same moment.
	now := g.clock().UTC()
	members, err := stillMembers(ctx, g.Membership, sum.Env(env).Approvals[st.Plan.Digest], approvers)
	if err != nil {
		return Result{}, err
	}
	in := gateInput{Env: env, Digest: st.Plan.Digest, Supersedes: st.Contract.Supersedes, Now: now, Approvers: approvers, Members: members, ApprovedAfter: approvedAfter(sum, env)}
	if r := st.Rollback; r != nil {
		// Its requester never approves a rollback.
		in.NotBy = LoginOf(r.RequestedBy)
	}
	d, err := decideGate(sum, in)
	if err != nil {
		return Result{}, err
	}
	if res, decided, err := g.breakGlass(ctx, st, sum, d, approvers, now); err != nil || decided {
		if err == nil && st.UntilMerge && res.Verdict == Pass {
			// Nothing guarded applies on the pull request, a grant's plan
			// neither: the merged commit's run uses the grant, if it
			// still holds.
			st.Authorization = nil
			return Result{Verdict: Pass, Done: true, Summary: fmt.Sprintf("plan %s would apply in %s under break-glass: it is applied after the merge", ShortDigest(st.Plan.Digest), env)}, nil
		}
		return res, err
	}
	switch d.Verdict {
	case Pass:
		if st.UntilMerge {
			// Authorizing here would open an apply nobody runs: the
			// approved plan is applied from the merged commit.
			return Result{Verdict: Pass, Done: true, Summary: fmt.Sprintf("plan %s approved for %s by %s: it is applied after the merge", ShortDigest(st.Plan.Digest), env, d.Approval.Approver)}, nil
		}
		st.Authorization = &Authorization{Digest: st.Plan.Digest, Environment: env, Approver: d.Approval.Approver, Approvals: []string{d.Approval.EventID}, Change: change, PullRequest: st.PullRequest, Rollback: st.Rollback.Ref()}
		return g.authorized(ctx, st, fmt.Sprintf("plan %s approved for %s by %s (%s)", ShortDigest(st.Plan.Digest), env, d.Approval.Approver, d.Approval.Source))
	case AwaitingApproval:
		finding := Finding{Reason: d.Reason, Message: d.Message}
		if why := st.Merge.stale(st.Plan.Digest); why != "" {
			finding = Finding{Reason: MergePlanStale, Message: why}
		}
		return Result{
			Verdict:  AwaitingApproval,
			Summary:  fmt.Sprintf("approval required: %s needs a human approval of plan %s", env, ShortDigest(st.Plan.Digest)),
			Findings: []Finding{finding},
			Event:    EventApprovalRequested,
			Data:     d.Request,
			Also:     d.Also,
		}, nil
	}
	return Result{Verdict: Fail, Summary: d.Message, Findings: []Finding{{Reason: d.Reason, Message: d.Message}}, Also: d.Also}, nil
}

// approvedAfter is the seq after which an approval in env counts: that
// of the environment's latest apply. A plan can be byte for byte one
// approved before the environment last changed (the same commit from
// the same state): rolling back to a change, or planning again the
// change a rollback took away. That approval was for then; counting it
// would let anyone undo a rollback with nobody approving.
func approvedAfter(sum *GateSummary, env Environment) int64 {
	if last := sum.Env(env).LastApplied; last != nil {
		return last.Seq
	}
	return 0
}

// promotionOrder holds a change in env until the environment before it
// applied the same change: qa after dev, prod after qa, dr after prod. The
// workflow's job order is a convenience; this is the rule, so running
// `nova run --env prod` first reaches nothing, and separation of duties
// has a qa approval to separate from. A change enters at the environment
// its contract declares (--env may only raise it): a contract that
// declares qa is never applied in dev, so qa is its first. An
// unidentified change is held: there is no telling what the environment
// before applied.
func promotionOrder(sum *GateSummary, env, declared Environment, change *ChangeRecord) (Result, bool) {
	prev := env.Previous()
	if prev == "" || prev.Guard() < declared.Guard() {
		return Result{}, false
	}
	var msg string
	switch {
	case change == nil || change.ID == "":
		msg = fmt.Sprintf("the change this plan deploys was not identified, so nothing shows that %s applied it before %s", prev, env)
	case sum.Env(prev).Applied[change.ID] == "":
		msg = fmt.Sprintf("change %s has not been applied in %s; %s follows %s: apply it there first", ShortDigest(change.ID), prev, env, prev)
	default:
		return Result{}, false
	}
	return Result{Verdict: Fail, Summary: msg, Findings: []Finding{{Reason: PromotionOrderViolation, Message: msg}}}, true
}

// stillMembers says, for each approver of approvals, whether they are in
// the group that approves the environment now: an approval recorded while
// its approver was in the group stops counting once they left it.
func stillMembers(ctx context.Context, m TeamMembership, approvals []Approval, cfg *ApproverConfig) (map[Login]bool, error) {
	out := map[Login]bool{}
	for _, a := range approvals {
		login := LoginOf(a.Approver)
		if _, done := out[login]; done {
			continue
		}
		ok, err := IsMember(ctx, m, cfg.Groups[a.Group], login)
		if err != nil {
			// The adapter's reason stands: a team the token cannot read
			// is a configuration error, not the forge failing.
			return nil, Errorf(ReasonOf(err), "checking that %s is still in approver group %s: %w", login, a.Group, err)
		}
		out[login] = ok
	}
	return out, nil
}

// authorized records the authorization and, when an attestor is set, the
// signed in-toto attestation that binds it to the saved plan.
func (g Gate) authorized(ctx context.Context, st *State, summary string) (Result, error) {
	res := Result{Verdict: Pass, Summary: summary, Event: EventApplyAuthorized, Data: st.Authorization}
	if g.Attest == nil {
		return res, nil
	}
	att, err := attestation(ctx, g.Attest, st)
	if err != nil {
		return Result{}, err
	}
	res.Also = append(res.Also, EventSpec{Type: EventAttestation, Data: att})
	return res, nil
}

// ShortDigest abbreviates a digest for one-line summaries; full digests stay
// in findings and events.
func ShortDigest(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}

// approverConfig is the trusted approver config a guarded environment's
// decision reads, with the evidence its approvals come from.
func (g Gate) approverConfig(ctx context.Context, env Environment) (*ApproverConfig, error) {
	if g.Evidence == nil {
		return nil, Errorf(InternalError, "the gate of %s has no evidence to read approvals from", env)
	}
	if g.Approvers == nil {
		return nil, Errorf(ApproversInvalid, "no approver config: %s needs %s in the trusted base to know who may approve", env, ApproversFile)
	}
	return g.Approvers.Approvers(ctx)
}
