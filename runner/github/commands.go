package github

import (
	"context"
	"strconv"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Comments is the approval source of /nova commands in the pull request's
// comments (runner.ParseCommand has their form).
type Comments struct{ c *Client }

var _ runner.ApprovalSource = (*Comments)(nil)

// Comments reads /nova commands from the pull request's comments.
func (c *Client) Comments() *Comments { return &Comments{c: c} }

// Name is the source's name in records.
func (s *Comments) Name() string { return runner.SourceGitHubComment }

// Claims returns the commands on req's plan in comments created after it
// went on show (runner.CommentClaim). GitHub keeps a comment's author and
// created_at when anyone with write access edits its text, so a comment
// whose updated_at differs from its created_at is edited: it never
// approves.
func (s *Comments) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	if err := needPlan(req, false); err != nil {
		return nil, err
	}
	if err := s.c.needPullRequest(); err != nil {
		return nil, err
	}
	// Timestamps are kept to the second: a comment of the plan's own
	// second is listed, and CommentAfterPlan decides.
	since := req.PlannedAt.Truncate(time.Second)
	comments, err := listAll(func(opts gh.ListOptions) ([]*gh.IssueComment, *gh.Response, error) {
		// since filters on updated_at; created_at is checked below.
		return s.c.gh.Issues.ListComments(ctx, s.c.owner, s.c.repo, s.c.pr,
			&gh.IssueListCommentsOptions{Since: &since, ListOptions: opts})
	})
	if err != nil {
		return nil, s.c.fail(ctx, err, permIssuesRead, "listing comments of pull request %d", s.c.pr)
	}
	var claims []runner.ApprovalClaim
	for _, cm := range comments {
		created := cm.GetCreatedAt().Time
		c := runner.PostedComment{Poster: cm.GetUser().GetLogin(), Ref: strconv.FormatInt(cm.GetID(), 10), Body: cm.GetBody(), Created: created,
			Edited: !cm.GetUpdatedAt().Time.Equal(created)}
		if claim, ok := runner.CommentClaim(c, req, runner.SourceGitHubComment); ok {
			claims = append(claims, claim)
		}
	}
	return claims, nil
}
