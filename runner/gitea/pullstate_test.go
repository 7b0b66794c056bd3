package gitea

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// testPullRequestStates opens two more pull requests on the repository,
// merges one and closes the other, and asks Gitea about each, as the lock
// of an environment one of them holds does. It leaves f.pr as it is.
func testPullRequestStates(t *testing.T, f *forge) {
	ctx := t.Context()
	s := f.s
	s.CommitFiles(t, org, repo, "lock-a", "main", map[string]string{"a.tf": "# a\n"}, f.author)
	s.CommitFiles(t, org, repo, "lock-b", "main", map[string]string{"b.tf": "# b\n"}, f.author)
	a := int64(s.CreatePullRequest(t, org, repo, "lock-a", "main", "Change a", f.author))
	b := int64(s.CreatePullRequest(t, org, repo, "lock-b", "main", "Change b", f.author))
	states := f.c.PullRequestStates()
	want := func(when string, expect map[int64]runner.PullRequestState) {
		t.Helper()
		for n, w := range expect {
			got, err := states.PullRequestState(ctx, n)
			if err != nil || got != w {
				t.Errorf("%s: pull request #%d is %q (%v), want %q", when, n, got, err, w)
			}
		}
	}
	want("opened", map[int64]runner.PullRequestState{a: runner.PullRequestOpen, b: runner.PullRequestOpen, f.pr: runner.PullRequestOpen})

	s.API(t, s.AdminToken, http.MethodPatch, fmt.Sprintf("/repos/%s/%s/pulls/%d", org, repo, b), map[string]any{"state": "closed"}, nil)
	// Marked merged by a commit on main: Gitea records it merged (and
	// closes it) as a merge does, without the background mergeability
	// check a merge by the API would race with.
	var main struct {
		Commit struct {
			ID string `json:"id"`
		} `json:"commit"`
	}
	s.API(t, s.AdminToken, http.MethodGet, "/repos/"+org+"/"+repo+"/branches/main", nil, &main)
	s.API(t, s.AdminToken, http.MethodPatch, "/repos/"+org+"/"+repo, map[string]any{"allow_manual_merge": true}, nil)
	s.API(t, s.AdminToken, http.MethodPost, fmt.Sprintf("/repos/%s/%s/pulls/%d/merge", org, repo, a), map[string]any{"Do": "manually-merged", "MergeCommitID": main.Commit.ID}, nil)
	want("merged and closed", map[int64]runner.PullRequestState{a: runner.PullRequestMerged, b: runner.PullRequestClosed, f.pr: runner.PullRequestOpen})

	_, err := states.PullRequestState(ctx, 999)
	wantReason(t, err, runner.ForgeAPIFailed, fmt.Sprintf("reading the state of pull request %s/%s#999", org, repo), "404")
}
