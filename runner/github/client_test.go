package github

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func TestNewRefuses(t *testing.T) {
	ok := Config{Token: testToken, Owner: "octo-org", Repo: "infra"}
	tests := []struct {
		name string
		edit func(*Config)
	}{
		{name: "no token", edit: func(c *Config) { c.Token = "" }},
		{name: "no owner", edit: func(c *Config) { c.Owner = "" }},
		{name: "no repository", edit: func(c *Config) { c.Repo = "" }},
		{name: "a token with a space", edit: func(c *Config) { c.Token = "token " + testToken }},
		{name: "an API URL that is not http", edit: func(c *Config) { c.APIURL = "ftp://github.example.com/" }},
		{name: "an API URL with credentials", edit: func(c *Config) { c.APIURL = "https://user:pass@github.example.com/api/v3/" }},
		{name: "a negative pull request", edit: func(c *Config) { c.PullRequest = -1 }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.edit(&cfg)
			_, err := New(cfg)
			checkNoToken(t, err)
			if runner.ReasonOf(err) != runner.ConfigInvalid {
				t.Fatalf("error = %v; want %s", err, runner.ConfigInvalid)
			}
		})
	}
	if _, err := New(ok); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
}

func TestEnterpriseAPIURL(t *testing.T) {
	f := newFakeGitHub(t)
	f.handle("GET /api/v3/orgs/octo-org/teams/sre/memberships/alice", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "team_membership_active.json"))
	})
	// GITHUB_API_URL on GitHub Enterprise Server, without a trailing slash.
	c := f.client(func(c *Config) { c.APIURL = f.srv.URL + "/api/v3" })
	if ok, err := c.Teams().IsTeamMember(t.Context(), "octo-org/sre", "alice"); err != nil || !ok {
		t.Fatalf("IsTeamMember = %v, %v", ok, err)
	}
}

func TestConfigDoesNotPrintTheToken(t *testing.T) {
	cfg := Config{Token: testToken, Owner: "octo-org", Repo: "infra"}
	for _, s := range []string{fmt.Sprint(cfg), fmt.Sprintf("%+v", cfg), fmt.Sprintf("%#v", cfg), fmt.Sprintf("%v", &cfg)} {
		if strings.Contains(s, testToken) {
			t.Errorf("printed the token: %s", s)
		}
	}
}
