package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// summaryEnv is the environment of the fan-out's summary job: the pull
// request's event and the fake GitHub, no checkout.
func summaryEnv(t *testing.T, api *githubAPI) map[string]string {
	t.Helper()
	event := filepath.Join(t.TempDir(), "event.json")
	writeFile(t, event, `{"pull_request":{"number":7,"base":{"sha":"`+strings.Repeat("a", 40)+`"},"head":{"sha":"`+strings.Repeat("b", 40)+`"}}}`)
	return map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.srv.URL, "GITHUB_SERVER_URL": "https://github.example.com",
		"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_TOKEN": "ghs_faketoken",
		"GITHUB_RUN_ID": "99", "GITHUB_RUN_NUMBER": "9",
	}
}

func novaSummary(t *testing.T, env map[string]string, from string, more ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{
		Args: append([]string{"summary", "--from", from}, more...), Getenv: func(k string) string { return env[k] },
		Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr,
	}))
	return code, stdout.String(), stderr.String()
}

// shardResults writes the results files of a fan-out of n contracts
// over shards jobs, each contract in environment envOf(i), as
// download-artifact lays them out: one directory per artifact.
func shardResults(t *testing.T, n, shards int, envOf func(int) string) string {
	t.Helper()
	dir := t.TempDir()
	files := make([]fanoutResults, shards)
	for s := range files {
		files[s] = fanoutResults{Version: 1, Command: "run", Attempt: 1}
	}
	digest := strings.Repeat("0123456789abcdef", 4)
	for i := range n {
		r := fanoutResult{ID: budgetID(i), Path: fmt.Sprintf("svc/%04d/.nova/contract.yml", i), Environment: envOf(i), Command: "run", Verdict: "pass", Digest: digest}
		switch i % 10 {
		case 3:
			r.Verdict, r.Group = "awaiting_approval", "platform-<b>leads</b>"
		case 7:
			r.Verdict, r.Reason, r.Detail = "fail", "POLICY_VIOLATION", "bucket <script>alert(1)</script> is **public**"
		}
		files[i%shards].Results = append(files[i%shards].Results, r)
	}
	for s, f := range files {
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, filepath.Join(dir, fmt.Sprintf("nova-results-1-%d", s), "nova-results.json"), string(b))
	}
	return dir
}

// TestFanoutSummaryOfAThousandContracts: the results of 1 000 contracts
// in four environments, from 256 shard jobs, become one summary per
// environment, in parts under GitHub's comment limit, each with its own
// marker; the per-contract comments an earlier run left are marked out
// of date; and the summary job's API calls stay within three per
// contract and environment. The change's text is escaped.
func TestFanoutSummaryOfAThousandContracts(t *testing.T) {
	const n, shards = 1000, 256
	envs := []string{"dev", "dr", "prod", "qa"}
	// Most in dev, so its summary needs more than one part.
	envOf := func(i int) string { return envs[max(0, i%10-6)] }
	api := newGitHubAPI(t)
	// Earlier per-contract comments (before the change crossed the
	// threshold): superseded by the summary.
	for i := range 5 {
		api.comments = append(api.comments, fakeComment{ID: int64(i + 1), Body: commentMarker(budgetID(i), envOf(i)) + "\nold report"})
	}
	dir := shardResults(t, n, shards, envOf)
	env := summaryEnv(t, api)

	code, stdout, stderr := novaSummary(t, env, dir)
	if code != ExitPass {
		t.Fatalf("exit %d\n%s\n%s", code, stdout, stderr)
	}
	got := api.budget()
	api.mu.Lock()
	comments := slices.Clone(api.comments)
	api.mu.Unlock()
	parts := map[string]int{}
	rows := map[string]int{}
	for _, c := range comments[5:] {
		var env string
		for _, e := range envs {
			if strings.HasPrefix(c.Body, summaryPrefix(e, fanoutKey)+" part=") {
				env = e
			}
		}
		if env == "" {
			t.Fatalf("a comment that is no fan-out summary part: %.200s", c.Body)
		}
		parts[env]++
		if !strings.HasPrefix(c.Body, summaryMarker(env, fanoutKey, parts[env])) {
			t.Errorf("%s's part %d has the marker %.120s", env, parts[env], c.Body)
		}
		if l := utf8.RuneCountInString(c.Body); l > maxComment {
			t.Errorf("%s part %d: %d characters, over GitHub's %d", env, parts[env], l, maxComment)
		}
		if strings.Contains(c.Body, "<script>") || strings.Contains(c.Body, "<b>leads</b>") {
			t.Errorf("%s part %d shows the change's text unescaped", env, parts[env])
		}
		for i := range n {
			if strings.Contains(c.Body, "<code>"+templates.EscapeMarkdown(budgetID(i))+"</code>") {
				rows[budgetID(i)]++
			}
		}
	}
	for _, e := range envs {
		if parts[e] < 1 || (e == "dev") != (parts[e] > 1) {
			t.Errorf("%s: %d part(s), want dev's 700 rows split across two or more at the size limit, and one for the others' 100", e, parts[e])
		}
	}
	if len(rows) != n {
		t.Errorf("%d contracts have a row, want %d", len(rows), n)
	}
	for id, k := range rows {
		if k != 1 {
			t.Errorf("%s has %d rows, want 1", id, k)
		}
	}
	for _, c := range comments[:5] {
		if strings.Contains(c.Body, "old report") {
			t.Errorf("the earlier per-contract comment %d is not marked out of date: %.200s", c.ID, c.Body)
		}
	}
	t.Logf("summary job: %d requests, %d comments, %d bytes: %v", got.Requests, got.Comments, got.CommentBytes, got.ByRoute)
	if got.Requests > 3*n {
		t.Errorf("%d requests for %d contract-environments, more than 3 each", got.Requests, n)
	}

	// Run again (the job re-run): nothing changed, nothing is rewritten.
	writes := got.ByRoute["POST /repos/o/r/issues/7/comments"]
	if code, stdout, stderr := novaSummary(t, env, dir); code != ExitPass {
		t.Fatalf("again: exit %d\n%s\n%s", code, stdout, stderr)
	}
	again := api.budget()
	if again.Comments != got.Comments || again.ByRoute["POST /repos/o/r/issues/7/comments"] != writes {
		t.Errorf("the second summary posted %d new comment(s)", again.Comments-got.Comments)
	}
}

