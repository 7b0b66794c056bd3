package runner

import (
	"context"
	"fmt"
)

// Gate holds a run between plan and apply until the environment's approval
// rule is met. Dev is autonomous; every other environment waits for a human
// approval bound to the plan digest. Approval sources (forge environments,
// PR reviews, the evidence repo) arrive with the approval issue; until then a
// guarded environment always stops here.
type Gate struct {
	// Evidence, when set, lets the gate refuse to authorize while an
	// earlier apply of the contract has an unknown outcome.
	Evidence EvidenceReader
}

// Name implements Stage.
func (Gate) Name() string { return "gate" }

// Run implements Stage.
func (g Gate) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil || st.Plan == nil {
		return Result{}, Errorf(InternalError, "gate reached without a validated contract and a plan")
	}
	env := st.Contract.Environment
	if g.Evidence != nil {
		events, err := g.Evidence.Chain(ctx, st.Contract.ID)
		if err != nil {
			return Result{}, err
		}
		if open := UnresolvedApply(events, env); open != nil {
			id := open.ID
			// Applying on top of an apply whose outcome nobody knows could
			// double a change or fight a half-finished one.
			msg := fmt.Sprintf("an earlier apply of contract %s in %s has an unknown outcome (event %s); inspect the state, then record what happened with `nova evidence resolve`", st.Contract.ID, env, id)
			return Result{Verdict: Fail, Summary: "earlier apply indeterminate: " + id, Findings: []Finding{{Reason: ApplyIndeterminate, Message: msg}}}, nil
		}
	}
	if env.Autonomous() {
		st.Authorization = &Authorization{Digest: st.Plan.Digest, Environment: env, Approver: "autonomous"}
		return Result{
			Verdict: Pass,
			Summary: fmt.Sprintf("%s is autonomous: plan %s authorized", env, ShortDigest(st.Plan.Digest)),
			Event:   EventApplyAuthorized,
			Data:    st.Authorization,
		}, nil
	}
	return Result{
		Verdict: AwaitingApproval,
		Summary: fmt.Sprintf("approval required: %s needs a human approval of plan %s", env, ShortDigest(st.Plan.Digest)),
		Findings: []Finding{{
			Reason:  ApprovalRequired,
			Message: fmt.Sprintf("environment %s requires an approval bound to plan digest %s", env, st.Plan.Digest),
		}},
		Event: EventApprovalRequested,
		Data:  map[string]string{"environment": string(env), "planDigest": st.Plan.Digest},
	}, nil
}

// ShortDigest abbreviates a digest for one-line summaries; full digests stay
// in findings and events.
func ShortDigest(digest string) string {
	if len(digest) > 12 {
		return digest[:12]
	}
	return digest
}
