package github

import (
	"context"
	"fmt"

	"github.com/nova-platform/nova/runner"
)

// PullRequestStates tells whether pull requests of the repository are
// still open: the one holding an environment's lock holds it until then.
type PullRequestStates struct{ c *Client }

var _ runner.PullRequestStates = (*PullRequestStates)(nil)

// PullRequestStates asks about any pull request of the repository, not
// only the run's own.
func (c *Client) PullRequestStates() *PullRequestStates { return &PullRequestStates{c: c} }

// PullRequestState implements runner.PullRequestStates. GitHub reports a
// merged pull request as closed, with merged set.
func (p *PullRequestStates) PullRequestState(ctx context.Context, number int64) (runner.PullRequestState, error) {
	if number <= 0 || int64(int(number)) != number {
		return "", runner.Errorf(runner.InternalError, "github: pull request number %d is not one", number)
	}
	pr, _, err := p.c.gh.PullRequests.Get(ctx, p.c.owner, p.c.repo, int(number))
	if err != nil {
		return "", p.c.fail(ctx, err, permPullsRead, "reading the state of pull request %d", number)
	}
	switch {
	case pr.GetMerged() || pr.MergedAt != nil:
		return runner.PullRequestMerged, nil
	case pr.GetState() == "open":
		return runner.PullRequestOpen, nil
	case pr.GetState() == "closed":
		return runner.PullRequestClosed, nil
	}
	return "", runner.Errorf(runner.ForgeAPIFailed, "reading the state of pull request %d: %w", number,
		fmt.Errorf("GitHub says its state is %q, neither open nor closed", pr.GetState()))
}