// TestFanoutResultsRefused: a results file that is not one nova writes,
// or too large, is refused with FANOUT_RESULTS_INVALID before anything is
// posted.
func TestFanoutResultsRefused(t *testing.T) {
	good := func() fanoutResult {
		return fanoutResult{ID: budgetID(1), Path: "svc/.nova/contract.yml", Environment: "dev", Command: "run", Verdict: "pass"}
	}
	doc := func(rs ...fanoutResult) string {
		b, _ := json.Marshal(fanoutResults{Version: 1, Command: "run", Attempt: 1, Results: rs})
		return string(b)
	}
	with := func(f func(*fanoutResult)) string {
		r := good()
		f(&r)
		return doc(r)
	}
	for name, c := range map[string]struct{ file, want string }{
		"not json":        {`{"version":1,`, "not a results file"},
		"unknown field":   {`{"version":1,"command":"run","attempt":1,"results":[],"token":"x"}`, "unknown field"},
		"two documents":   {doc(good()) + doc(good()), "more than one JSON document"},
		"version":         {`{"version":2,"command":"run","attempt":1,"results":[]}`, "version 2"},
		"command":         {`{"version":1,"command":"destroy","attempt":1,"results":[]}`, "command"},
		"id":              {with(func(r *fanoutResult) { r.ID = "x\n<!-- nova:summary" }), "contract id"},
		"environment":     {with(func(r *fanoutResult) { r.Environment = "staging" }), "environment"},
		"verdict":         {with(func(r *fanoutResult) { r.Verdict = "ok" }), "verdict"},
		"reason":          {with(func(r *fanoutResult) { r.Reason = "not a code" }), "reason"},
		"digest":          {with(func(r *fanoutResult) { r.Digest = "`rm -rf`" }), "digest"},
		"path newline":    {with(func(r *fanoutResult) { r.Path = "a\n| forged | row |" }), "path"},
		"detail too long": {with(func(r *fanoutResult) { r.Detail = strings.Repeat("x", maxDetailText+1) }), "detail"},
		"duplicate":       {doc(good(), good()), "two results files"},
		"oversized":       {`{"version":1,"command":"run","attempt":1,"results":[],"pad":"` + strings.Repeat("x", maxResultsFileBytes) + `"}`, "larger than"},
	} {
		t.Run(name, func(t *testing.T) {
			api := newGitHubAPI(t)
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "nova-results-1-0", "nova-results.json"), c.file)
			code, stdout, stderr := novaSummary(t, summaryEnv(t, api), dir)
			if code != ExitError || !strings.Contains(stderr, string(runner.FanoutResultsInvalid)) || !strings.Contains(stderr, c.want) {
				t.Errorf("exit %d, want %d with %s (%q)\n%s\n%s", code, ExitError, runner.FanoutResultsInvalid, c.want, stdout, stderr)
			}
			if got := api.budget(); got.Requests != 0 {
				t.Errorf("%d requests to the forge for a refused file", got.Requests)
			}
		})
	}
	t.Run("symlink", func(t *testing.T) {
		api := newGitHubAPI(t)
		dir := t.TempDir()
		if err := os.Symlink("/etc/passwd", filepath.Join(dir, "x.json")); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := novaSummary(t, summaryEnv(t, api), dir)
		if code != ExitError || !strings.Contains(stderr, "symbolic link") {
			t.Errorf("exit %d\n%s", code, stderr)
		}
	})
}

