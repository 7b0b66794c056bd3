package github

import (
	"context"
	"fmt"
	"io/fs"
	"net/http"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// permContentsRead is what reading the trusted base's files needs.
const permContentsRead = "contents: read"

// TrustedBase reads files of the repository's trusted base
// (runner.TrustedBase): the default branch, or the pull request's base
// when GitHub reports that branch protected, at the commit GitHub says the
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
	file, _, resp, err := c.gh.Repositories.GetContents(ctx, c.owner, c.repo, path, &gh.RepositoryContentGetOptions{Ref: sha})
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		return nil, where, fmt.Errorf("%s is not in the trusted base %s: only a config already merged there counts (%w)", path, where, fs.ErrNotExist)
	}
	if err != nil {
		return nil, where, c.fail(ctx, err, permContentsRead, "reading %s at %s", path, where)
	}
	if file == nil {
		return nil, where, fmt.Errorf("%s at %s is a directory, not a file", path, where)
	}
	text, err := file.GetContent()
	if err != nil {
		return nil, where, fmt.Errorf("decoding %s at %s: %w", path, where, err)
	}
	return []byte(text), where, nil
}

// resolve names the trusted branch and the commit it is at.
func (t *TrustedBase) resolve(ctx context.Context) (string, string, error) {
	c := t.c
	repo, _, err := c.gh.Repositories.Get(ctx, c.owner, c.repo)
	if err != nil {
		return "", "", c.fail(ctx, err, permContentsRead, "reading repository %s/%s", c.owner, c.repo)
	}
	branch := repo.GetDefaultBranch()
	if branch == "" {
		return "", "", runner.Errorf(runner.ForgeAPIFailed, "reading repository %s/%s: GitHub names no default branch", c.owner, c.repo)
	}
	if c.pr > 0 {
		pr, err := c.pullRequest(ctx)
		if err != nil {
			return "", "", err
		}
		if base := pr.GetBase().GetRef(); base != "" && base != branch {
			b, _, err := c.gh.Repositories.GetBranch(ctx, c.owner, c.repo, base, 1)
			if err != nil {
				return "", "", c.fail(ctx, err, permContentsRead, "reading branch %s", base)
			}
			if b.GetProtected() {
				branch = base
			}
		}
	}
	b, _, err := c.gh.Repositories.GetBranch(ctx, c.owner, c.repo, branch, 1)
	if err != nil {
		return "", "", c.fail(ctx, err, permContentsRead, "reading branch %s", branch)
	}
	sha := b.GetCommit().GetSHA()
	if sha == "" {
		return "", "", runner.Errorf(runner.ForgeAPIFailed, "reading branch %s: GitHub names no commit", branch)
	}
	return branch, sha, nil
}
