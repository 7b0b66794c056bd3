package main

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/templates"
)

// commit makes m.root a git repository, if it is not one yet, and commits
// everything it holds.
func (m *monorepoRun) commit(msg string) string {
	m.t.Helper()
	repo, err := git.PlainOpen(m.root)
	if err != nil {
		if repo, err = git.PlainInit(m.root, false); err != nil {
			m.t.Fatal(err)
		}
		writeFile(m.t, filepath.Join(m.root, ".gitignore"), ".nova/runs/\n")
	}
	wt, err := repo.Worktree()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		m.t.Fatal(err)
	}
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "dev", Email: "dev@example.com", When: time.Now()}})
	if err != nil {
		m.t.Fatal(err)
	}
	return h.String()
}

// fakeGitHub answers the calls a run's forge report makes, and records the
// comments and statuses it was sent.
type fakeGitHub struct {
	mu       sync.Mutex
	comments []string // bodies posted to pull request 7
	statuses []string // context@sha
}

func (f *fakeGitHub) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/repos/o/r/issues/7/comments":
		_, _ = w.Write([]byte("[]"))
	case r.Method == http.MethodPost && r.URL.Path == "/repos/o/r/issues/7/comments":
		var c struct{ Body string }
		_ = json.Unmarshal(body, &c)
		f.comments = append(f.comments, c.Body)
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{"id":1}`))
	case r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/repos/o/r/statuses/"):
		var s struct{ Context string }
		_ = json.Unmarshal(body, &s)
		f.statuses = append(f.statuses, s.Context+"@"+strings.TrimPrefix(r.URL.Path, "/repos/o/r/statuses/"))
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write([]byte(`{}`))
	default:
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"message":"Not Found"}`))
	}
}

// TestChangedOnAPullRequest runs `nova validate --changed` as a workflow on
// a pull request does: base and head come from the event, only the changed
// contracts run, each is reported on the pull request in its own comment
// with its own commit status, the deleted one is reported there too, and
// the step outputs carry the worst verdict.
func TestChangedOnAPullRequest(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/b/.nova/contract.yml", idB, "bravo")
	m.contract("svc/c/.nova/contract.yml", idC, "charlie")
	m.contract("svc/gone/.nova/contract.yml", idBig, "gone")
	base := m.commit("base")
	writeFile(t, filepath.Join(m.root, "svc", "a", "notes.md"), "a changes\n")
	m.contract("svc/b/.nova/contract.yml", idB, "bravo", "  volume: 11\n") // no such input
	if err := os.RemoveAll(filepath.Join(m.root, "svc", "gone")); err != nil {
		t.Fatal(err)
	}
	head := m.commit("the change")

	gh := &fakeGitHub{}
	srv := httptest.NewServer(gh)
	defer srv.Close()
	event := filepath.Join(t.TempDir(), "event.json")
	writeFile(t, event, `{"pull_request":{"number":7,"base":{"sha":"`+base+`"},"head":{"sha":"`+head+`"}}}`)
	outFile, summaryFile := filepath.Join(t.TempDir(), "output"), filepath.Join(t.TempDir(), "summary")
	for k, v := range map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_API_URL": srv.URL, "GITHUB_SERVER_URL": "https://github.example.com",
		"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_TOKEN": "ghs_faketoken",
		"GITHUB_OUTPUT": outFile, "GITHUB_STEP_SUMMARY": summaryFile,
	} {
		m.env[k] = v
	}

	code, stdout, stderr := m.nova("validate", "--changed")
	if code != ExitFail {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitFail, stdout, stderr)
	}
	if strings.Contains(stdout, "svc/c/") {
		t.Errorf("an unchanged contract ran:\n%s", stdout)
	}
	for _, want := range []string{"2 contract(s) selected (changed " + base[:12] + ".." + head[:12], string(runner.ContractDeleted) + " svc/gone/.nova/contract.yml"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}

	gh.mu.Lock()
	defer gh.mu.Unlock()
	var markers []string
	for _, body := range gh.comments {
		for _, id := range []string{idA, idB, idBig} {
			if strings.Contains(body, commentMarker(id, "dev")) {
				markers = append(markers, id)
			}
		}
	}
	slices.Sort(markers)
	if diff := cmp.Diff([]string{idA, idB, idBig}, markers); diff != "" {
		t.Errorf("pull request comments, by contract (-want +got):\n%s", diff)
	}
	slices.Sort(gh.statuses)
	wantStatuses := []string{"nova/" + idA + "/dev@" + head, "nova/" + idB + "/dev@" + head}
	if diff := cmp.Diff(wantStatuses, gh.statuses); diff != "" {
		t.Errorf("commit statuses (-want +got):\n%s", diff)
	}
	out, _ := os.ReadFile(outFile)
	for _, want := range []string{"verdict<<", "fail", "exit-code<<", "contracts<<"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", want, out)
		}
	}
	summary, _ := os.ReadFile(summaryFile)
	for _, want := range []string{"<code>" + templates.EscapeMarkdown("svc/a/.nova/contract.yml") + "</code>",
		"<code>" + templates.EscapeMarkdown("svc/b/.nova/contract.yml") + "</code>", "**Deleted**", string(runner.InputUnknown)} {
		if !strings.Contains(string(summary), want) {
			t.Errorf("job summary lacks %q:\n%s", want, summary)
		}
	}
}

