package github

import (
	"context"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Reviews is the approval source for repositories without environment
// protection: an APPROVED pull request review approves the plan,
// CHANGES_REQUESTED rejects it.
type Reviews struct{ c *Client }

var _ runner.ApprovalSource = (*Reviews)(nil)

// Reviews reads the pull request's reviews.
func (c *Client) Reviews() *Reviews { return &Reviews{c: c} }

// Name is the source's name in records.
func (s *Reviews) Name() string { return runner.SourceGitHubReview }

// Claims returns the reviews that can only have been about this plan: given
// on the pull request's current head, which must be the planned commit (a
// review of an older head approved other code), and submitted after the
// plan was recorded (an earlier one cannot have seen it). A review names no
// environment: it is reported for req.Environment, and the import decides
// whether its author approves that environment.
func (s *Reviews) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	if err := needPlan(req, true); err != nil {
		return nil, err
	}
	pr, err := s.c.pullRequest(ctx)
	if err != nil {
		return nil, err
	}
	head := pr.GetHead().GetSHA()
	if head == "" || !strings.EqualFold(head, req.Commit) {
		return nil, nil
	}
	reviews, err := listAll(func(opts gh.ListOptions) ([]*gh.PullRequestReview, *gh.Response, error) {
		return s.c.gh.PullRequests.ListReviews(ctx, s.c.owner, s.c.repo, s.c.pr, &opts)
	})
	if err != nil {
		return nil, s.c.fail(ctx, err, permPullsRead, "listing reviews of pull request %d", s.c.pr)
	}
	var claims []runner.ApprovalClaim
	for _, r := range reviews {
		var d runner.Decision
		switch r.GetState() {
		case "APPROVED":
			d = runner.Approve
		case "CHANGES_REQUESTED":
			d = runner.Reject
		default: // COMMENTED, DISMISSED, PENDING
			continue
		}
		at := r.GetSubmittedAt().Time
		login := r.GetUser().GetLogin()
		if login == "" || !strings.EqualFold(r.GetCommitID(), head) || !at.After(req.PlannedAt) {
			continue
		}
		c := runner.ApprovalClaim{
			Approver:    login,
			Environment: req.Environment,
			PlanDigest:  req.PlanDigest,
			Decision:    d,
			Source:      runner.SourceGitHubReview,
			SourceRef:   strconv.FormatInt(r.GetID(), 10),
			At:          at.UTC(),
		}
		if d == runner.Reject {
			c.Reason = r.GetBody()
		}
		claims = append(claims, c)
	}
	return claims, nil
}

// needPlan checks that a request says which plan it is about; without a
// time or a commit a source could not tell a fresh approval from a stale
// one, and must not guess.
func needPlan(req runner.ApprovalRequest, commit bool) error {
	switch {
	case req.PlanDigest == "":
		return runner.Errorf(runner.InternalError, "github: an approval request without a plan digest")
	case req.PlannedAt.IsZero():
		return runner.Errorf(runner.InternalError, "github: an approval request without the time its plan was recorded")
	case commit && req.Commit == "":
		return runner.Errorf(runner.InternalError, "github: an approval request without the planned commit")
	}
	return nil
}
