package github

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestChange(t *testing.T) {
	f := newFakeGitHub(t)
	f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "pull.json"))
	})
	f.handle("GET /repos/octo-org/infra/pulls/7/commits", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "pull_commits.json"))
	})
	got, err := f.client().PullRequest().Change(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	// octocat opened it and wrote a commit (listed once); monalisa wrote
	// one; the third commit's author has no GitHub account, so who wrote
	// it is unknown.
	want := runner.Change{Authors: []runner.Login{"octocat", "monalisa"}, Unlinked: []string{"6dcb09b5b57875f334f61aebed695e2e4193db5e"}, Head: headSHA, Base: baseSHA}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("change (-want +got):\n%s", diff)
	}
}

func TestChangeWithUnlistedCommits(t *testing.T) {
	f := newFakeGitHub(t)
	f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		// GitHub lists at most 250 commits of a pull request.
		writeJSON(w, 200, fixtureWith(t, "pull.json", func(p map[string]any) { p["commits"] = 251 }))
	})
	f.handle("GET /repos/octo-org/infra/pulls/7/commits", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "pull_commits.json"))
	})
	_, err := f.client().PullRequest().Change(t.Context())
	if runner.ReasonOf(err) != runner.ForgeAPIFailed || !strings.Contains(err.Error(), "listed 3 of its 251 commits") {
		t.Fatalf("error = %v; want the unlisted commits named", err)
	}
}
