package runner

import (
	"context"
	"fmt"
	"strings"
	"time"
)

// BreakGlassApprovalInput is what an approval of a request is judged on.
type BreakGlassApprovalInput struct {
	Approver Login
	// Member says whether the approver is in the breakglass group now.
	Member bool
	Now    time.Time
	// Duration is how long a grant lasts under the trusted config; a
	// request not granted within it has waited too long to be an
	// emergency's.
	Duration time.Duration
}

// DecideBreakGlassApproval says why approver may not approve b (a reason
// and a message), or, when they may, the grant their approval makes (nil
// while it is the first). It is pure, so every rule is table-tested:
//
//   - a revoked or granted request takes no more approvals;
//   - a request waits at most one grant's duration;
//   - the requester never approves their own request;
//   - only members of the breakglass group approve;
//   - one person approves once: two approvals are two people.
func DecideBreakGlassApproval(b *BreakGlassState, in BreakGlassApprovalInput) (Reason, string, *BreakGlassGrant) {
	switch {
	case b.Revoked != "":
		return BreakGlassRevoked, fmt.Sprintf("break-glass request %s was revoked by %s", b.Request, b.RevokedBy), nil
	case b.Grant != "":
		return BreakGlassAlreadyGranted, fmt.Sprintf("break-glass request %s was granted already (grant %s, until %s)", b.Request, b.Grant, b.ExpiresAt.UTC().Format(time.RFC3339)), nil
	case !in.Now.Before(b.RequestedAt.Add(in.Duration)):
		return BreakGlassExpired, fmt.Sprintf("break-glass request %s was made at %s and waited longer than a grant lasts (%s): request again", b.Request, b.RequestedAt.UTC().Format(time.RFC3339), in.Duration), nil
	case in.Approver == b.Requester:
		return BreakGlassSelfApproval, fmt.Sprintf("%s requested break-glass %s and may not approve it: two other members of group %s must", in.Approver, b.Request, BreakGlassGroup), nil
	case !in.Member:
		return BreakGlassNotInGroup, fmt.Sprintf("%s is not in approver group %s, whose members approve break-glass", in.Approver, BreakGlassGroup), nil
	}
	for _, a := range b.Approvals {
		if a.Approver == in.Approver {
			return BreakGlassDuplicateApproval, fmt.Sprintf("%s approved break-glass request %s already (event %s); a second approver from group %s is needed", in.Approver, b.Request, a.Event, BreakGlassGroup), nil
		}
	}
	if len(b.Approvals) == 0 {
		return "", "", nil
	}
	first := b.Approvals[0]
	return "", "", &BreakGlassGrant{
		Environment: b.Environment, Request: b.Request, Requester: string(b.Requester), Reason: b.Reason,
		Approvers: []string{string(first.Approver), string(in.Approver)},
		GrantedAt: in.Now.UTC(), ExpiresAt: in.Now.UTC().Add(in.Duration),
	}
}

// DueGrant is the grant the chain's approvals of b make and nobody has
// recorded yet, or nil: two approvals recorded at the same moment each
// saw only the other's predecessor, so neither run granted. An approving
// command asks it again after its approval is in the chain, so the
// second distinct approval always grants, whichever run recorded it; the
// grant is the first two approvals in chain order, and should both runs
// record it, the fold keeps the first (DuplicateGrants).
func (b *BreakGlassState) DueGrant(now time.Time, duration time.Duration) *BreakGlassGrant {
	if b.Grant != "" || b.Revoked != "" || len(b.Approvals) < 2 || !now.Before(b.RequestedAt.Add(duration)) {
		return nil
	}
	first, second := b.Approvals[0], b.Approvals[1]
	return &BreakGlassGrant{
		Environment: b.Environment, Request: b.Request, Requester: string(b.Requester), Reason: b.Reason,
		Approvers: []string{string(first.Approver), string(second.Approver)},
		Approvals: []string{first.Event, second.Event},
		GrantedAt: now.UTC(), ExpiresAt: now.UTC().Add(duration),
	}
}

// breakGlassInput is what the gate weighs a grant's use on.
type breakGlassInput struct {
	Env    Environment
	Digest string
	Now    time.Time
	// PlannedAt is when the plan went on show (zero: unknown): a grant
	// that held then and has ended since is why the plan is refused.
	PlannedAt time.Time
	// Waived is the grant a confidence stage accepted the plan's score
	// under (Confidence.BreakGlass), "" when the score passed.
	Waived string
	PCRs   []PCR
	Plan   *Plan
	// Members says whether each of the grant's approvers is in the
	// breakglass group now.
	Members map[Login]bool
}

