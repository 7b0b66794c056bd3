package gitea

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"sync"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Teams answers whether a login belongs to an organisation's team.
type Teams struct {
	c *Client
	// ids are the teams found and read, by "org/team" as the config
	// names them: each is looked up and probed once per process.
	mu  sync.Mutex
	ids map[string]int64
}

var _ runner.TeamMembership = (*Teams)(nil)

// unreadableHint says who may read a team on Gitea.
const unreadableHint = "gitea shows a team's members only to its members and the organisation's owners (and site admins), " +
	"to a token of scope read:organization: give nova such a token (NOVA_GITEA_TOKEN); the job token cannot"

// IsTeamMember reports whether login is in team ("org/team"; the team's
// name compared as Gitea does, ignoring case). Not being a member is false,
// and so is a login Gitea does not know; a team the organisation does not
// have is an error naming it, since the approver config then names
// someone who cannot exist (APPROVERS_INVALID).
//
// Gitea addresses teams by id, so the team is looked up first, and read
// (CheckTeam): Gitea answers a membership question it will not answer
// with 404 when the token's user is outside the organisation, the same
// 404 as "not a member", so only a team the token was seen to read turns
// a 404 into "no".
func (t *Teams) IsTeamMember(ctx context.Context, team, login string) (bool, error) {
	c := t.c
	if login == "" {
		return false, runner.Errorf(runner.InternalError, "checking membership of team %s: no login given", team)
	}
	id, err := t.readable(ctx, team)
	if err != nil {
		return false, err
	}
	_, resp, err := c.api(ctx).GetTeamMember(id, login)
	activity := "checking whether " + login + " is in team " + team
	switch {
	case err == nil:
		return true, nil
	case resp != nil && resp.Response != nil && resp.StatusCode == http.StatusNotFound:
		return false, nil
	case resp != nil && resp.Response != nil && resp.StatusCode == http.StatusForbidden:
		return false, runner.Errorf(runner.ApproverTeamUnreadable, "%s: %w; %s", activity, &apiError{status: resp.StatusCode, message: c.clean(err.Error())}, unreadableHint)
	}
	return false, c.fail(ctx, activity, resp, err)
}

// CheckTeam finds team and reads one of its members, once per process: a
// token Gitea will not tell the team's members cannot tell approvers from
// anyone else.
func (t *Teams) CheckTeam(ctx context.Context, team string) error {
	_, err := t.readable(ctx, team)
	return err
}

func (t *Teams) readable(ctx context.Context, team string) (int64, error) {
	t.mu.Lock()
	id, ok := t.ids[team]
	t.mu.Unlock()
	if ok {
		return id, nil
	}
	id, err := t.find(ctx, team)
	if err != nil {
		return 0, err
	}
	c := t.c
	_, resp, err := c.api(ctx).ListTeamMembers(id, sdk.ListTeamMembersOptions{ListOptions: sdk.ListOptions{Page: 1, PageSize: 1}})
	if err != nil {
		activity := "reading the members of team " + team
		if resp != nil && resp.Response != nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusNotFound) {
			return 0, runner.Errorf(runner.ApproverTeamUnreadable, "%s: %w; %s", activity, &apiError{status: resp.StatusCode, message: c.clean(err.Error())}, unreadableHint)
		}
		return 0, c.fail(ctx, activity, resp, err)
	}
	t.mu.Lock()
	if t.ids == nil {
		t.ids = map[string]int64{}
	}
	t.ids[team] = id
	t.mu.Unlock()
	return id, nil
}

// find looks team up among its organisation's teams.
func (t *Teams) find(ctx context.Context, team string) (int64, error) {
	c := t.c
	org, name, ok := strings.Cut(team, "/")
	if !ok || org == "" || name == "" || strings.Contains(name, "/") {
		return 0, runner.Errorf(runner.ApproversInvalid, "checking membership of team %q: not org/team", team)
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
	var ae *apiError
	switch {
	case errors.As(err, &ae) && (ae.status == http.StatusForbidden || ae.status == http.StatusNotFound):
		// 404: no such organisation, or a private one the token's user
		// is not in; 403: in neither case may the token list its teams.
		return 0, runner.Errorf(runner.ApproverTeamUnreadable, "finding team %s: %w; %s", team, err, unreadableHint)
	case err != nil:
		return 0, runner.Errorf(runner.ReasonOf(err), "finding team %s: %w", team, err)
	}
	for _, tm := range teams {
		if strings.EqualFold(tm.Name, name) {
			return tm.ID, nil
		}
	}
	return 0, runner.Errorf(runner.ApproversInvalid, "finding team %s: organisation %s has no team %q", team, org, name)
}
