package github

import (
	"context"
	"errors"
	"net/http"
	"strings"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Teams answers whether a login belongs to an organization team.
type Teams struct{ c *Client }

var _ runner.TeamMembership = (*Teams)(nil)

// Teams answers team membership questions.
func (c *Client) Teams() *Teams { return &Teams{c: c} }

// IsTeamMember reports whether login is an active member of team
// ("org/team-slug"). A pending invitation is not membership. GitHub answers
// 404 both for "not a member" and for a team the token cannot see (a
// secret team); both are "no", the answer that can only withhold an
// approval.
func (t *Teams) IsTeamMember(ctx context.Context, team, login string) (bool, error) {
	org, slug, ok := strings.Cut(team, "/")
	if !ok || org == "" || slug == "" || strings.Contains(slug, "/") {
		return false, runner.Errorf(runner.ApproversInvalid, "github: team %q is not org/team", team)
	}
	if login == "" {
		return false, nil
	}
	m, _, err := t.c.gh.Teams.GetTeamMembershipBySlug(ctx, org, slug, login)
	if err != nil {
		var er *gh.ErrorResponse
		if errors.As(err, &er) && er.Response != nil && er.Response.StatusCode == http.StatusNotFound {
			return false, nil
		}
		return false, t.c.fail(ctx, err, permMembersRead, "reading %s's membership of team %s", login, team)
	}
	return m.GetState() == "active", nil
}