// breakGlassDecision is the gate's verdict on a break-glass use: the
// grant that authorizes, or why none does ("" when none was involved).
type breakGlassDecision struct {
	Grant   *BreakGlassState
	Reason  Reason
	Message string
}

// decideBreakGlass applies the break-glass rules to a plan the normal
// approvals do not authorize (or whose score only a grant accepted). It
// is pure, so every rule is table-tested:
//
//   - the environment's newest grant that holds now authorizes;
//   - none holds: the grant the plan's score was accepted under, or one
//     that held when the plan was made, says why (revoked, expired);
//   - never a plan with a critical policy finding;
//   - never a destroy;
//   - never on the word of an approver who has left the breakglass group.
func decideBreakGlass(sum *GateSummary, in breakGlassInput) breakGlassDecision {
	g := sum.ActiveBreakGlass(in.Env, in.Now)
	if g == nil {
		for _, b := range sum.BreakGlassRequests(in.Env) {
			if b.Grant == "" {
				continue
			}
			if (in.Waived != "" && b.Grant == in.Waived) || (!in.PlannedAt.IsZero() && b.HoldsAt(in.PlannedAt)) {
				reason, msg := b.ended(in.Now)
				return breakGlassDecision{Reason: reason, Message: msg}
			}
		}
		if in.Waived != "" {
			return breakGlassDecision{Reason: BreakGlassExpired, Message: fmt.Sprintf("the plan's confidence was accepted under break-glass grant %s, which is not recorded for %s", in.Waived, in.Env)}
		}
		return breakGlassDecision{}
	}
	if p, ok := criticalFinding(in.PCRs); ok {
		return breakGlassDecision{Reason: BreakGlassCriticalFinding,
			Message: fmt.Sprintf("break-glass grant %s does not cover a plan with a critical policy finding (%s: %s)", g.Grant, p.RuleID, p.Message)}
	}
	if PlanIsDestroy(in.Plan) {
		return breakGlassDecision{Reason: BreakGlassDestroy,
			Message: fmt.Sprintf("break-glass grant %s does not cover a destroy: plan %s only destroys; it needs the environment's normal approvals", g.Grant, ShortDigest(in.Digest))}
	}
	var left []string
	for _, a := range g.Approvers {
		if !in.Members[a] {
			left = append(left, string(a))
		}
	}
	if len(left) > 0 {
		return breakGlassDecision{Reason: BreakGlassNotInGroup,
			Message: fmt.Sprintf("break-glass grant %s was approved by %s, no longer in group %s: it no longer counts", g.Grant, strings.Join(left, ", "), BreakGlassGroup)}
	}
	return breakGlassDecision{Grant: g}
}

// criticalFinding is the first failing (or unevaluated) critical policy
// check: the confidence stage blocks on the same records.
func criticalFinding(pcrs []PCR) (PCR, bool) {
	for _, p := range pcrs {
		if (p.Result == PCRFail || p.Result == PCRError) && p.Severity == Critical {
			return p, true
		}
	}
	return PCR{}, false
}

// PlanIsDestroy is the one place break-glass asks whether a plan is a
// destroy: one planned as such (its operation, bound into the digest), or
// an update that removes what it touches and creates, changes and
// replaces nothing, which under a grant would decommission as surely as
// a destroy while skipping a destroy's approvals.
func PlanIsDestroy(p *Plan) bool {
	if p == nil {
		return false
	}
	if p.Operation.IsDestroy() {
		return true
	}
	c := p.Changes
	return c.Destroy > 0 && c.Add == 0 && c.Change == 0 && c.Replace == 0
}

// breakGlassMembers says whether each approver of the environment's grant
// holding now is in the breakglass group now.
func breakGlassMembers(ctx context.Context, m TeamMembership, sum *GateSummary, env Environment, now time.Time, cfg *ApproverConfig) (map[Login]bool, error) {
	out := map[Login]bool{}
	g := sum.ActiveBreakGlass(env, now)
	if g == nil {
		return out, nil
	}
	for _, a := range g.Approvers {
		ok, err := IsMember(ctx, m, cfg.Groups[BreakGlassGroup], a)
		if err != nil {
			return nil, Errorf(ReasonOf(err), "checking that %s is still in approver group %s: %w", a, BreakGlassGroup, err)
		}
		out[a] = ok
	}
	return out, nil
}

