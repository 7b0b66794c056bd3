package gitea

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// MaxCommentLength is the longest comment body UpsertComment sends, in
// characters: GitHub's limit, kept on Gitea too so one rendering fits both.
const MaxCommentLength = 65536

// actionsUserID is the id Gitea gives its Actions user (gitea-actions),
// which posts what a workflow's job token posts. No account signs in as
// it, and no one can register its id.
const actionsUserID = -2

var _ runner.CommentThread = (*PullRequest)(nil)

// UpsertComment keeps one comment with marker, with body, on the pull
// request (runner.KeepComment says which comments are Nova's: the token's
// own user's and the Actions user's, so the job token's comments are
// found after the workflow switched to a personal token). The body must
// start with the marker.
func (p *PullRequest) UpsertComment(ctx context.Context, marker, body string) error {
	c := p.c
	activity := "updating nova's comment on " + c.prName()
	if err := c.needPull(activity); err != nil {
		return err
	}
	if strings.TrimSpace(marker) == "" || !strings.HasPrefix(body, marker) {
		return runner.Errorf(runner.InternalError, "%s: the body must start with a marker to find the comment by", activity)
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentLength {
		return runner.Errorf(runner.ForgeAPIFailed, "%s: the body is %d characters, more than the %d a comment may hold", activity, n, MaxCommentLength)
	}
	if err := runner.KeepComment(ctx, p.thread(), marker, body); err != nil {
		return runner.Errorf(runner.ReasonOf(err), "%s: %w", activity, err)
	}
	return nil
}

// Comments implements runner.CommentThread.
func (p *PullRequest) Comments(ctx context.Context) ([]runner.ThreadComment, error) {
	comments, err := p.c.listComments(ctx, time.Time{})
	if err != nil {
		return nil, err
	}
	out := make([]runner.ThreadComment, 0, len(comments))
	for _, cm := range comments {
		out = append(out, threadComment(cm))
	}
	return out, nil
}

// Me implements runner.CommentThread.
func (p *PullRequest) Me(ctx context.Context) (string, error) {
	me, resp, err := p.c.api(ctx).GetMyUserInfo()
	if err != nil {
		return "", p.c.fail(ctx, "finding the token's user", resp, err)
	}
	return me.UserName, nil
}

// Thread is the pull request's comments as this PullRequest keeps them,
// listed once for every contract the process reports.
func (p *PullRequest) Thread() *runner.KeptThread { return p.thread() }

func (p *PullRequest) thread() *runner.KeptThread {
	p.keptOnce.Do(func() { p.kept = runner.KeepThread(p) })
	return p.kept
}

func threadComment(cm *sdk.Comment) runner.ThreadComment {
	tc := runner.ThreadComment{ID: cm.ID, Body: cm.Body, URL: cm.HTMLURL}
	if cm.Poster != nil {
		tc.Poster, tc.Bot = cm.Poster.UserName, cm.Poster.ID == actionsUserID
	}
	return tc
}

// EditComment implements runner.CommentThread. Gitea lets a token edit
// its own user's comments, and others' only for a repository admin.
func (p *PullRequest) EditComment(ctx context.Context, id int64, body string) error {
	c := p.c
	activity := "editing comment " + idKey(id)
	_, resp, err := c.api(ctx).EditIssueComment(c.owner, c.repo, id, sdk.EditIssueCommentOption{Body: body})
	switch {
	case err == nil:
		return nil
	case resp != nil && resp.Response != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound):
		return fmt.Errorf("%s: %w: %w", activity, &apiError{status: resp.StatusCode, message: c.clean(err.Error())}, runner.ErrCommentNotEditable)
	}
	return c.fail(ctx, activity, resp, err)
}

// PostComment implements runner.CommentThread.
func (p *PullRequest) PostComment(ctx context.Context, body string) (runner.ThreadComment, error) {
	c := p.c
	cm, resp, err := c.api(ctx).CreateIssueComment(c.owner, c.repo, c.pull, sdk.CreateIssueCommentOption{Body: body})
	if err != nil {
		return runner.ThreadComment{}, c.fail(ctx, "posting it", resp, err)
	}
	return threadComment(cm), nil
}
