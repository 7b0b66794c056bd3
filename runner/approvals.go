package runner

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"
)

// ImportApprovals is the stage before the gate: it asks every approval
// source for the claims it holds on this plan, keeps those whose author may
// give them, and records them in the evidence as nova.approval.recorded or
// nova.approval.rejected. It never authorizes anything itself; the gate
// decides from what is recorded.
type ImportApprovals struct {
	Sources []ApprovalSource
	// Approvers reads the approver config from the trusted base.
	Approvers ApproversReader
	// Membership resolves team members; without it only listed members
	// count.
	Membership TeamMembership
	// Change names the change's authors, who may never approve it.
	Change ChangeReader
	// Claims verifies local signed claims.
	Claims ClaimVerifier
	// Evidence tells which claims were imported before.
	Evidence EvidenceReader
}

// ClaimVerifier checks a local approval claim's signature with its
// approver's registered key.
type ClaimVerifier interface {
	VerifyClaim(ctx context.Context, c SignedClaim) error
}

// ApprovalCheck is the data of nova.approval.checked: what the import
// found, including every claim it did not accept and why, so an auditor
// sees the approvals that did not count.
type ApprovalCheck struct {
	Environment Environment    `json:"environment"`
	PlanDigest  string         `json:"planDigest,omitempty"`
	Group       string         `json:"group,omitempty"`
	Imported    int            `json:"imported"`
	Ignored     []IgnoredClaim `json:"ignored,omitempty"`
}

// IgnoredClaim is a claim that was not imported.
type IgnoredClaim struct {
	Approver  string `json:"approver"`
	Source    string `json:"source"`
	SourceRef string `json:"sourceRef"`
	Reason    Reason `json:"reason"`
	Why       string `json:"why"`
}

var _ Stage = (*ImportApprovals)(nil)

// Name implements Stage.
func (*ImportApprovals) Name() string { return "approvals" }

