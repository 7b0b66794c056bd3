package github

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// EnvironmentApprovals is the approval source of a job that runs under
// `environment: <env>`: GitHub held the job until a required reviewer
// approved this workflow run, and the run's review history says who.
type EnvironmentApprovals struct {
	c     *Client
	runID int64
}

var _ runner.ApprovalSource = (*EnvironmentApprovals)(nil)

// EnvironmentApprovals reads the environment reviews of the workflow run
// the Client was configured with.
func (c *Client) EnvironmentApprovals() *EnvironmentApprovals {
	return &EnvironmentApprovals{c: c, runID: c.runID}
}

// Name is the source's name in records.
func (s *EnvironmentApprovals) Name() string { return runner.SourceGitHubEnvironment }

// environmentApproval is one entry of GET .../actions/runs/{run_id}/approvals
// (go-github v66 has no type for it).
type environmentApproval struct {
	Environments []struct {
		Name string `json:"name"`
	} `json:"environments"`
	State   string   `json:"state"`
	User    *gh.User `json:"user"`
	Comment string   `json:"comment"`
}

// Claims returns the approvals and rejections of req.Environment recorded
// on this workflow run. A reviewer approves a run, not a plan: the claim is
// bound to req.PlanDigest only when the plan bundle was made by this very
// run (req.ForgeRun), since then the job GitHub released is the one that
// applies that bundle. For a bundle from any other run there are no claims.
// The history carries no time; At is left zero.
func (s *EnvironmentApprovals) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	if s.runID <= 0 {
		return nil, runner.Errorf(runner.ConfigInvalid, "github: no workflow run id, so there are no environment approvals to read")
	}
	run := strconv.FormatInt(s.runID, 10)
	if req.ForgeRun != run {
		return nil, nil
	}
	if req.PlanDigest == "" {
		return nil, runner.Errorf(runner.InternalError, "github: an approval request without a plan digest")
	}
	entries, err := listAll(func(opts gh.ListOptions) ([]*environmentApproval, *gh.Response, error) {
		u := fmt.Sprintf("repos/%s/%s/actions/runs/%d/approvals?per_page=%d", s.c.owner, s.c.repo, s.runID, opts.PerPage)
		if opts.Page > 0 {
			u += fmt.Sprintf("&page=%d", opts.Page)
		}
		r, err := s.c.gh.NewRequest("GET", u, nil)
		if err != nil {
			return nil, nil, err
		}
		var page []*environmentApproval
		resp, err := s.c.gh.Do(ctx, r, &page)
		return page, resp, err
	})
	if err != nil {
		return nil, s.c.fail(ctx, err, permActionsRead, "reading the environment approvals of workflow run %d", s.runID)
	}
	var claims []runner.ApprovalClaim
	for _, e := range entries {
		var d runner.Decision
		switch e.State {
		case "approved":
			d = runner.Approve
		case "rejected":
			d = runner.Reject
		default:
			continue
		}
		login := e.User.GetLogin()
		if login == "" || !e.covers(req.Environment) {
			continue
		}
		c := runner.ApprovalClaim{
			Approver:    login,
			Environment: req.Environment,
			PlanDigest:  req.PlanDigest,
			Decision:    d,
			Source:      runner.SourceGitHubEnvironment,
			SourceRef:   fmt.Sprintf("%s/%s/%s", run, login, req.Environment),
		}
		if d == runner.Reject {
			c.Reason = e.Comment
		}
		claims = append(claims, c)
	}
	return claims, nil
}

// covers reports whether the review was given for env. GitHub compares
// environment names without regard to case.
func (e *environmentApproval) covers(env runner.Environment) bool {
	for _, x := range e.Environments {
		if strings.EqualFold(x.Name, string(env)) {
			return true
		}
	}
	return false
}
