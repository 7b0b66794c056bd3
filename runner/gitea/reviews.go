package gitea

import (
	"context"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Reviews finds approvals and rejections in the pull request's reviews.
type Reviews struct{ c *Client }

var _ runner.ApprovalSource = (*Reviews)(nil)

// Name is the source recorded with the claims.
func (*Reviews) Name() string { return runner.SourceGiteaReview }

// Claims returns the reviews that approve or reject the plan of req: an
// APPROVED or REQUEST_CHANGES review of req.Commit, submitted after the
// plan was recorded, while req.Commit is still the pull request's head,
// and that Gitea still counts (see reviewClaim). A pull request that has
// moved past req.Commit yields nothing: its reviews are of other code.
func (r *Reviews) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	if err := checkRequest(req, "reading review approvals"); err != nil {
		return nil, err
	}
	if req.Commit == "" {
		return nil, runner.Errorf(runner.InternalError, "reading review approvals: the request names no commit")
	}
	pr, err := r.c.pullRequest(ctx)
	if err != nil {
		return nil, err
	}
	if pr.Head.Sha != req.Commit {
		return nil, nil
	}
	c := r.c
	reviews, err := paginate(ctx, c, "listing the reviews of "+c.prName(),
		func(rv *sdk.PullReview) string {
			if rv == nil {
				return ""
			}
			return idKey(rv.ID)
		},
		func(o sdk.ListOptions) ([]*sdk.PullReview, *sdk.Response, error) {
			return c.api(ctx).ListPullReviews(c.owner, c.repo, c.pull, sdk.ListPullReviewsOptions{ListOptions: o})
		})
	if err != nil {
		return nil, err
	}
	var claims []runner.ApprovalClaim
	for _, rv := range reviews {
		if claim, ok := reviewClaim(rv, req); ok {
			claims = append(claims, claim)
		}
	}
	return claims, nil
}

// reviewClaim reads one review as a claim on req's plan. The review counts
// only when Gitea counts it:
//   - official: its author could approve when they submitted it (write
//     access, or the branch protection's approvers list) and it is their
//     latest approving or rejecting review — Gitea clears the flag on a
//     reviewer's older ones. A read-only member's approval is not official;
//   - neither stale (the code changed since) nor dismissed;
//   - of req.Commit, and submitted after req.PlannedAt: a review from
//     before the plan existed has not seen it.
func reviewClaim(rv *sdk.PullReview, req runner.ApprovalRequest) (runner.ApprovalClaim, bool) {
	if rv == nil || rv.Reviewer == nil || rv.Reviewer.UserName == "" {
		return runner.ApprovalClaim{}, false
	}
	var decision runner.Decision
	switch rv.State {
	case sdk.ReviewStateApproved:
		decision = runner.Approve
	case sdk.ReviewStateRequestChanges:
		decision = runner.Reject
	default:
		return runner.ApprovalClaim{}, false
	}
	if !rv.Official || rv.Stale || rv.Dismissed || rv.CommitID != req.Commit || !rv.Submitted.After(req.PlannedAt) {
		return runner.ApprovalClaim{}, false
	}
	claim := runner.ApprovalClaim{
		Approver:    rv.Reviewer.UserName,
		Environment: req.Environment,
		PlanDigest:  req.PlanDigest,
		Decision:    decision,
		Source:      runner.SourceGiteaReview,
		SourceRef:   idKey(rv.ID),
		At:          rv.Submitted.UTC(),
	}
	if decision == runner.Reject {
		claim.Reason = strings.TrimSpace(rv.Body)
	}
	return claim, true
}

// checkRequest refuses a request no claim could be bound to; that is a
// bug in the caller, not something found on the forge.
func checkRequest(req runner.ApprovalRequest, activity string) error {
	switch {
	case req.PlanDigest == "":
		return runner.Errorf(runner.InternalError, "%s: the request names no plan digest", activity)
	case req.Environment == "":
		return runner.Errorf(runner.InternalError, "%s: the request names no environment", activity)
	}
	return nil
}