// TestFanoutNewestAttemptWins: a shard job run again uploads its results
// under the new attempt; the summary shows the newer verdict.
func TestFanoutNewestAttemptWins(t *testing.T) {
	dir := t.TempDir()
	r := fanoutResult{ID: budgetID(1), Path: "svc/.nova/contract.yml", Environment: "dev", Command: "run", Verdict: "error", Reason: string(runner.ForgeAPIFailed)}
	for attempt, verdict := range map[int]string{1: "error", 2: "pass"} {
		r.Verdict = verdict
		if verdict == "pass" {
			r.Reason = ""
		}
		b, _ := json.Marshal(fanoutResults{Version: 1, Command: "run", Attempt: attempt, Results: []fanoutResult{r}})
		writeFile(t, filepath.Join(dir, fmt.Sprintf("nova-results-%d-0", attempt), "nova-results.json"), string(b))
	}
	_, got, err := readResults(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Verdict != "pass" {
		t.Errorf("results %+v, want attempt 2's pass alone", got)
	}
}

// TestShardJobsLeaveTheCommentsToTheSummary: two shard jobs of a
// summarized fan-out (--results) post commit statuses and check runs
// and no comment; the summary job then posts the one summary of the
// environment, with a row for each contract of both shards.
func TestShardJobsLeaveTheCommentsToTheSummary(t *testing.T) {
	const n = 4
	m := newMonorepoRun(t)
	m.env["PWD"] = m.root
	api := newGitHubAPI(t)
	pullRequestOf(m, api, n)
	// Two shards as nova matrix --max-jobs 2 packs them (the matrix's
	// own test checks it marks them summarized).
	shard := func(is ...int) string {
		var ms []shardMember
		for _, i := range is {
			ms = append(ms, shardMember{Path: fmt.Sprintf("svc/%04d/.nova/contract.yml", i), ID: budgetID(i)})
		}
		b, _ := json.Marshal(ms)
		return string(b)
	}
	results := t.TempDir()
	for i, e := range []string{shard(0, 2), shard(1, 3)} {
		file := filepath.Join(results, fmt.Sprintf("nova-results-1-%d", i), "nova-results.json")
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			t.Fatal(err)
		}
		if code, stdout, stderr := m.nova("validate", "--shard", e, "--results", file); code != ExitPass {
			t.Fatalf("shard %d: exit %d\n%s\n%s", i, code, stdout, stderr)
		}
	}
	if code, _, stderr := m.nova("validate", "--results", filepath.Join(results, "x.json")); code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
		t.Errorf("--results without a selection: exit %d, want %d %s\n%s", code, ExitError, runner.ConfigInvalid, stderr)
	}
	shards := api.budget()
	if shards.Comments != 0 || shards.Statuses != n || shards.CheckRuns != n {
		t.Fatalf("the shard jobs posted %d comment(s), %d status(es), %d check run(s): want none, %d and %d", shards.Comments, shards.Statuses, shards.CheckRuns, n, n)
	}
	code, stdout, stderr := novaSummary(t, m.env, results)
	if code != ExitPass {
		t.Fatalf("summary: exit %d\n%s\n%s", code, stdout, stderr)
	}
	api.mu.Lock()
	comments := slices.Clone(api.comments)
	api.mu.Unlock()
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, summaryMarker("dev", fanoutKey, 1)) {
		t.Fatalf("comments after the summary job: %d, want dev's one summary: %v", len(comments), comments)
	}
	for i := range n {
		if !strings.Contains(comments[0].Body, "<code>"+templates.EscapeMarkdown(budgetID(i))+"</code>") {
			t.Errorf("no row for %s:\n%s", budgetID(i), comments[0].Body)
		}
	}
}

