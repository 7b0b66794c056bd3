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
// owner/repo, and says why not when it does not (or, refused, what to
// know: a branch that does not exist yet holds nothing to roll back). A protected branch
// refuses them unless its rule enables force-pushing (Gitea 1.23's
// enable_force_push); a rule Nova's token may not read is taken as
// protection's default, which refuses them.
func (c *Client) ForcePushRefused(ctx context.Context, owner, repo, branch string) (bool, string, error) {
	activity := fmt.Sprintf("reading branch %s of %s/%s", branch, owner, repo)
	b, resp, err := c.api(ctx).GetRepoBranch(owner, repo, branch)
	if resp != nil && resp.Response != nil && resp.StatusCode == http.StatusNotFound {
		return true, fmt.Sprintf("branch %s of %s/%s does not exist yet, so nothing on it can be rolled back; it is created by the first push: protect it", branch, owner, repo), nil
	}
	if err != nil {
		return false, "", c.fail(ctx, activity, resp, err)
	}
	if !b.Protected {
		return false, fmt.Sprintf("branch %s of %s/%s is not protected: anyone who may push to it may force-push", branch, owner, repo), nil
	}
	rule := b.EffectiveBranchProtectionName
	if rule == "" {
		rule = branch
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
