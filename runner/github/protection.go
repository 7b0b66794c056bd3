package github

import (
	"context"
	"fmt"
	"net/http"

	"github.com/nova-platform/nova/runner"
)

// ForcePushRefused reports whether GitHub refuses force-pushes to branch of
// owner/repo, and says why not when it does not: a ruleset rule blocking
// non-fast-forward pushes, or classic branch protection that does not
// allow force pushes. Classic protection refuses them unless allowed; when
// its settings are not readable with this token (they need admin), a
// protected branch is taken as that default.
func (c *Client) ForcePushRefused(ctx context.Context, owner, repo, branch string) (bool, string, error) {
	rules, resp, err := c.gh.Repositories.GetRulesForBranch(ctx, owner, repo, branch)
	if err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound) {
		return false, "", c.fail(ctx, err, permContentsRead, "reading the rules of branch %s of %s/%s", branch, owner, repo)
	}
	for _, r := range rules {
		if r.Type == "non_fast_forward" {
			return true, "", nil
		}
	}
	b, resp, err := c.gh.Repositories.GetBranch(ctx, owner, repo, branch, 1)
	if resp != nil && resp.StatusCode == http.StatusNotFound {
		// Before the first event: nothing to roll back yet. Deleting a
		// protected branch is refused as force-pushing it is, so a
		// missing branch was never a protected one.
		return true, fmt.Sprintf("branch %s of %s/%s does not exist yet, so it holds nothing to roll back; the first push creates it: protect it then, or cover its name with a ruleset that blocks force pushes now", branch, owner, repo), nil
	}
	if err != nil {
		return false, "", c.fail(ctx, err, permContentsRead, "reading branch %s of %s/%s", branch, owner, repo)
	}
	if !b.GetProtected() {
		return false, fmt.Sprintf("branch %s of %s/%s is neither protected nor covered by a ruleset that blocks force pushes", branch, owner, repo), nil
	}
	p, resp, err := c.gh.Repositories.GetBranchProtection(ctx, owner, repo, branch)
	switch {
	case err == nil:
		if p.GetAllowForcePushes() != nil && p.GetAllowForcePushes().Enabled {
			return false, fmt.Sprintf("the protection of branch %s of %s/%s allows force pushes", branch, owner, repo), nil
		}
		return true, "", nil
	case resp != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound):
		return true, "", nil
	}
	return false, "", c.fail(ctx, err, permContentsRead, "reading the protection of branch %s of %s/%s", branch, owner, repo)
}

var _ runner.BranchGuard = (*Client)(nil)