// selectionOf writes the matrix of a fan-out whose jobs run the given
// shards of the contracts budgetID(i) at svc/<i>, as nova matrix
// --selection writes it; a job of one contract says its environment.
func selectionOf(t *testing.T, shards ...[]int) string {
	t.Helper()
	var m matrix
	for _, is := range shards {
		var ms []shardMember
		for _, i := range is {
			ms = append(ms, shardMember{Path: fmt.Sprintf("svc/%04d/.nova/contract.yml", i), ID: budgetID(i)})
		}
		b, _ := json.Marshal(ms)
		e := matrixEntry{Name: "shard", Shard: string(b), Contracts: len(ms), Summary: true}
		if len(ms) == 1 {
			e.Environment = "dev"
		}
		m.Include = append(m.Include, e)
	}
	b, _ := json.Marshal(m)
	p := filepath.Join(t.TempDir(), "nova-selection.json")
	writeFile(t, p, string(b))
	return p
}

// TestFanoutSummaryListsContractsWithoutAResult: a shard job that died
// before writing its results leaves its contracts without one; given the
// selection, the summary lists each as a row saying so (in its
// environment when the selection says it, else under "unknown") and
// fails with FANOUT_RESULT_MISSING. With every shard dead, the rows are
// all of that kind.
func TestFanoutSummaryListsContractsWithoutAResult(t *testing.T) {
	results := func(t *testing.T, is ...int) string {
		dir := t.TempDir()
		doc := fanoutResults{Version: 1, Command: "run", Attempt: 1}
		for _, i := range is {
			doc.Results = append(doc.Results, fanoutResult{ID: budgetID(i), Path: fmt.Sprintf("svc/%04d/.nova/contract.yml", i), Environment: "dev", Command: "run", Verdict: "pass"})
		}
		b, _ := json.Marshal(doc)
		writeFile(t, filepath.Join(dir, "nova-results-1-0", "nova-results.json"), string(b))
		return dir
	}
	summaries := func(api *githubAPI) map[string]string {
		api.mu.Lock()
		defer api.mu.Unlock()
		out := map[string]string{}
		for _, c := range api.comments {
			for _, env := range []string{"dev", unknownEnvironment} {
				if strings.HasPrefix(c.Body, summaryMarker(env, fanoutKey, 1)) {
					out[env] = c.Body
				}
			}
		}
		return out
	}
	row := func(i int) string { return "<code>" + templates.EscapeMarkdown(budgetID(i)) + "</code>" }
	t.Run("a shard died", func(t *testing.T) {
		api := newGitHubAPI(t)
		sel := selectionOf(t, []int{0, 2}, []int{1, 3}, []int{4})
		code, stdout, stderr := novaSummary(t, summaryEnv(t, api), results(t, 0, 2), "--selection", sel)
		if code != ExitError || !strings.Contains(stderr, string(runner.FanoutResultMissing)) {
			t.Fatalf("exit %d, want %d with %s\n%s\n%s", code, ExitError, runner.FanoutResultMissing, stdout, stderr)
		}
		got := summaries(api)
		for _, i := range []int{0, 2, 4} {
			if !strings.Contains(got["dev"], row(i)) {
				t.Errorf("dev's summary has no row for contract %d:\n%s", i, got["dev"])
			}
		}
		if !strings.Contains(got["dev"], templates.EscapeMarkdown(string(runner.FanoutResultMissing))) {
			t.Errorf("dev's summary does not say contract 4 has no result:\n%s", got["dev"])
		}
		for _, i := range []int{1, 3} {
			if !strings.Contains(got[unknownEnvironment], row(i)) {
				t.Errorf("no row for contract %d, which has no result:\n%v", i, got)
			}
		}
		if !strings.Contains(got[unknownEnvironment], templates.EscapeMarkdown(string(runner.FanoutResultMissing))) || !strings.Contains(got[unknownEnvironment], "⚠️ no result |") {
			t.Errorf("the rows without a result do not say so:\n%s", got[unknownEnvironment])
		}
	})
	t.Run("every shard died", func(t *testing.T) {
		api := newGitHubAPI(t)
		sel := selectionOf(t, []int{0, 1}, []int{2, 3})
		code, stdout, stderr := novaSummary(t, summaryEnv(t, api), filepath.Join(t.TempDir(), "none"), "--selection", sel)
		if code != ExitError || !strings.Contains(stderr, string(runner.FanoutResultMissing)) {
			t.Fatalf("exit %d, want %d with %s\n%s\n%s", code, ExitError, runner.FanoutResultMissing, stdout, stderr)
		}
		for i := range 4 {
			if !strings.Contains(summaries(api)[unknownEnvironment], row(i)) {
				t.Errorf("no row for contract %d", i)
			}
		}
	})
	t.Run("all there", func(t *testing.T) {
		api := newGitHubAPI(t)
		sel := selectionOf(t, []int{0, 2}, []int{1})
		code, stdout, stderr := novaSummary(t, summaryEnv(t, api), results(t, 0, 1, 2), "--selection", sel)
		if code != ExitPass || len(summaries(api)) != 1 {
			t.Fatalf("exit %d, summaries %v: want 0 and dev's alone\n%s\n%s", code, summaries(api), stdout, stderr)
		}
	})
	t.Run("a result outside the selection", func(t *testing.T) {
		api := newGitHubAPI(t)
		sel := selectionOf(t, []int{0, 2})
		code, _, stderr := novaSummary(t, summaryEnv(t, api), results(t, 0, 2, 9), "--selection", sel)
		if code != ExitError || !strings.Contains(stderr, string(runner.FanoutResultsInvalid)) || api.budget().Requests != 0 {
			t.Fatalf("exit %d, %d requests: want %d with %s and none\n%s", code, api.budget().Requests, ExitError, runner.FanoutResultsInvalid, stderr)
		}
	})
	t.Run("a selection nova matrix would not write", func(t *testing.T) {
		api := newGitHubAPI(t)
		p := filepath.Join(t.TempDir(), "sel.json")
		writeFile(t, p, `{"include":[{"name":"x","shard":"[{\"path\":\"../etc/.nova/contract.yml\"}]"}]}`)
		code, _, stderr := novaSummary(t, summaryEnv(t, api), results(t, 0), "--selection", p)
		if code != ExitError || !strings.Contains(stderr, string(runner.FanoutResultsInvalid)) {
			t.Fatalf("exit %d, want %d with %s\n%s", code, ExitError, runner.FanoutResultsInvalid, stderr)
		}
	})
}

