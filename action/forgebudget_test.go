package main

import (
	"fmt"
	"github.com/nova-platform/nova/runner/forgehttp"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/github"
	"github.com/nova-platform/nova/templates"
)

// budgetID is the id of the i-th generated contract.
func budgetID(i int) string { return fmt.Sprintf("b0000000-1111-4222-8333-%012d", i) }

// pullRequestOf commits n contracts, then a change to each, and points
// m's environment at api as the pull request's forge; it returns the
// head commit.
func pullRequestOf(m *monorepoRun, api *githubAPI, n int) string {
	m.t.Helper()
	for i := range n {
		m.contract(fmt.Sprintf("svc/%04d/.nova/contract.yml", i), budgetID(i), fmt.Sprintf("team %d", i))
	}
	base := m.commit("base")
	for i := range n {
		m.contract(fmt.Sprintf("svc/%04d/.nova/contract.yml", i), budgetID(i), fmt.Sprintf("team %d, changed", i))
	}
	head := m.commit("the change")
	event := filepath.Join(m.t.TempDir(), "event.json")
	writeFile(m.t, event, `{"pull_request":{"number":7,"base":{"sha":"`+base+`"},"head":{"sha":"`+head+`"}}}`)
	for k, v := range map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.srv.URL, "GITHUB_SERVER_URL": "https://github.example.com",
		"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_TOKEN": "ghs_faketoken",
		"GITHUB_RUN_ID": "99", "GITHUB_RUN_NUMBER": "9",
	} {
		m.env[k] = v
	}
	return head
}

