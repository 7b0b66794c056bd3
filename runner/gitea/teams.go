package gitea

import (
	"context"
	"net/http"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Teams answers whether a login belongs to an organisation's team.
type Teams struct{ c *Client }

var _ runner.TeamMembership = (*Teams)(nil)

// IsTeamMember reports whether login is in team ("org/team"; the team's
// name compared as Gitea does, ignoring case). Not being a member is false,
// and so is a login Gitea does not know; a team the organisation does not
// have is an error naming it, since the approver config then names
// someone who cannot exist (APPROVERS_INVALID).
//
// Gitea addresses teams by id, so the team is looked up first. Gitea tells
// whether someone is in a team only to the team's members and the
// organisation's owners; anyone else gets 403, reported as such.
func (t *Teams) IsTeamMember(ctx context.Context, team, login string) (bool, error) {
	c := t.c
	org, name, ok := strings.Cut(team, "/")
	if !ok || org == "" || name == "" || strings.Contains(name, "/") {
		return false, runner.Errorf(runner.ApproversInvalid, "checking membership of team %q: not org/team", team)
	}
	if login == "" {
		return false, runner.Errorf(runner.InternalError, "checking membership of team %s: no login given", team)
	}
	teams, err := paginate(ctx, c, "listing the teams of organisation "+org,
		func(tm *sdk.Team) string {
			if tm == nil {
				return ""
			}
			return idKey(tm.ID)
		},
		func(o sdk.ListOptions) ([]*sdk.Team, *sdk.Response, error) {
			return c.api(ctx).ListOrgTeams(org, sdk.ListTeamsOptions{ListOptions: o})
		})
	if err != nil {
		return false, runner.Errorf(runner.ReasonOf(err), "finding team %s: %w", team, err)
	}
	var id int64
	for _, tm := range teams {
		if strings.EqualFold(tm.Name, name) {
			id = tm.ID
			break
		}
	}
	if id == 0 {
		return false, runner.Errorf(runner.ApproversInvalid, "finding team %s: organisation %s has no team %q", team, org, name)
	}
	_, resp, err := c.api(ctx).GetTeamMember(id, login)
	switch {
	case err == nil:
		return true, nil
	case resp != nil && resp.Response != nil && resp.StatusCode == http.StatusNotFound:
		return false, nil
	}
	return false, c.fail(ctx, "checking whether "+login+" is in team "+team, resp, err)
}
