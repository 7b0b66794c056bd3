package github

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func TestIsTeamMember(t *testing.T) {
	tests := []struct {
		name       string
		team       string
		status     int
		body       string
		want       bool
		wantReason runner.Reason // "" means no error
		wantCalls  int
	}{
		{name: "an active member", team: "octo-org/sre", status: 200, body: "team_membership_active.json", want: true, wantCalls: 1},
		{name: "a pending invitation is not membership", team: "octo-org/sre", status: 200, body: "team_membership_pending.json", wantCalls: 1},
		{name: "404 is not a member", team: "octo-org/sre", status: 404, body: "not_found.json", wantCalls: 1},
		{name: "a token without members: read", team: "octo-org/sre", status: 403, body: "forbidden.json", wantReason: runner.ForgeAPIFailed, wantCalls: 1},
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
			if tt.status == 403 && !strings.Contains(err.Error(), "members: read") {
				t.Errorf("error %q does not name the permission", err)
			}
		})
	}
}
