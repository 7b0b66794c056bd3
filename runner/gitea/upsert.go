package gitea

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// MaxCommentLength is the longest comment body UpsertComment sends, in
// characters: GitHub's limit, kept on Gitea too so one rendering fits both.
const MaxCommentLength = 65536

// UpsertComment keeps one comment per marker on the pull request: the
// oldest comment by the token's own user whose body contains marker is
// edited to body (left alone when it already says that), else a new
// comment is posted. Other people's comments are never edited, even when
// they quote the marker. A body without the marker gets it appended, or
// the comment could not be found again.
func (p *PullRequest) UpsertComment(ctx context.Context, marker, body string) error {
	c := p.c
	activity := "updating nova's comment on " + c.prName()
	if err := c.needPull(activity); err != nil {
		return err
	}
	if strings.TrimSpace(marker) == "" {
		return runner.Errorf(runner.InternalError, "%s: no marker to find the comment by", activity)
	}
	if !strings.Contains(body, marker) {
		body = strings.TrimRight(body, "\n") + "\n\n" + marker + "\n"
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentLength {
		return runner.Errorf(runner.ForgeAPIFailed, "%s: the body is %d characters, more than the %d a comment may hold", activity, n, MaxCommentLength)
	}

	me, resp, err := c.api(ctx).GetMyUserInfo()
	if err != nil {
		return c.fail(ctx, activity+": finding the token's user", resp, err)
	}
	comments, err := c.listComments(ctx, time.Time{})
	if err != nil {
		return runner.Errorf(runner.ReasonOf(err), "%s: %w", activity, err)
	}
	for _, cm := range comments {
		if cm.Poster == nil || cm.Poster.ID != me.ID || !strings.Contains(cm.Body, marker) {
			continue
		}
		if cm.Body == body {
			return nil
		}
		if _, resp, err := c.api(ctx).EditIssueComment(c.owner, c.repo, cm.ID, sdk.EditIssueCommentOption{Body: body}); err != nil {
			return c.fail(ctx, activity+": editing comment "+idKey(cm.ID), resp, err)
		}
		return nil
	}
	if _, resp, err := c.api(ctx).CreateIssueComment(c.owner, c.repo, c.pull, sdk.CreateIssueCommentOption{Body: body}); err != nil {
		return c.fail(ctx, activity+": posting it", resp, err)
	}
	return nil
}
