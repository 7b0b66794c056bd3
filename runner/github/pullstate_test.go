package github

import (
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func TestPullRequestStates(t *testing.T) {
	f := newFakeGitHub(t)
	// pull.json is an open pull request; GitHub closes a merged one and
	// sets merged and merged_at.
	pulls := map[string]func(map[string]any){
		"7": nil,
		"8": func(p map[string]any) {
			p["number"], p["state"], p["merged"], p["merged_at"] = 8, "closed", true, "2024-05-03T10:00:00Z"
		},
		"9":  func(p map[string]any) { p["number"], p["state"] = 9, "closed" },
		"10": func(p map[string]any) { p["number"], p["state"] = 10, "locked" },
	}
	f.handle("GET /repos/octo-org/infra/pulls/{n}", func(w http.ResponseWriter, r *http.Request) {
		edit, ok := pulls[r.PathValue("n")]
		if !ok {
			writeJSON(w, http.StatusNotFound, fixture(t, "not_found.json"))
			return
		}
		writeJSON(w, http.StatusOK, fixtureWith(t, "pull.json", edit))
	})
	states := f.client().PullRequestStates()
	for _, tc := range []struct {
		number int64
		want   runner.PullRequestState
		reason runner.Reason
		msg    string
	}{
		{7, runner.PullRequestOpen, "", ""},
		{8, runner.PullRequestMerged, "", ""},
		{9, runner.PullRequestClosed, "", ""},
		{10, "", runner.ForgeAPIFailed, `state is "locked"`},
		{11, "", runner.ForgeAPIFailed, "reading the state of pull request 11"},
		{0, "", runner.InternalError, "not one"},
	} {
		got, err := states.PullRequestState(t.Context(), tc.number)
		var reason runner.Reason
		if err != nil {
			reason = runner.ReasonOf(err)
		}
		if got != tc.want || reason != tc.reason || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("pull request %d: %q, %v; want %q, %s %q", tc.number, got, err, tc.want, tc.reason, tc.msg)
		}
		checkNoToken(t, err)
	}
	// Each is asked about by its own number, whatever the client's pull
	// request (7) is.
	reqs := f.requests()
	if len(reqs) != 5 || reqs[1] != "GET /repos/octo-org/infra/pulls/8" {
		t.Errorf("requests: %v", reqs)
	}
}
