package github

import (
	"context"
	"fmt"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// PullRequest reads the change under review from the configured pull
// request.
type PullRequest struct{ c *Client }

var _ runner.ChangeReader = (*PullRequest)(nil)

// PullRequest reads the change under review.
func (c *Client) PullRequest() *PullRequest { return &PullRequest{c: c} }

// Change returns the pull request's author and its commits' authors (none
// of whom may approve it), its head and its base. Commits whose author
// GitHub cannot link to an account are skipped: there is no login to
// exclude. A pull request with more commits than GitHub lists (250) is an
// error, since the authors beyond them would go unseen.
func (p *PullRequest) Change(ctx context.Context) (runner.Change, error) {
	pr, err := p.c.pullRequest(ctx)
	if err != nil {
		return runner.Change{}, err
	}
	commits, err := listAll(func(opts gh.ListOptions) ([]*gh.RepositoryCommit, *gh.Response, error) {
		return p.c.gh.PullRequests.ListCommits(ctx, p.c.owner, p.c.repo, p.c.pr, &opts)
	})
	if err != nil {
		return runner.Change{}, p.c.fail(ctx, err, permPullsRead, "listing commits of pull request %d", p.c.pr)
	}
	if n := pr.GetCommits(); n > len(commits) {
		return runner.Change{}, runner.Errorf(runner.ForgeAPIFailed,
			"listing commits of pull request %d: %w", p.c.pr,
			fmt.Errorf("GitHub listed %d of its %d commits, so not all of its authors are known", len(commits), n))
	}
	ch := runner.Change{Head: pr.GetHead().GetSHA(), Base: pr.GetBase().GetSHA()}
	seen := map[string]bool{}
	add := func(login string) {
		if login != "" && !seen[login] {
			seen[login] = true
			ch.Authors = append(ch.Authors, login)
		}
	}
	add(pr.GetUser().GetLogin())
	for _, c := range commits {
		add(c.GetAuthor().GetLogin())
	}
	if ch.Head == "" || ch.Base == "" {
		return runner.Change{}, runner.Errorf(runner.ForgeAPIFailed, "reading pull request %d: %w", p.c.pr,
			fmt.Errorf("GitHub returned it without a head or base commit"))
	}
	return ch, nil
}
