package github

import (
	"context"
	"strings"
	"unicode/utf8"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Issues keeps one issue per marker in the repository (a drifted
// contract's).
type Issues struct{ c *Client }

var _ runner.IssueTracker = (*Issues)(nil)

// Issues keeps Nova's issues in the repository; it needs no pull request.
func (c *Client) Issues() *Issues { return &Issues{c: c} }

// UpsertIssue implements runner.IssueTracker. A body without the marker
// gets it appended, or the next run could not find the issue again.
func (s *Issues) UpsertIssue(ctx context.Context, marker, title, body string) error {
	if err := checkMarker(marker); err != nil {
		return err
	}
	if !strings.Contains(body, marker) {
		body = strings.TrimRight(body, "\n") + "\n\n" + marker + "\n"
	}
	if n := utf8.RuneCountInString(body); n > MaxCommentLength {
		return runner.Errorf(runner.InternalError, "github: the issue body has %d characters, more than the %d GitHub accepts", n, MaxCommentLength)
	}
	issue, err := s.find(ctx, marker)
	if err != nil {
		return err
	}
	if issue == nil {
		if _, _, err := s.c.gh.Issues.Create(ctx, s.c.owner, s.c.repo, &gh.IssueRequest{Title: &title, Body: &body}); err != nil {
			return s.c.fail(ctx, err, permIssuesWrite, "opening issue %q", title)
		}
		return nil
	}
	if issue.GetTitle() == title && issue.GetBody() == body {
		return nil
	}
	if _, _, err := s.c.gh.Issues.Edit(ctx, s.c.owner, s.c.repo, issue.GetNumber(), &gh.IssueRequest{Title: &title, Body: &body}); err != nil {
		return s.c.fail(ctx, err, permIssuesWrite, "updating issue %d", issue.GetNumber())
	}
	return nil
}

// CloseIssue implements runner.IssueTracker.
func (s *Issues) CloseIssue(ctx context.Context, marker, comment string) error {
	if err := checkMarker(marker); err != nil {
		return err
	}
	issue, err := s.find(ctx, marker)
	if err != nil || issue == nil {
		return err
	}
	n := issue.GetNumber()
	if _, _, err := s.c.gh.Issues.CreateComment(ctx, s.c.owner, s.c.repo, n, &gh.IssueComment{Body: &comment}); err != nil {
		return s.c.fail(ctx, err, permIssuesWrite, "commenting on issue %d", n)
	}
	closed, reason := "closed", "completed"
	if _, _, err := s.c.gh.Issues.Edit(ctx, s.c.owner, s.c.repo, n, &gh.IssueRequest{State: &closed, StateReason: &reason}); err != nil {
		return s.c.fail(ctx, err, permIssuesWrite, "closing issue %d", n)
	}
	return nil
}

// find returns the oldest open issue whose body holds marker. GitHub lists
// pull requests among issues; they are skipped.
func (s *Issues) find(ctx context.Context, marker string) (*gh.Issue, error) {
	issues, err := listAll(func(opts gh.ListOptions) ([]*gh.Issue, *gh.Response, error) {
		return s.c.gh.Issues.ListByRepo(ctx, s.c.owner, s.c.repo, &gh.IssueListByRepoOptions{
			State: "open", Sort: "created", Direction: "asc", ListOptions: opts,
		})
	})
	if err != nil {
		return nil, s.c.fail(ctx, err, permIssuesRead, "listing the open issues of %s/%s", s.c.owner, s.c.repo)
	}
	for _, is := range issues {
		if !is.IsPullRequest() && strings.Contains(is.GetBody(), marker) {
			return is, nil
		}
	}
	return nil, nil
}

func checkMarker(marker string) error {
	if strings.TrimSpace(marker) == "" {
		return runner.Errorf(runner.InternalError, "github: an issue marker is empty, and would match every issue")
	}
	return nil
}
