package gitea

import (
	"context"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Comments finds /nova commands in the pull request's comments
// (runner.ParseCommand has their form).
type Comments struct{ c *Client }

var _ runner.ApprovalSource = (*Comments)(nil)

// Name is the source recorded with the claims.
func (*Comments) Name() string { return runner.SourceGiteaComment }

// Claims returns the commands on req's plan in comments posted after it
// went on show (see commentClaim).
func (s *Comments) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	activity := "reading comment approvals"
	if err := checkRequest(req, activity); err != nil {
		return nil, err
	}
	c := s.c
	if err := c.needPull(activity); err != nil {
		return nil, err
	}
	// Gitea keeps times to the second: a comment of the plan's own second
	// is listed, and CommentAfterPlan decides.
	comments, err := c.listComments(ctx, req.PlannedAt.Truncate(time.Second))
	if err != nil {
		return nil, err
	}
	var claims []runner.ApprovalClaim
	for _, cm := range comments {
		if claim, ok := commentClaim(cm, req); ok {
			claims = append(claims, claim)
		}
	}
	return claims, nil
}

// commentClaim reads one comment as a claim on req's plan
// (runner.CommentClaim). Gitea lets anyone with write access to pull
// requests edit anyone's comment, so an edited comment's text may not be
// its poster's: it never approves. (Gitea keeps times to the second, so an
// edit within the second of posting goes unseen.)
func commentClaim(cm *sdk.Comment, req runner.ApprovalRequest) (runner.ApprovalClaim, bool) {
	if cm == nil || cm.Poster == nil {
		return runner.ApprovalClaim{}, false
	}
	return runner.CommentClaim(runner.PostedComment{Poster: cm.Poster.UserName, Ref: idKey(cm.ID), Body: cm.Body, Created: cm.Created,
		Edited: cm.Updated.After(cm.Created)}, req, runner.SourceGiteaComment)
}

// listComments reads the pull request's comments, those updated since
// since (zero for all); a comment created later was updated later too.
func (c *Client) listComments(ctx context.Context, since time.Time) ([]*sdk.Comment, error) {
	return paginate(ctx, c, "listing the comments of "+c.prName(),
		func(cm *sdk.Comment) string {
			if cm == nil {
				return ""
			}
			return idKey(cm.ID)
		},
		func(o sdk.ListOptions) ([]*sdk.Comment, *sdk.Response, error) {
			return c.api(ctx).ListIssueComments(c.owner, c.repo, c.pull, sdk.ListIssueCommentOptions{ListOptions: o, Since: since})
		})
}
