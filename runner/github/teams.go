package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Teams answers whether a login belongs to an organization team.
type Teams struct {
	c *Client
	// readable holds the teams the token was seen to read, so each is
	// probed once per process however many logins are asked about.
	mu       sync.Mutex
	readable map[string]bool
}

var _ runner.TeamMembership = (*Teams)(nil)

// Teams answers team membership questions.
func (c *Client) Teams() *Teams { return &Teams{c: c} }

// IsTeamMember reports whether login is an active member of team
// ("org/team-slug"). A pending invitation is not membership. GitHub answers
// 404 both for "not a member" and for a team the token cannot see (a
// secret team, or any team for a token that may not read the
// organization's members); the team itself is then read, and only when
// the token can see it is the 404 a "no". Otherwise it is
// APPROVER_TEAM_UNREADABLE: a silent "no" would drop the team's approvals
// and rejections alike.
func (t *Teams) IsTeamMember(ctx context.Context, team, login string) (bool, error) {
	org, slug, err := splitTeam(team)
	if err != nil {
		return false, err
	}
	if login == "" {
		return false, nil
	}
	m, _, err := t.c.gh.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
	switch status := statusOfErr(err); {
	case err == nil:
		return m.GetState() == "active", nil
	case status == http.StatusNotFound:
		if err := t.CheckTeam(ctx, team); err != nil {
			return false, err
		}
		return false, nil
	case status == http.StatusForbidden:
		return false, t.unreadable(err, "reading %s's membership of team %s", login, team)
	}
	return false, t.c.fail(ctx, err, permMembersRead, "reading %s's membership of team %s", login, team)
}

// CheckTeam reads the team, once per process: a token that cannot see it
// cannot tell its members from anyone else.
func (t *Teams) CheckTeam(ctx context.Context, team string) error {
	org, slug, err := splitTeam(team)
	if err != nil {
		return err
	}
	t.mu.Lock()
	seen := t.readable[team]
	t.mu.Unlock()
	if seen {
		return nil
	}
	_, _, err = t.c.gh.Teams.GetTeamBySlug(ctx, org, slug)
	switch status := statusOfErr(err); {
	case err == nil:
	case status == http.StatusNotFound || status == http.StatusForbidden:
		return t.unreadable(err, "reading team %s", team)
	default:
		return t.c.fail(ctx, err, permMembersRead, "reading team %s", team)
	}
	t.mu.Lock()
	if t.readable == nil {
		t.readable = map[string]bool{}
	}
	t.readable[team] = true
	t.mu.Unlock()
	return nil
}

// unreadable is the error for a team the token may not read.
func (t *Teams) unreadable(err error, format string, args ...any) error {
	return runner.Errorf(runner.ApproverTeamUnreadable, "%s: %w; the team does not exist or this token may not read it, so nobody can be shown to be in it",
		fmt.Sprintf(format, args...), t.c.scrub(err, permMembersRead))
}

func splitTeam(team string) (org, slug string, err error) {
	org, slug, ok := strings.Cut(team, "/")
	if !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
		return "", "", runner.Errorf(runner.ApproversInvalid, "github: team %q is not org/team", team)
	}
	return org, slug, nil
}

// statusOfErr is the HTTP status of GitHub's answer to a failed call, 0
// when there was none (a rate limit and a transport failure are their own
// error types, never an ErrorResponse).
func statusOfErr(err error) int {
	var er *gh.ErrorResponse
	if errors.As(err, &er) && er.Response != nil {
		return er.Response.StatusCode
	}
	return 0
}
