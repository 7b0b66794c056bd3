package gitea

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"

	"github.com/nova-platform/nova/runner"
)

// TrustedBase reads files of the repository's trusted base
// (runner.TrustedBase): the default branch, or the pull request's base
// when Gitea reports that branch protected, at the commit Gitea says the
// branch is at.
type TrustedBase struct{ c *Client }

var _ runner.TrustedBase = (*TrustedBase)(nil)

// TrustedBase reads files of the trusted base.
func (c *Client) TrustedBase() *TrustedBase { return &TrustedBase{c: c} }

// TrustedFile implements runner.TrustedBase.
func (t *TrustedBase) TrustedFile(ctx context.Context, path string) ([]byte, runner.BaseCommit, error) {
	// Resolved on every read: runner.ForgeApprovers reads the one file
	// a run needs once.
	branch, sha, err := t.resolve(ctx)
	if err != nil {
		return nil, runner.BaseCommit{}, err
	}
	where := runner.BaseCommit{Branch: branch, Commit: sha}
	c := t.c
	activity := fmt.Sprintf("reading %s at %s", path, where)
	data, resp, err := c.api(ctx).GetFile(c.owner, c.repo, sha, path)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, where, fmt.Errorf("%s is not in the trusted base %s: only a config already merged there counts (%w)", path, where, fs.ErrNotExist)
	}
	if err != nil {
		return nil, where, c.fail(ctx, activity, resp, err)
	}
	return data, where, nil
}

// resolve names the trusted branch and the commit it is at.
func (t *TrustedBase) resolve(ctx context.Context) (string, string, error) {
	c := t.c
	activity := fmt.Sprintf("reading repository %s/%s", c.owner, c.repo)
	repo, resp, err := c.api(ctx).GetRepo(c.owner, c.repo)
	if err != nil {
		return "", "", c.fail(ctx, activity, resp, err)
	}
	branch := repo.DefaultBranch
	if branch == "" {
		return "", "", runner.Errorf(runner.ForgeAPIFailed, "%s: gitea names no default branch", activity)
	}
	if c.pull > 0 {
		pr, err := c.pullRequest(ctx)
		if err != nil {
			return "", "", err
		}
		if base := pr.Base.Ref; base != "" && base != branch {
			b, resp, err := c.api(ctx).GetRepoBranch(c.owner, c.repo, base)
			if err != nil {
				return "", "", c.fail(ctx, "reading branch "+base, resp, err)
			}
			if b.Protected {
				branch = base
			}
		}
	}
	b, resp, err := c.api(ctx).GetRepoBranch(c.owner, c.repo, branch)
	if err != nil {
		return "", "", c.fail(ctx, "reading branch "+branch, resp, err)
	}
	if b.Commit == nil || b.Commit.ID == "" {
		return "", "", runner.Errorf(runner.ForgeAPIFailed, "reading branch %s: gitea names no commit", branch)
	}
	return branch, b.Commit.ID, nil
}
