package github

import (
	"context"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// MaxCommentLength is the longest comment body GitHub accepts, in
// characters. The renderer truncates to fit; the adapter refuses what does
// not, rather than have GitHub reject the call.
const MaxCommentLength = 65536

// Commenter keeps one comment per marker on the pull request.
type Commenter struct{ c *Client }

var _ runner.PullRequestCommenter = (*Commenter)(nil)

// Commenter keeps Nova's comments on the pull request.
func (c *Client) Commenter() *Commenter { return &Commenter{c: c} }

// UpsertComment updates the first comment whose body contains marker, or
// creates one. The body must contain the marker, or the next run would not
// find it again and would post a second comment.
func (m *Commenter) UpsertComment(ctx context.Context, marker, body string) error {
	switch {
	case strings.TrimSpace(marker) == "":
		return runner.Errorf(runner.InternalError, "github: a comment marker is empty, and would match every comment")
	case !strings.Contains(body, marker):
		return runner.Errorf(runner.InternalError, "github: the comment body does not contain its marker %q", marker)
	case utf8.RuneCountInString(body) > MaxCommentLength:
		return runner.Errorf(runner.InternalError, "github: the comment body has %d characters, more than the %d GitHub accepts",
			utf8.RuneCountInString(body), MaxCommentLength)
	}
	if err := m.c.needPullRequest(); err != nil {
		return err
	}
	comments, err := listAll(func(opts gh.ListOptions) ([]*gh.IssueComment, *gh.Response, error) {
		return m.c.gh.Issues.ListComments(ctx, m.c.owner, m.c.repo, m.c.pr, &gh.IssueListCommentsOptions{ListOptions: opts})
	})
	if err != nil {
		return m.c.fail(ctx, err, permIssuesRead, "listing comments of pull request %d", m.c.pr)
	}
	for _, cm := range comments {
		if !strings.Contains(cm.GetBody(), marker) {
			continue
		}
		if cm.GetBody() == body {
			return nil
		}
		if _, _, err := m.c.gh.Issues.EditComment(ctx, m.c.owner, m.c.repo, cm.GetID(), &gh.IssueComment{Body: &body}); err != nil {
			return m.c.fail(ctx, err, permPullsWrite, "updating comment %d on pull request %d", cm.GetID(), m.c.pr)
		}
		return nil
	}
	if _, _, err := m.c.gh.Issues.CreateComment(ctx, m.c.owner, m.c.repo, m.c.pr, &gh.IssueComment{Body: &body}); err != nil {
		return m.c.fail(ctx, err, permPullsWrite, "commenting on pull request %d", m.c.pr)
	}
	return nil
}