// TestShardJobFailsWhenItsResultsCannotBeWritten: a shard job whose
// results file cannot be written ends with exit 2 and
// FANOUT_RESULTS_UNWRITTEN, though its contracts passed: the summary
// would otherwise miss their rows without a word. Its statuses stand.
func TestShardJobFailsWhenItsResultsCannotBeWritten(t *testing.T) {
	m := newMonorepoRun(t)
	m.env["PWD"] = m.root
	api := newGitHubAPI(t)
	pullRequestOf(m, api, 2)
	shard, _ := json.Marshal([]shardMember{{Path: "svc/0000/.nova/contract.yml", ID: budgetID(0)}, {Path: "svc/0001/.nova/contract.yml", ID: budgetID(1)}})
	unwritable := filepath.Join(t.TempDir(), "no such directory", "nova-results.json")
	code, stdout, stderr := m.nova("validate", "--shard", string(shard), "--results", unwritable, "--output", "json")
	if code != ExitError || !strings.Contains(stderr, string(runner.FanoutResultsUnwritten)) {
		t.Fatalf("exit %d, want %d with %s\n%s\n%s", code, ExitError, runner.FanoutResultsUnwritten, stdout, stderr)
	}
	// The job's masks come first, then the report.
	var report struct{ Verdict, Reason string }
	if err := json.Unmarshal([]byte(stdout[strings.Index(stdout, "{"):]), &report); err != nil || report.Verdict != string(runner.Errored) || report.Reason != string(runner.FanoutResultsUnwritten) {
		t.Errorf("report %+v (%v), want error %s", report, err, runner.FanoutResultsUnwritten)
	}
	if got := api.budget(); got.Statuses != 2 {
		t.Errorf("%d statuses, want the 2 contracts' to stand", got.Statuses)
	}
}

// listedStatuses is a commit's statuses as a forge lists them.
type listedStatuses []runner.CommitStatus

