package gitea

import (
	"context"
	"net/http"

	"github.com/nova-platform/nova/runner"
)

var _ runner.CommitVerifier = (*Client)(nil)

// VerifyCommit implements runner.CommitVerifier with what Gitea says of
// the commit's signature: verified when Gitea verified it against a key
// its signer added to their Gitea account (the key's email one of theirs);
// signed but unverified when it could not; unsigned when the commit
// carries no signature. A commit Gitea does not have is unknown.
func (c *Client) VerifyCommit(ctx context.Context, _, commit string) (runner.CommitSignature, error) {
	cm, resp, err := c.api(ctx).GetSingleCommit(c.owner, c.repo, commit)
	if resp != nil && resp.Response != nil && (resp.StatusCode == http.StatusNotFound || resp.StatusCode == http.StatusUnprocessableEntity) {
		return runner.CommitUnknown, nil
	}
	if err != nil {
		return "", c.fail(ctx, "reading commit "+commit, resp, err)
	}
	if cm == nil || cm.RepoCommit == nil || cm.RepoCommit.Verification == nil || cm.RepoCommit.Verification.Signature == "" {
		return runner.CommitUnsigned, nil
	}
	if cm.RepoCommit.Verification.Verified {
		return runner.CommitVerified, nil
	}
	return runner.CommitUnverified, nil
}