func TestMatrix(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/b/.nova/contract.yml", idB, "bravo")
	m.contract("svc/m/.nova/web.contract.yml", idC, "web")
	base := m.commit("base")
	m.contract("svc/m/.nova/web.contract.yml", idC, "web, changed")
	if err := os.RemoveAll(filepath.Join(m.root, "svc", "b")); err != nil {
		t.Fatal(err)
	}
	head := m.commit("change")
	// Where nova matrix runs is where the fanned-out jobs start: dirs are
	// relative to it.
	m.env["PWD"] = m.root

	matrixOf := func(args ...string) (int, matrix, string) {
		t.Helper()
		code, stdout, stderr := m.nova(append([]string{"matrix"}, args...)...)
		var mx matrix
		if code == ExitPass {
			if err := json.Unmarshal([]byte(stdout), &mx); err != nil {
				t.Fatalf("matrix %v: stdout is not a matrix: %v\n%s", args, err, stdout)
			}
		}
		return code, mx, stderr
	}
	code, mx, stderr := matrixOf("--all")
	want := matrix{Include: []matrixEntry{
		{Name: "svc/a/.nova/contract.yml", Dir: "svc/a", Contract: ".nova/contract.yml", ID: idA, Environment: "dev",
			Shard: `[{"path":"svc/a/.nova/contract.yml","id":"` + idA + `"}]`},
		{Name: "svc/m/.nova/web.contract.yml", Dir: "svc/m", Contract: ".nova/web.contract.yml", ID: idC, Environment: "dev",
			Shard: `[{"path":"svc/m/.nova/web.contract.yml","id":"` + idC + `"}]`},
	}}
	if diff := cmp.Diff(want, mx); code != ExitPass || diff != "" {
		t.Errorf("matrix --all: exit %d (-want +got):\n%s\n%s", code, diff, stderr)
	}
	code, mx, stderr = matrixOf("--changed", "--base", base, "--head", head)
	// The deleted contract is its destroy's entry.
	want.Include = append(want.Include[1:], matrixEntry{Name: "destroy svc/b/.nova/contract.yml", Dir: "svc/b", Contract: ".nova/contract.yml", ID: idB, Environment: "dev", Operation: "destroy",
		Shard: `[{"path":"svc/b/.nova/contract.yml","id":"` + idB + `","operation":"destroy"}]`})
	if diff := cmp.Diff(want, mx); code != ExitPass || diff != "" {
		t.Errorf("matrix --changed: exit %d (-want +got):\n%s\n%s", code, diff, stderr)
	}
	if !strings.Contains(stderr, string(runner.ContractDeleted)+" svc/b/.nova/contract.yml") {
		t.Errorf("the deleted contract is not reported:\n%s", stderr)
	}
	// Nothing changed: an empty matrix, which a workflow can test for.
	if code, stdout, _ := m.nova("matrix", "--changed", "--base", head, "--head", head); code != ExitPass || strings.TrimSpace(stdout) != `{"include":[]}` {
		t.Errorf("an empty change: exit %d, %s", code, stdout)
	}
	m.contract("svc/dup/.nova/contract.yml", idA, "alpha")
	if code, _, stderr := matrixOf("--all"); code != ExitFail || !strings.Contains(stderr, string(runner.ContractIDDuplicate)) {
		t.Errorf("duplicate ids: exit %d, %s", code, stderr)
	}
}

func TestManyJobSummary(t *testing.T) {
	mv := manyView{
		Command: "plan", Selection: "changed", Verdict: "fail", ExitCode: ExitFail, Reason: string(runner.PolicyCriticalFail),
		Contracts: []contractView{
			{Dir: "svc/a", Contract: ".nova/contract.yml", Why: []string{"directory changed"}, runView: runView{
				Command: "plan", Verdict: "pass", ContractID: idA, Environment: "dev", PlanDigest: "9f2c1d0e",
				Stages: []stageView{{Stage: "schema", Verdict: runner.Pass, Summary: "contract valid for dev", DurationMs: 4}}}},
			{Dir: "svc/c", Contract: ".nova/bad.contract.yml", Why: []string{"contract changed"}, runView: runView{
				Command: "plan", Verdict: "fail", ExitCode: ExitFail, Reason: string(runner.PolicyCriticalFail), ContractID: idBad, Environment: "dev",
				Stages: []stageView{{Stage: "policy", Verdict: runner.Fail, Summary: "pre-plan: blocked | by 1 critical failure", DurationMs: 3,
					Findings: []runner.Finding{{Reason: runner.PolicyCriticalFail, Message: "plaintext secret in inputs.audience", Field: "/inputs/audience"}}}}}},
		},
		Deleted: deletedViews([]monorepo.Contract{{Dir: "svc/gone", File: ".nova/contract.yml", ID: idBig, Environment: "prod"}}),
	}
	golden(t, "summary/many", ".md", manySummaryMarkdown(mv))
}