func (l listedStatuses) ListStatuses(context.Context, string) ([]runner.CommitStatus, error) {
	return l, nil
}

// TestFanoutResultsFromStatuses: on a forge whose jobs pass no files, the
// summary's rows are the selected contracts' commit statuses: verdict and
// reason from the description nova wrote, the state where it wrote
// another; statuses of contracts outside the selection are left out, and
// a selected contract without one has no result.
func TestFanoutResultsFromStatuses(t *testing.T) {
	sel := []selectedContract{
		{member: shardMember{Path: "svc/0000/.nova/contract.yml", ID: budgetID(0)}},
		{member: shardMember{Path: "svc/0001/.nova/contract.yml", ID: budgetID(1)}},
		{member: shardMember{Path: "svc/0002/.nova/contract.yml", ID: budgetID(2)}},
		{member: shardMember{Path: "svc/0003/.nova/contract.yml", ID: budgetID(3)}, env: "qa"},
	}
	status := func(i int, env string, state runner.CommitState, desc string) runner.CommitStatus {
		return runner.CommitStatus{Context: "nova/" + budgetID(i) + "/" + env, State: state, Description: desc}
	}
	statuses := listedStatuses{
		status(0, "dev", runner.StateSuccess, "nova run: pass"),
		status(1, "prod", runner.StatePending, "nova run: awaiting_approval, plan "+strings.Repeat("0123456789abcdef", 2)+" (APPROVAL_REQUIRED)"),
		status(2, "dev", runner.StateFailure, "set by hand | <b>forged</b>"),
		status(9, "dev", runner.StateSuccess, "nova run: pass"),
		{Context: "ci/build", State: runner.StateSuccess},
		status(0, "staging", runner.StateSuccess, "nova run: pass"),
	}
	command, got, err := statusResults(t.Context(), statuses, strings.Repeat("b", 40), sel)
	if err != nil {
		t.Fatal(err)
	}
	want := []fanoutResult{
		{ID: budgetID(0), Path: "svc/0000/.nova/contract.yml", Environment: "dev", Command: "run", Verdict: "pass"},
		{ID: budgetID(1), Path: "svc/0001/.nova/contract.yml", Environment: "prod", Command: "run", Verdict: "awaiting_approval", Digest: strings.Repeat("0123456789abcdef", 2), Reason: "APPROVAL_REQUIRED"},
		{ID: budgetID(2), Path: "svc/0002/.nova/contract.yml", Environment: "dev", Command: "run", Verdict: "fail"},
	}
	if command != "run" || !slices.Equal(got, want) {
		t.Errorf("nova %s, results\n%+v\nwant nova run,\n%+v", command, got, want)
	}
	missing, err := missingResults(sel, got)
	if err != nil || len(missing) != 1 || missing[0].ID != budgetID(3) || missing[0].Environment != "qa" || missing[0].Reason != string(runner.FanoutResultMissing) {
		t.Errorf("missing %+v (%v), want contract 3 in qa alone", missing, err)
	}
}

// TestPickJob: job N of a fan-out's fixed jobs (Gitea) takes the shard
// and summary of the matrix's entry N, runs nothing past the last, and
// is refused with a selection of its own or without the matrix.
func TestPickJob(t *testing.T) {
	sel := selectionOf(t, []int{0, 2}, []int{1, 3})
	s := SelectFlags{Job: 2}
	if err := s.pickJob(sel); err != nil || s.Idle || !s.Deferred || !strings.Contains(s.ShardList, budgetID(3)) || strings.Contains(s.ShardList, budgetID(0)) {
		t.Errorf("job 2: %+v (%v), want the second shard, summarized", s, err)
	}
	s = SelectFlags{Job: 3}
	if err := s.pickJob(sel); err != nil || !s.Idle || s.ShardList != "" || !s.Many() {
		t.Errorf("job 3 of 2: %+v (%v), want idle", s, err)
	}
	for name, c := range map[string]struct {
		s    SelectFlags
		file string
	}{
		"no selection": {SelectFlags{Job: 1}, ""},
		"with --all":   {SelectFlags{Job: 1, All: true}, sel},
		"job 0":        {SelectFlags{Job: -1}, sel},
	} {
		if err := c.s.pickJob(c.file); runner.ReasonOf(err) != runner.ConfigInvalid {
			t.Errorf("%s: %v, want %s", name, err, runner.ConfigInvalid)
		}
	}
}