// TestRateLimitedJobLosesNothing: a job reporting twelve contracts meets
// GitHub's secondary rate limit on two writes, its primary limit on
// another (reset in 40 minutes) and a 429 on a read; it waits as each
// answer says (a minute, seven seconds, until the reset: seen, not
// slept),
// and ends with every status, every check run and the one summary
// comment in place, within three requests per contract, and the evidence
// whole. Run again on the same commit, it rewrites nothing it had set.
func TestRateLimitedJobLosesNothing(t *testing.T) {
	const n = 12
	m := newMonorepoRun(t)
	api := newGitHubAPI(t)
	head := pullRequestOf(m, api, n)
	w := &waits{}
	m.retry = forgehttp.Policy{Sleep: w.Sleep, Now: w.Now}
	api.limitWrites, api.limitReads, api.limitPrimary = []int{3, 9}, []int{1}, []int{15}
	api.resetAt = w.Now().Add(40 * time.Minute)

	code, stdout, stderr := m.nova("validate", "--changed")
	if code != ExitPass {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPass, stdout, stderr)
	}
	if strings.Contains(stderr, "could not") {
		t.Errorf("the job reported a failure to publish:\n%s", stderr)
	}
	got := api.budget()
	if got.Limited != 4 {
		t.Errorf("%d requests met a rate limit, want 4 (the test set them)", got.Limited)
	}
	if slept := w.slept(); !slices.Contains(slept, time.Minute) || !slices.Contains(slept, 7*time.Second) || w.Now().Before(api.resetAt) {
		t.Errorf("waits %v, ending at %s: want the minute of the secondary limit's Retry-After, the 429's seven seconds and a wait past the primary limit's reset at %s",
			slept, w.Now(), api.resetAt)
	}

	api.mu.Lock()
	var contexts, checks []string
	for _, s := range api.statuses {
		if s.SHA == head {
			contexts = append(contexts, s.Context)
		}
	}
	for _, c := range api.checkRuns {
		if c.HeadSHA == head {
			checks = append(checks, c.Name)
		}
	}
	comments := slices.Clone(api.comments)
	api.mu.Unlock()
	var want []string
	for i := range n {
		want = append(want, "nova/"+budgetID(i)+"/dev")
	}
	slices.Sort(contexts)
	slices.Sort(checks)
	if !slices.Equal(contexts, want) {
		t.Errorf("statuses on the head: %v\nwant one each: %v", contexts, want)
	}
	if !slices.Equal(checks, want) {
		t.Errorf("check runs on the head: %v\nwant one each: %v", checks, want)
	}
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, summaryMarker("dev", budgetID(0), 1)) {
		t.Fatalf("comments: want the one summary of dev, got %d: %v", len(comments), comments)
	}
	for i := range n {
		if !strings.Contains(comments[0].Body, "<code>"+templates.EscapeMarkdown(budgetID(i))+"</code>") {
			t.Errorf("the summary has no row for %s:\n%s", budgetID(i), comments[0].Body)
		}
	}
	t.Logf("requests by route: %v", got.ByRoute)
	if calls := got.Requests - got.Limited; calls > 3*n {
		t.Errorf("%d requests (besides the %d refused) for %d contracts, more than 3 each: %v", calls, got.Limited, n, got.ByRoute)
	}
	code, stdout, stderr = m.nova("evidence", "verify")
	if code != ExitPass || !strings.Contains(stdout, "result           OK") || !strings.Contains(stdout, fmt.Sprintf("contracts        %d\n", n)) {
		t.Errorf("evidence verify: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// The workflow run again on the same commit: the statuses and the
	// summary stand as they are.
	api.limitWrites, api.limitReads = nil, nil
	if code, stdout, stderr := m.nova("validate", "--changed"); code != ExitPass {
		t.Fatalf("second run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	again := api.budget()
	if again.Statuses != got.Statuses {
		t.Errorf("the second run set %d statuses the commit had already", again.Statuses-got.Statuses)
	}
	if edits := again.ByRoute["PATCH /repos/o/r/issues/comments/1"] - got.ByRoute["PATCH /repos/o/r/issues/comments/1"]; edits != 0 || again.Comments != 1 {
		t.Errorf("the second run edited the unchanged summary %d time(s), %d comment(s) now", edits, again.Comments)
	}
}

// TestJobListsTheCommentsOnce: a job of five contracts, below the summary
// threshold, keeps a comment per contract and lists the pull request's
// comments once for all five, asking nothing about the job token's user;
// run again with nothing changed, it edits none.
func TestJobListsTheCommentsOnce(t *testing.T) {
	const n = 5
	m := newMonorepoRun(t)
	api := newGitHubAPI(t)
	pullRequestOf(m, api, n)
	if code, stdout, stderr := m.nova("validate", "--changed"); code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	got := api.budget()
	if l, u := got.ByRoute["GET /repos/o/r/issues/7/comments"], got.ByRoute["GET /user"]; l != 1 || u != 0 {
		t.Errorf("the job listed the comments %d time(s) and asked GET /user %d time(s); want once and never: %v", l, u, got.ByRoute)
	}
	if got.Comments != n || got.Requests > 3*n {
		t.Errorf("%d comments and %d requests for %d contracts: %v", got.Comments, got.Requests, n, got.ByRoute)
	}
	if code, stdout, stderr := m.nova("validate", "--changed"); code != ExitPass {
		t.Fatalf("second run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	again := api.budget()
	for route, k := range again.ByRoute {
		if strings.HasPrefix(route, "PATCH ") && k != got.ByRoute[route] {
			t.Errorf("the second run edited an unchanged comment: %s", route)
		}
	}
}

// TestRepeatedReadsAreConditional: the GitHub client repeats a read as a
// conditional request, which the fake, as GitHub, answers 304 Not Modified
// when nothing changed; the caller still gets the whole answer, and a
// change is read in full.
func TestRepeatedReadsAreConditional(t *testing.T) {
	api := newGitHubAPI(t)
	c, err := github.New(github.Config{APIURL: api.srv.URL + "/", Token: "ghs_faketoken", Owner: "o", Repo: "r", PullRequest: 7})
	if err != nil {
		t.Fatal(err)
	}
	st := c.Statuses()
	set := runner.CommitStatus{Context: "nova/c1/dev", State: runner.StateSuccess, Description: "nova plan: pass"}
	if err := st.SetStatus(t.Context(), "abc", set); err != nil {
		t.Fatal(err)
	}
	for i, want := range []int{0, 1, 1} {
		if i == 2 {
			set.Context = "nova/c2/dev"
			if err := st.SetStatus(t.Context(), "abc", set); err != nil {
				t.Fatal(err)
			}
		}
		got, err := st.ListStatuses(t.Context(), "abc")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1+i/2 {
			t.Errorf("read %d: %d statuses, want %d", i+1, len(got), 1+i/2)
		}
		if n := api.budget().NotModified; n != want {
			t.Errorf("after read %d, %d answers were 304, want %d", i+1, n, want)
		}
	}
}

// TestSummarySupersedesWhatItStandsFor: when a summary stands for a job's
// contracts, their own comments from an earlier run, an earlier summary
// under another key that lists one of them, and parts the summary no
// longer needs are marked out of date; a summary of other contracts and
// another environment's comment stay as they were.
func TestSummarySupersedesWhatItStandsFor(t *testing.T) {
	const n = 12
	m := newMonorepoRun(t)
	api := newGitHubAPI(t)
	pullRequestOf(m, api, n)
	esc := templates.EscapeMarkdown
	seed := []string{
		commentMarker(budgetID(0), "dev") + "\nthe old report of contract 0",
		summaryMarker("dev", "another-shard", 1) + "\n| <code>x</code> | <code>" + esc(budgetID(5)) + "</code> | ✅ pass |",
		summaryMarker("dev", budgetID(0), 3) + "\na third part, no longer needed",
		summaryMarker("dev", "elsewhere", 1) + "\n| <code>y</code> | <code>" + esc(budgetID(99)) + "</code> | ✅ pass |",
		commentMarker(budgetID(1), "prod") + "\nprod is another environment",
	}
	for i, body := range seed {
		api.comments = append(api.comments, fakeComment{ID: int64(i + 1), Body: body})
	}
	if code, stdout, stderr := m.nova("validate", "--changed"); code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	superseded := func(i int) bool {
		return strings.HasPrefix(api.comments[i].Body, runner.CommentPrefix+"superseded -->")
	}
	for i, want := range []bool{true, true, true, false, false} {
		if superseded(i) != want {
			t.Errorf("comment %d (%.60q): superseded %v, want %v", i+1, seed[i], superseded(i), want)
		}
	}
	if len(api.comments) != len(seed)+1 || !strings.HasPrefix(api.comments[len(seed)].Body, summaryMarker("dev", budgetID(0), 1)) {
		t.Errorf("want the seeded comments and one new summary, got %d comments", len(api.comments))
	}
}

// TestSummaryFlag: --summary reports even three contracts in one summary,
// as the jobs of a fan-out of a large change do.
func TestSummaryFlag(t *testing.T) {
	m := newMonorepoRun(t)
	api := newGitHubAPI(t)
	pullRequestOf(m, api, 3)
	if code, stdout, stderr := m.nova("validate", "--changed", "--summary"); code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	got := api.budget()
	if got.Comments != 1 || got.CheckRuns != 3 || got.Statuses != 3 {
		t.Errorf("%d comment(s), %d check run(s), %d status(es); want the summary, 3 and 3", got.Comments, got.CheckRuns, got.Statuses)
	}
}
