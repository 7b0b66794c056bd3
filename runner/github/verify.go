package github

import (
	"context"
	"net/http"

	"github.com/nova-platform/nova/runner"
)

var _ runner.CommitVerifier = (*Client)(nil)

// VerifyCommit implements runner.CommitVerifier with what GitHub says of
// the commit's signature: verified when GitHub verified it against a key
// its signer registered with GitHub (the "Verified" badge); signed but
// unverified when GitHub could not verify it; unsigned when it carries no
// signature. A commit GitHub does not have is unknown.
func (c *Client) VerifyCommit(ctx context.Context, _, commit string) (runner.CommitSignature, error) {
	rc, resp, err := c.gh.Repositories.GetCommit(ctx, c.owner, c.repo, commit, nil)
	if resp != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnprocessableEntity) {
		return runner.CommitUnknown, nil
	}
	if err != nil {
		return "", c.fail(ctx, err, permContentsRead, "reading commit %s", commit)
	}
	v := rc.GetCommit().GetVerification()
	switch {
	case v == nil || v.GetSignature() == "":
		return runner.CommitUnsigned, nil
	case v.GetVerified():
		return runner.CommitVerified, nil
	}
	return runner.CommitUnverified, nil
}