// Run implements Stage.
func (s *ImportApprovals) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil || st.Plan == nil {
		return Result{}, Errorf(InternalError, "approvals reached without a validated contract and a plan")
	}
	env := st.Contract.Environment
	if env.Autonomous() {
		return Result{Verdict: Pass, Summary: fmt.Sprintf("%s is autonomous: no approval needed", env),
			Event: EventApprovalChecked, Data: ApprovalCheck{Environment: env}}, nil
	}
	if s.Approvers == nil {
		return Result{}, Errorf(ApproversInvalid, "no approver config: %s needs %s in the trusted base to know who may approve", env, ApproversFile)
	}
	if s.Evidence == nil {
		return Result{}, Errorf(InternalError, "the approvals stage has no evidence to record into")
	}
	approvers, err := s.Approvers.Approvers(ctx)
	if err != nil {
		return Result{}, err
	}
	// The gate summary holds what this stage reads of the chain, so its
	// cost does not grow with the contract's history.
	sum, err := ReadGateSummary(ctx, s.Evidence, st.Contract.ID)
	if err != nil {
		return Result{}, err
	}
	// Copies: the imports below are added to them, and the summary may be
	// the reader's own.
	imported, usedClaims := maps.Clone(sum.Imported), maps.Clone(sum.UsedClaims)
	if imported == nil {
		imported = map[string]bool{}
	}
	if usedClaims == nil {
		usedClaims = map[string]bool{}
	}
	req := ApprovalRequest{
		ContractID: st.Contract.ID, Environment: env, PlanDigest: st.Plan.Digest,
		Commit: st.Commit, ForgeRun: st.Plan.ForgeRun,
	}
	// A decision counts only if made while this plan was the one on
	// show: from when the pull request's plans in the environment last
	// turned to this digest.
	// A plan not on record (one `nova approve` picked from history) is
	// on show from now on.
	var known bool
	if req.PlannedAt, known = sum.PlannedAt(env, st.PullRequest, st.Plan.Digest); !known {
		req.PlannedAt = time.Now().UTC()
	}
	var change Change
	if s.Change != nil {
		if change, err = s.Change.Change(ctx); err != nil {
			return Result{}, err
		}
	}
	group := approvers.GroupFor(env)
	if err := checkTeams(ctx, s.Membership, group, approvers.Groups[group]); err != nil {
		return Result{}, err
	}
	check := ApprovalCheck{Environment: env, PlanDigest: st.Plan.Digest, Group: group}
	var also []EventSpec
	judged := map[string]bool{}
	for _, src := range s.Sources {
		claims, err := src.Claims(ctx, req)
		if err != nil {
			return Result{}, err
		}
		for _, c := range claims {
			// One review can approve the same plan for qa and for prod:
			// it is imported once per environment.
			ref := string(c.Environment) + "/" + c.Source + "/" + c.SourceRef
			// A claim two sources hold (the event's comment and the same
			// comment listed) is judged once.
			if imported[ref] || judged[ref] {
				continue
			}
			judged[ref] = true
			reason, why, err := s.eligible(ctx, c, req, approvers, group, change, usedClaims)
			if err != nil {
				return Result{}, err
			}
			if reason != "" {
				check.Ignored = append(check.Ignored, IgnoredClaim{Approver: c.Approver, Source: c.Source, SourceRef: c.SourceRef, Reason: reason, Why: why})
				continue
			}
			imported[ref] = true
			if c.Signed != nil {
				usedClaims[c.Signed.Claim.ID] = true
			}
			rec := ApprovalRecord{ContractID: st.Contract.ID, Environment: env, PlanDigest: c.PlanDigest, Approver: string(LoginOf(c.Approver)),
				Group: group, Source: c.Source, SourceRef: c.SourceRef, Claim: c.Signed}
			if !c.At.IsZero() {
				// Some sources know no time (a workflow run's approvals);
				// the event's own time then stands for it.
				at := c.At.UTC()
				rec.At = &at
			}
			typ := EventApprovalRecorded
			if c.Decision == Reject {
				typ, rec.Reason = EventApprovalRejected, c.Reason
			}
			also = append(also, EventSpec{Type: typ, Data: rec})
			check.Imported++
		}
	}
	summary := fmt.Sprintf("%d decision(s) on plan %s imported for %s", check.Imported, ShortDigest(st.Plan.Digest), env)
	if n := len(check.Ignored); n > 0 {
		summary += fmt.Sprintf(", %d ignored", n)
	}
	if len(change.Unlinked) > 0 {
		// Rejections were imported all the same: holding a plan needs no
		// proof of who wrote it.
		msg := unlinkedMessage(change.Unlinked)
		return Result{Verdict: Fail, Summary: summary + "; " + msg, Findings: []Finding{{Reason: ChangeAuthorUnknown, Message: msg}},
			Data: check, Also: also}, nil
	}
	return Result{Verdict: Pass, Summary: summary, Event: EventApprovalChecked, Data: check, Also: also}, nil
}

func unlinkedMessage(commits []string) string {
	short := make([]string, len(commits))
	for i, c := range commits {
		short[i] = ShortDigest(c)
	}
	return fmt.Sprintf("the forge links the author of commit %s to no account, so nobody can be shown not to have written this change: no approval counts until the commit's author email belongs to an account (or the commit is replaced by one that does)",
		strings.Join(short, ", "))
}

// eligible says why a claim may not be imported, or "" when it may: it
// must be about this plan and environment, verify when signed (and not be
// used twice), come from someone who did not write the change, and from a
// member of the environment's approver group. A member may reject their
// own change, or one whose authors are unknown: a rejection only holds
// the plan. A membership the forge cannot answer is the stage's error,
// never a reason to ignore the claim: ignored, a team member's rejection
// would go unheard.
func (s *ImportApprovals) eligible(ctx context.Context, c ApprovalClaim, req ApprovalRequest, approvers *ApproverConfig, group string, change Change, usedClaims map[string]bool) (Reason, string, error) {
	reason, why := s.claimProblem(ctx, c, req, change, usedClaims)
	if reason != "" {
		return reason, why, nil
	}
	login := LoginOf(c.Approver)
	member, err := IsMember(ctx, s.Membership, approvers.Groups[group], login)
	if err != nil {
		return "", "", Errorf(ReasonOf(err), "checking whether %s is in approver group %s: %w", login, group, err)
	}
	if !member {
		return ApproverNotEligible, fmt.Sprintf("%s is not in approver group %s (%s)", login, group, approvers.Groups[group]), nil
	}
	return "", "", nil
}

