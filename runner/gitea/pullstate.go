package gitea

import (
	"context"
	"fmt"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// PullRequestStates tells whether pull requests of the repository are
// still open: the one holding an environment's lock holds it until then.
type PullRequestStates struct{ c *Client }

var _ runner.PullRequestStates = (*PullRequestStates)(nil)

// PullRequestStates asks about any pull request of the repository, not
// only the run's own.
func (c *Client) PullRequestStates() *PullRequestStates { return &PullRequestStates{c: c} }

// PullRequestState implements runner.PullRequestStates. Gitea reports a
// merged pull request as closed, with merged set.
func (p *PullRequestStates) PullRequestState(ctx context.Context, number int64) (runner.PullRequestState, error) {
	c := p.c
	activity := fmt.Sprintf("reading the state of pull request %s/%s#%d", c.owner, c.repo, number)
	if number <= 0 {
		return "", runner.Errorf(runner.InternalError, "%s: not a pull request number", activity)
	}
	pr, resp, err := c.api(ctx).GetPullRequest(c.owner, c.repo, number)
	if err != nil {
		return "", c.fail(ctx, activity, resp, err)
	}
	switch {
	case pr.HasMerged || pr.Merged != nil:
		return runner.PullRequestMerged, nil
	case pr.State == sdk.StateOpen:
		return runner.PullRequestOpen, nil
	case pr.State == sdk.StateClosed:
		return runner.PullRequestClosed, nil
	}
	return "", runner.Errorf(runner.ForgeAPIFailed, "%s: gitea says its state is %q, neither open nor closed", activity, pr.State)
}
