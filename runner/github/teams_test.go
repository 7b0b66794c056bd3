package github

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func TestIsTeamMember(t *testing.T) {
	tests := []struct {
		name string
		team string
		// status and body answer the membership; teamStatus the team
		// itself (0: never asked).
		status     int
		body       string
		teamStatus int
		want       bool
		wantReason runner.Reason // "" means no error
		wantCalls  int
	}{
		{name: "an active member", team: "octo-org/sre", status: 200, body: "team_membership_active.json", wantCalls: 1, want: true},
		{name: "a pending invitation is not membership", team: "octo-org/sre", status: 200, body: "team_membership_pending.json", wantCalls: 1},
		{name: "404 of a team the token reads is not a member", team: "octo-org/sre", status: 404, body: "not_found.json", teamStatus: 200, wantCalls: 2},
		// GitHub hides a team it will not show this token behind the
		// same 404 as "not a member": that is no answer at all.
		{name: "404 of a team the token cannot see", team: "octo-org/sre", status: 404, body: "not_found.json", teamStatus: 404, wantReason: runner.ApproverTeamUnreadable, wantCalls: 2},
		{name: "a token without members: read", team: "octo-org/sre", status: 403, body: "forbidden.json", wantReason: runner.ApproverTeamUnreadable, wantCalls: 1},
		{name: "a team without its organization", team: "sre", wantReason: runner.ApproversInvalid},
		{name: "a team with an empty slug", team: "octo-org/", wantReason: runner.ApproversInvalid},
		{name: "a nested path", team: "octo-org/sre/leads", wantReason: runner.ApproversInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /orgs/{org}/teams/{slug}/memberships/{user}", func(w http.ResponseWriter, r *http.Request) {
				if r.PathValue("org") != "octo-org" || r.PathValue("slug") != "sre" || r.PathValue("user") != "alice" {
					t.Errorf("asked about %s", r.URL.Path)
				}
				writeJSON(w, tt.status, fixture(t, tt.body))
			})
			f.handle("GET /orgs/octo-org/teams/sre", func(w http.ResponseWriter, r *http.Request) {
				if tt.teamStatus == 0 {
					t.Errorf("the team was read; the membership's answer was enough")
				}
				body := "team.json"
				if tt.teamStatus != 200 {
					body = "not_found.json"
				}
				writeJSON(w, tt.teamStatus, fixture(t, body))
			})
			got, err := f.client().Teams().IsTeamMember(t.Context(), tt.team, "alice")
			checkNoToken(t, err)
			if tt.wantReason == "" && err != nil {
				t.Fatal(err)
			}
			if tt.wantReason != "" && runner.ReasonOf(err) != tt.wantReason {
				t.Fatalf("error = %v; want reason %s", err, tt.wantReason)
			}
			if got != tt.want {
				t.Errorf("member = %v; want %v", got, tt.want)
			}
			if n := len(f.requests()); n != tt.wantCalls {
				t.Errorf("%d requests; want %d", n, tt.wantCalls)
			}
			if tt.wantReason == runner.ApproverTeamUnreadable && !strings.Contains(err.Error(), "members: read") {
				t.Errorf("error %q does not name the permission", err)
			}
		})
	}
}

// TestCheckTeam: a run asks whether it can read each approver team before
// anyone's membership, once per team and process.
func TestCheckTeam(t *testing.T) {
	for _, tt := range []struct {
		name       string
		status     int
		wantReason runner.Reason
	}{
		{"a team the token reads", 200, ""},
		{"the workflow's GITHUB_TOKEN", 403, runner.ApproverTeamUnreadable},
		{"a secret team, or none", 404, runner.ApproverTeamUnreadable},
		{"GitHub failing", 500, runner.ForgeAPIFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /orgs/octo-org/teams/sre", func(w http.ResponseWriter, r *http.Request) {
				body := map[int]string{200: "team.json", 403: "forbidden.json", 404: "not_found.json", 500: "not_found.json"}[tt.status]
				writeJSON(w, tt.status, fixture(t, body))
			})
			teams := f.client(func(c *Config) { c.Retry.MaxAttempts = 1 }).Teams()
			for range 2 {
				err := teams.CheckTeam(t.Context(), "octo-org/sre")
				checkNoToken(t, err)
				if runner.ReasonOf(err) != tt.wantReason && (err != nil || tt.wantReason != "") {
					t.Fatalf("CheckTeam = %v; want reason %q", err, tt.wantReason)
				}
				if err != nil && tt.wantReason == runner.ApproverTeamUnreadable && !strings.Contains(err.Error(), "read:org") {
					t.Errorf("error %q does not say which token can read the team", err)
				}
			}
			want := 2
			if tt.status == 200 {
				want = 1
			}
			if n := len(f.requests()); n != want {
				t.Errorf("%d requests for two checks; want %d", n, want)
			}
		})
	}
}
