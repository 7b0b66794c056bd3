package gitea

import (
	"context"
	"strings"
	"unicode/utf8"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Issues keeps one issue per marker in the repository (a drifted
// contract's). Only issues opened by the token's own user count: anyone
// who may open issues could otherwise plant the marker and have Nova edit
// and close their issue.
type Issues struct{ c *Client }

var _ runner.IssueTracker = (*Issues)(nil)

// Issues keeps Nova's issues in the repository; it needs no pull request.
func (c *Client) Issues() *Issues { return &Issues{c: c} }

// UpsertIssue implements runner.IssueTracker. A body without the marker
// gets it appended, or the next run could not find the issue again.
func (s *Issues) UpsertIssue(ctx context.Context, marker, title, body string) error {
	c := s.c
	activity := "keeping nova's issue " + marker + " in " + c.owner + "/" + c.repo
	if strings.TrimSpace(marker) == "" {
		return runner.Errorf(runner.InternalError, "%s: no marker to find the issue by", activity)
	}
	if !strings.Contains(body, marker) {
		body = strings.TrimRight(body, "\n") + "\n\n" + marker + "\n"
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentLength {
		return runner.Errorf(runner.ForgeAPIFailed, "%s: the body is %d characters, more than the %d Nova sends", activity, n, MaxCommentLength)
	}
	issue, err := s.find(ctx, activity, marker)
	if err != nil {
		return err
	}
	if issue == nil {
		if _, resp, err := c.api(ctx).CreateIssue(c.owner, c.repo, sdk.CreateIssueOption{Title: title, Body: body}); err != nil {
			return c.fail(ctx, activity+": opening it", resp, err)
		}
		return nil
	}
	if issue.Title == title && issue.Body == body {
		return nil
	}
	if _, resp, err := c.api(ctx).EditIssue(c.owner, c.repo, issue.Index, sdk.EditIssueOption{Title: title, Body: &body}); err != nil {
		return c.fail(ctx, activity+": updating #"+idKey(issue.Index), resp, err)
	}
	return nil
}

// CloseIssue implements runner.IssueTracker.
func (s *Issues) CloseIssue(ctx context.Context, marker, comment string) error {
	c := s.c
	activity := "closing nova's issue " + marker + " in " + c.owner + "/" + c.repo
	if strings.TrimSpace(marker) == "" {
		return runner.Errorf(runner.InternalError, "%s: no marker to find the issue by", activity)
	}
	issue, err := s.find(ctx, activity, marker)
	if err != nil || issue == nil {
		return err
	}
	if _, resp, err := c.api(ctx).CreateIssueComment(c.owner, c.repo, issue.Index, sdk.CreateIssueCommentOption{Body: comment}); err != nil {
		return c.fail(ctx, activity+": commenting on #"+idKey(issue.Index), resp, err)
	}
	closed := sdk.StateClosed
	if _, resp, err := c.api(ctx).EditIssue(c.owner, c.repo, issue.Index, sdk.EditIssueOption{State: &closed}); err != nil {
		return c.fail(ctx, activity+": closing #"+idKey(issue.Index), resp, err)
	}
	return nil
}

// find returns the oldest open issue of the token's user whose body holds
// marker.
func (s *Issues) find(ctx context.Context, activity, marker string) (*sdk.Issue, error) {
	c := s.c
	me, resp, err := c.api(ctx).GetMyUserInfo()
	if err != nil {
		return nil, c.fail(ctx, activity+": finding the token's user", resp, err)
	}
	// A workflow's own token is Gitea's actions user (a negative id, no
	// row in its user table): asked for issues created_by that name, Gitea
	// answers 404. The poster is checked below either way; the filter
	// only spares pages for a real user.
	createdBy := me.UserName
	if me.ID < 0 {
		createdBy = ""
	}
	issues, err := paginate(ctx, c, activity+": listing open issues",
		func(is *sdk.Issue) string {
			if is == nil {
				return ""
			}
			return idKey(is.ID)
		},
		func(o sdk.ListOptions) ([]*sdk.Issue, *sdk.Response, error) {
			return c.api(ctx).ListRepoIssues(c.owner, c.repo, sdk.ListIssueOption{
				ListOptions: o, State: sdk.StateOpen, Type: sdk.IssueTypeIssue, CreatedBy: createdBy,
			})
		})
	if err != nil {
		return nil, err
	}
	var found *sdk.Issue
	for _, is := range issues {
		if is.Poster == nil || is.Poster.ID != me.ID || !strings.Contains(is.Body, marker) {
			continue
		}
		if found == nil || is.Index < found.Index {
			found = is
		}
	}
	return found, nil
}
