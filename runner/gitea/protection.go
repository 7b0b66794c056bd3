package gitea

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/nova-platform/nova/runner"
)

var _ runner.BranchGuard = (*Client)(nil)

// ForcePushRefused reports whether Gitea refuses force-pushes to branch of
// owner/repo, and says why not when it does not. A protected branch
// refuses them unless its rule enables force-pushing (Gitea 1.23's
// enable_force_push); a rule Nova's token may not read is taken as
// protection's default, which refuses them. A branch that does not exist
// yet (an evidence repository before its first event) has no history to
// roll back: it is taken as guarded, saying so unless a rule named after
// it is there to cover it once the first push creates it; from then on
// it must be protected. Deleting a protected branch is refused as
// force-pushing it is, so a missing branch is never one that was
// protected.
func (c *Client) ForcePushRefused(ctx context.Context, owner, repo, branch string) (bool, string, error) {
	activity := fmt.Sprintf("reading branch %s of %s/%s", branch, owner, repo)
	b, resp, err := c.api(ctx).GetRepoBranch(owner, repo, branch)
	exists := err == nil
	switch {
	case err != nil && (resp == nil || resp.StatusCode != http.StatusNotFound):
		return false, "", c.fail(ctx, activity, resp, err)
	case exists && !b.Protected:
		return false, fmt.Sprintf("branch %s of %s/%s is not protected: anyone who may push to it may force-push", branch, owner, repo), nil
	}
	rule := branch
	if exists && b.EffectiveBranchProtectionName != "" {
		rule = b.EffectiveBranchProtectionName
	}
	var p struct {
		EnableForcePush bool `json:"enable_force_push"`
	}
	u := fmt.Sprintf("%s/api/v1/repos/%s/%s/branch_protections/%s", c.url, url.PathEscape(owner), url.PathEscape(repo), url.PathEscape(rule))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return false, "", runner.Errorf(runner.InternalError, "%s: %w", activity, err)
	}
	req.Header.Set("Authorization", "token "+c.token)
	req.Header.Set("User-Agent", userAgent)
	r, err := c.http.Do(req)
	if err != nil {
		return false, "", runner.Errorf(runner.ForgeAPIFailed, "%s: %w", activity, c.redactErr(err))
	}
	defer r.Body.Close()
	switch r.StatusCode {
	case http.StatusOK:
	case http.StatusForbidden, http.StatusNotFound:
		if !exists {
			return true, fmt.Sprintf("branch %s of %s/%s does not exist yet, so it holds nothing to roll back; the first push creates it: protect it then (this token reads no rule named after it, which takes admin on the repository)", branch, owner, repo), nil
		}
		return true, "", nil
	default:
		return false, "", runner.Errorf(runner.ForgeAPIFailed, "%s: branch protection %s: %s", activity, rule, r.Status)
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 1<<20)).Decode(&p); err != nil {
		return false, "", runner.Errorf(runner.ForgeAPIFailed, "%s: reading branch protection %s: %w", activity, rule, err)
	}
	if p.EnableForcePush {
		return false, fmt.Sprintf("branch protection %s of %s/%s enables force-pushing", rule, owner, repo), nil
	}
	return true, "", nil
}