// breakGlass is the gate's break-glass step, taken when the normal
// decision d waits for approvals, or authorizes a plan whose score was
// accepted only under a grant: the grant authorizes (decided true), or the
// refusal says why not; decided false leaves d as it was.
func (g Gate) breakGlass(ctx context.Context, st *State, sum *GateSummary, d gateDecision, approvers *ApproverConfig, now time.Time) (Result, bool, error) {
	env := st.Contract.Environment
	waived := ""
	if st.Confidence != nil {
		waived = st.Confidence.BreakGlass
	}
	// A rejection, or a request frozen, stands: break-glass stands in
	// for approvals nobody gave yet, never for a no.
	if d.Verdict == Fail || (d.Verdict == Pass && waived == "") {
		return Result{}, false, nil
	}
	members, err := breakGlassMembers(ctx, g.Membership, sum, env, now, approvers)
	if err != nil {
		return Result{}, false, err
	}
	planned, _ := sum.PlannedAt(env, st.PullRequest, st.Plan.Digest)
	bd := decideBreakGlass(sum, breakGlassInput{Env: env, Digest: st.Plan.Digest, Now: now, PlannedAt: planned,
		Waived: waived, PCRs: st.PCRs, Plan: st.Plan, Members: members})
	if bd.Grant == nil {
		if bd.Reason == "" {
			return Result{}, false, nil
		}
		if waived != "" || bd.Reason == BreakGlassCriticalFinding {
			// Nothing else can authorize this plan: its score passed only
			// under the grant, or it has a critical finding.
			return Result{Verdict: Fail, Summary: bd.Message, Findings: []Finding{{Reason: bd.Reason, Message: bd.Message}}}, true, nil
		}
		// The grant does not cover it, the normal approvals still may:
		// it waits, saying why break-glass did not authorize it.
		d.Reason, d.Message = bd.Reason, bd.Message+"; "+d.Message
		return Result{Verdict: AwaitingApproval,
			Summary:  fmt.Sprintf("approval required: %s needs a human approval of plan %s", env, ShortDigest(st.Plan.Digest)),
			Findings: []Finding{{Reason: d.Reason, Message: d.Message}}, Event: EventApprovalRequested, Data: d.Request, Also: d.Also}, true, nil
	}
	b := bd.Grant
	use := BreakGlassUse{Environment: env, Request: b.Request, Grant: b.Grant, PlanDigest: st.Plan.Digest,
		PullRequest: st.PullRequest, Requester: string(b.Requester), ExpiresAt: b.ExpiresAt}
	for _, a := range b.Approvers {
		use.Approvers = append(use.Approvers, string(a))
	}
	if d.Verdict != Pass {
		use.Waived = append(use.Waived, WaivedApproval)
	}
	if waived != "" {
		use.Waived = append(use.Waived, WaivedConfidence)
	}
	change := ""
	if st.Change != nil {
		change = st.Change.ID
	}
	use.Change = change
	st.Authorization = &Authorization{Digest: st.Plan.Digest, Environment: env, Approver: "break-glass", Change: change,
		PullRequest: st.PullRequest, BreakGlass: b.Grant}
	if d.Verdict == Pass {
		st.Authorization.Approver, st.Authorization.Approvals = d.Approval.Approver, []string{d.Approval.EventID}
	}
	res, err := g.authorized(ctx, st, fmt.Sprintf("BREAK-GLASS: plan %s authorized for %s under grant %s (requested by %s, granted by %s, until %s; waived: %s); a post-incident review is open until `nova break-glass review --grant %s`",
		ShortDigest(st.Plan.Digest), env, b.Grant, b.Requester, strings.Join(use.Approvers, " and "), b.ExpiresAt.UTC().Format(time.RFC3339), strings.Join(use.Waived, ", "), b.Grant))
	if err != nil {
		return Result{}, false, err
	}
	// The use goes on record right after the authorization, before
	// anything is applied: an apply under break-glass is never
	// unannounced, and an authorization whose use could not be recorded
	// stops the run as any unrecorded event does.
	res.Also = append([]EventSpec{{Type: EventBreakGlassUsed, Data: use}}, res.Also...)
	return res, true, nil
}
