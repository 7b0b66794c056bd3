package github

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"unicode/utf8"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// MaxCommentLength is the longest comment body GitHub accepts, in
// characters. The renderer truncates to fit; the adapter refuses what does
// not, rather than have GitHub reject the call.
const MaxCommentLength = 65536

// Commenter keeps one comment per marker on the pull request.
type Commenter struct {
	c *Client
	// kept is this pull request's comments, listed once for every
	// contract the process reports.
	kept *runner.KeptThread
	// me is the token's own login, asked once: "" for the workflow's
	// GITHUB_TOKEN and app tokens, which GitHub does not let ask.
	meOnce sync.Once
	me     string
	meErr  error
}

var (
	_ runner.PullRequestCommenter = (*Commenter)(nil)
	_ runner.CommentThread        = (*Commenter)(nil)
)

// Commenter keeps Nova's comments on the pull request.
// Everything reported through one Commenter shares one listing of the
// comments.
func (c *Client) Commenter() *Commenter {
	m := &Commenter{c: c}
	m.kept = runner.KeepThread(m)
	return m
}

// Thread is the pull request's comments as this Commenter keeps them: a
// report spread over several comments (a summary in parts) works on it.
func (m *Commenter) Thread() *runner.KeptThread { return m.kept }

// UpsertComment keeps one comment with marker, with body, on the pull
// request (runner.KeepComment says which comments are Nova's). The body
// must start with the marker, or the next run would not find it again
// and would post a second comment.
func (m *Commenter) UpsertComment(ctx context.Context, marker, body string) error {
	switch {
	case strings.TrimSpace(marker) == "":
		return runner.Errorf(runner.InternalError, "github: a comment marker is empty, and would match every comment")
	case !strings.HasPrefix(body, marker):
		return runner.Errorf(runner.InternalError, "github: the comment body does not start with its marker %q", marker)
	case utf8.RuneCountInString(body) > MaxCommentLength:
		return runner.Errorf(runner.InternalError, "github: the comment body has %d characters, more than the %d GitHub accepts",
			utf8.RuneCountInString(body), MaxCommentLength)
	}
	if err := m.c.needPullRequest(); err != nil {
		return err
	}
	return runner.KeepComment(ctx, m.kept, marker, body)
}

// Comments implements runner.CommentThread. A comment's poster is a bot
// when GitHub says its user's type is "Bot": an app, the workflow's
// github-actions[bot] included.
func (m *Commenter) Comments(ctx context.Context) ([]runner.ThreadComment, error) {
	if err := m.c.needPullRequest(); err != nil {
		return nil, err
	}
	comments, err := listAll(func(opts gh.ListOptions) ([]*gh.IssueComment, *gh.Response, error) {
		return m.c.gh.Issues.ListComments(ctx, m.c.owner, m.c.repo, m.c.pr, &gh.IssueListCommentsOptions{ListOptions: opts})
	})
	if err != nil {
		return nil, m.c.fail(ctx, err, permIssuesRead, "listing comments of pull request %d", m.c.pr)
	}
	out := make([]runner.ThreadComment, 0, len(comments))
	for _, cm := range comments {
		out = append(out, runner.ThreadComment{ID: cm.GetID(), Poster: cm.GetUser().GetLogin(), Bot: cm.GetUser().GetType() == "Bot",
			Body: cm.GetBody(), URL: cm.GetHTMLURL()})
	}
	return out, nil
}

// Me implements runner.CommentThread: the token's own login. GitHub
// answers GET /user for a personal token; the workflow's token and app
// tokens get 403 (or 401, 404), which means only that they are no person.
// An installation token (ghs_, the workflow's token among them) is no
// person by its format, and is not asked at all.
func (m *Commenter) Me(ctx context.Context) (string, error) {
	m.meOnce.Do(func() {
		if strings.HasPrefix(string(m.c.token), "ghs_") {
			return
		}
		u, _, err := m.c.gh.Users.Get(ctx, "")
		switch status := statusOfErr(err); {
		case err == nil:
			m.me = u.GetLogin()
		case status == http.StatusForbidden || status == http.StatusUnauthorized || status == http.StatusNotFound:
		default:
			m.meErr = m.c.fail(ctx, err, "no permission (any personal token may read its own user)", "reading the token's own user")
		}
	})
	return m.me, m.meErr
}

// EditComment implements runner.CommentThread.
func (m *Commenter) EditComment(ctx context.Context, id int64, body string) error {
	_, _, err := m.c.gh.Issues.EditComment(ctx, m.c.owner, m.c.repo, id, &gh.IssueComment{Body: &body})
	switch status := statusOfErr(err); {
	case err == nil:
		return nil
	case status == http.StatusForbidden || status == http.StatusNotFound:
		return fmt.Errorf("updating comment %d on pull request %d: %w: %w", id, m.c.pr, m.c.scrub(err, permPullsWrite), runner.ErrCommentNotEditable)
	}
	return m.c.fail(ctx, err, permPullsWrite, "updating comment %d on pull request %d", id, m.c.pr)
}

// PostComment implements runner.CommentThread.
func (m *Commenter) PostComment(ctx context.Context, body string) (runner.ThreadComment, error) {
	cm, _, err := m.c.gh.Issues.CreateComment(ctx, m.c.owner, m.c.repo, m.c.pr, &gh.IssueComment{Body: &body})
	if err != nil {
		return runner.ThreadComment{}, m.c.fail(ctx, err, permPullsWrite, "commenting on pull request %d", m.c.pr)
	}
	return runner.ThreadComment{ID: cm.GetID(), Poster: cm.GetUser().GetLogin(), Bot: cm.GetUser().GetType() == "Bot", Body: cm.GetBody(), URL: cm.GetHTMLURL()}, nil
}
