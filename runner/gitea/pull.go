package gitea

import (
	"context"
	"sync"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// PullRequest is the change under review, and Nova's comment on it.
type PullRequest struct {
	c *Client
	// kept is the pull request's comments, listed once for every
	// contract the process reports through this PullRequest.
	keptOnce sync.Once
	kept     *runner.KeptThread
}

var (
	_ runner.ChangeReader         = (*PullRequest)(nil)
	_ runner.PullRequestCommenter = (*PullRequest)(nil)
)

// Change returns the pull request's head and base commits and its authors:
// whoever opened it, then the author of each of its commits, once each, in
// that order. A commit whose author email Gitea matches to no account is
// listed as unlinked: anyone may have written it.
func (p *PullRequest) Change(ctx context.Context) (runner.Change, error) {
	c := p.c
	pr, err := c.pullRequest(ctx)
	if err != nil {
		return runner.Change{}, err
	}
	commits, err := paginate(ctx, c, "listing the commits of "+c.prName(),
		func(cm *sdk.Commit) string {
			if cm == nil || cm.CommitMeta == nil {
				return ""
			}
			return cm.SHA
		},
		func(o sdk.ListOptions) ([]*sdk.Commit, *sdk.Response, error) {
			return c.api(ctx).ListPullRequestCommits(c.owner, c.repo, c.pull, sdk.ListPullRequestCommitsOptions{ListOptions: o})
		})
	if err != nil {
		return runner.Change{}, err
	}
	ch := runner.Change{Head: pr.Head.Sha, Base: pr.Base.Sha}
	seen := map[runner.Login]bool{}
	add := func(u *sdk.User) bool {
		if u == nil || u.UserName == "" {
			return false
		}
		if l := runner.LoginOf(u.UserName); !seen[l] {
			seen[l] = true
			ch.Authors = append(ch.Authors, l)
		}
		return true
	}
	add(pr.Poster)
	for _, cm := range commits {
		if cm == nil || cm.CommitMeta == nil {
			return runner.Change{}, runner.Errorf(runner.ForgeAPIFailed, "listing the commits of %s: Gitea returned a commit without its id", c.prName())
		}
		if !add(cm.Author) {
			ch.Unlinked = append(ch.Unlinked, cm.SHA)
		}
	}
	return ch, nil
}
