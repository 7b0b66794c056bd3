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
// of whom may approve it), its head and its base. A commit whose author
// GitHub cannot link to an account is listed as unlinked: anyone may have
// written it, an approver under an email of their own included. A pull
// request with more commits than GitHub lists (250) is an error, since the
// authors beyond them would go unseen.
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
	seen := map[runner.Login]bool{}
	add := func(login string) {
		l := runner.LoginOf(login)
		if !seen[l] {
			seen[l] = true
			ch.Authors = append(ch.Authors, l)
		}
	}
	if login := pr.GetUser().GetLogin(); login != "" {
		add(login)
	}
	for _, c := range commits {
		if login := c.GetAuthor().GetLogin(); login != "" {
			add(login)
		} else {
			ch.Unlinked = append(ch.Unlinked, c.GetSHA())
		}
	}
	if ch.Head == "" || ch.Base == "" {
		return runner.Change{}, runner.Errorf(runner.ForgeAPIFailed, "reading pull request %d: %w", p.c.pr,
			fmt.Errorf("GitHub returned it without a head or base commit"))
	}
	return ch, nil
}