// claimProblem is what is wrong with a claim whoever made it.
func (s *ImportApprovals) claimProblem(ctx context.Context, c ApprovalClaim, req ApprovalRequest, change Change, usedClaims map[string]bool) (Reason, string) {
	switch {
	case c.Problem != "":
		return ApprovalClaimInvalid, c.Problem
	case c.Environment != req.Environment:
		return ApproverNotEligible, fmt.Sprintf("the claim is for %s, this run deploys to %s", c.Environment, req.Environment)
	case c.PlanDigest != req.PlanDigest:
		return ApproverNotEligible, fmt.Sprintf("the claim is for plan %s, this plan is %s", ShortDigest(c.PlanDigest), ShortDigest(req.PlanDigest))
	case c.Decision != Approve && c.Decision != Reject:
		return ApprovalClaimInvalid, fmt.Sprintf("decision %q is neither approve nor reject", c.Decision)
	}
	login, err := ParseLogin(c.Approver)
	if err != nil {
		return ApproverNotEligible, err.Error()
	}
	if c.Signed != nil {
		sc := c.Signed.Claim
		switch {
		case s.Claims == nil:
			return ApprovalClaimInvalid, "signed claims cannot be checked here: no approver keys are configured"
		case sc.ID != c.SourceRef || sc.Approver != c.Approver || sc.Environment != c.Environment || sc.PlanDigest != c.PlanDigest || sc.Decision != c.Decision || sc.ContractID != req.ContractID:
			return ApprovalClaimInvalid, "the signed claim says something else than the claim presented"
		case usedClaims[sc.ID]:
			return ApprovalClaimInvalid, fmt.Sprintf("claim %s was already used: a claim is accepted once", sc.ID)
		}
		if err := s.Claims.VerifyClaim(ctx, *c.Signed); err != nil {
			return ApprovalClaimInvalid, fmt.Sprintf("the claim's signature does not verify: %v", err)
		}
	}
	if c.Decision == Approve {
		if len(change.Unlinked) > 0 {
			return ChangeAuthorUnknown, unlinkedMessage(change.Unlinked)
		}
		if slices.Contains(change.Authors, login) {
			return ApproverNotEligible, fmt.Sprintf("%s wrote this change and may not approve it", login)
		}
		if change.Requester != "" && change.Requester == login {
			return ApproverNotEligible, fmt.Sprintf("%s asked for this rollback and may not approve it", login)
		}
	}
	return "", ""
}

// checkTeams asks the forge whether each team of the environment's group
// can be read, before any claim is weighed: a token that cannot read them
// is a configuration error the first run names, not "1 ignored" later.
func checkTeams(ctx context.Context, m TeamMembership, group string, g ApproverGroup) error {
	if m == nil {
		return nil
	}
	for _, team := range g.Teams {
		if err := m.CheckTeam(ctx, team); err != nil {
			return Errorf(ReasonOf(err), "approver group %s: %w", group, err)
		}
	}
	return nil
}

// IsMember reports whether login is in g: listed, or a member of one of
// its teams as the forge says (m nil: listed members only).
func IsMember(ctx context.Context, m TeamMembership, g ApproverGroup, login Login) (bool, error) {
	if slices.Contains(g.Members, login) {
		return true, nil
	}
	if m == nil {
		return false, nil
	}
	for _, team := range g.Teams {
		ok, err := m.IsTeamMember(ctx, team, string(login))
		if err != nil {
			return false, err
		}
		if ok {
			return true, nil
		}
	}
	return false, nil
}
