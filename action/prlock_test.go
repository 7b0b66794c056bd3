package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// pullsForge is GitHub as a pull request's run sees it: the state of each
// pull request, the comments Nova posts, and which other pull requests it
// asked about (a run reads its own pull request for other reasons, its
// base branch among them). Statuses and deployments are accepted and not
// looked at.
type pullsForge struct {
	http.Handler
	mu       sync.Mutex
	states   map[int]string // "open", "closed" or "merged"
	comments map[int][]string
	asked    []int
	// self is the pull request of the run under way.
	self int
}

func newPullsForge(states map[int]string) *pullsForge {
	f := &pullsForge{states: states, comments: map[int][]string{}}
	mux := http.NewServeMux()
	number := func(r *http.Request) int {
		n, _ := strconv.Atoi(r.PathValue("n"))
		return n
	}
	mux.HandleFunc("GET /repos/o/r/pulls/{n}", func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		n := number(r)
		if n != f.self {
			f.asked = append(f.asked, n)
		}
		state, ok := f.states[n]
		if !ok {
			writeJSONStatus(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
			return
		}
		// GitHub closes a merged pull request and says it was merged.
		merged := state == "merged"
		if merged {
			state = "closed"
		}
		writeJSONStatus(w, http.StatusOK, map[string]any{"number": n, "state": state, "merged": merged})
	})
	mux.HandleFunc("GET /repos/o/r/issues/{n}/comments", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusOK, []any{})
	})
	mux.HandleFunc("POST /repos/o/r/issues/{n}/comments", func(w http.ResponseWriter, r *http.Request) {
		var c struct{ Body string }
		if err := json.NewDecoder(r.Body).Decode(&c); err != nil {
			writeJSONStatus(w, http.StatusBadRequest, map[string]any{"message": err.Error()})
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		f.comments[number(r)] = append(f.comments[number(r)], c.Body)
		writeJSONStatus(w, http.StatusCreated, map[string]any{"id": 1})
	})
	// The trusted base: main, protected, holding no approver config (a
	// dev run needs none).
	mux.HandleFunc("GET /repos/o/r", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusOK, map[string]any{"name": "r", "full_name": "o/r", "default_branch": "main"})
	})
	mux.HandleFunc("GET /repos/o/r/branches/{branch}", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusOK, map[string]any{"name": r.PathValue("branch"), "protected": true,
			"commit": map[string]any{"sha": "5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e5ca1ab1e"}})
	})
	mux.HandleFunc("GET /repos/o/r/contents/{path...}", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusNotFound, map[string]any{"message": "Not Found"})
	})
	mux.HandleFunc("GET /repos/o/r/commits/{sha}", func(w http.ResponseWriter, r *http.Request) {
		writeJSONStatus(w, http.StatusOK, map[string]any{"sha": r.PathValue("sha"), "commit": map[string]any{"verification": map[string]any{"verified": false, "reason": "unsigned"}}})
	})
	mux.HandleFunc("POST /repos/o/r/", func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		writeJSONStatus(w, http.StatusCreated, map[string]any{"id": 1})
	})
	f.Handler = mux
	return f
}

func writeJSONStatus(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(body)
}

func (f *pullsForge) lastComment(pr int) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	cs := f.comments[pr]
	if len(cs) == 0 {
		return ""
	}
	return cs[len(cs)-1]
}

func (f *pullsForge) askedSince(i int) []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.asked[i:])
}

func (f *pullsForge) askedCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.asked)
}

// TestPullRequestsTakeTurnsInDev runs examples of two pull requests that
// change one contract, as their workflow runs do on GitHub, with real
// Terraform and the evidence of a local repo: the first to apply in dev
// holds it; the second is refused before it plans, and its comment names
// the holder; a run without a pull request neither waits nor breaks the
// hold; the holder's own re-runs go on; once it is merged the second
// applies and holds dev in turn; an operator's `nova unlock` releases a
// hold, on the record.
func TestPullRequestsTakeTurnsInDev(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("one", "dev"))
	// On a forge the approver config's path is named in the checkout.
	gitCommit(t, c.dir)
	forge := newPullsForge(map[int]string{1: "open", 2: "open", 3: "open"})
	srv := httptest.NewServer(forge)
	defer srv.Close()
	local := c.env
	onPR := func(pr int, audience string) (int, runView, string) {
		t.Helper()
		c.writeContract(helloContract(audience, "dev"))
		forge.mu.Lock()
		forge.self = pr
		forge.mu.Unlock()
		event := filepath.Join(t.TempDir(), "event.json")
		writeFile(t, event, fmt.Sprintf(`{"pull_request":{"number":%d,"base":{"sha":"%040d"},"head":{"sha":"%040d"}}}`, pr, 0, pr))
		env := map[string]string{
			"GITHUB_ACTIONS": "true", "GITHUB_API_URL": srv.URL, "GITHUB_SERVER_URL": "https://github.example.com",
			"GITHUB_REPOSITORY": "o/r", "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event,
			"GITHUB_TOKEN": "ghs_faketoken", "GITHUB_RUN_ID": strconv.Itoa(100 + pr), "GITHUB_ACTOR": fmt.Sprintf("author-%d", pr),
		}
		for k, v := range local {
			env[k] = v
		}
		return novaOnForge(ctx, t, c, env, "run")
	}
	held := func(pr, holder int, audience string) {
		t.Helper()
		before := forge.askedCount()
		code, v, stderr := onPR(pr, audience)
		if code != ExitFail || v.Reason != string(runner.StateHeldByPR) || !slices.Equal(verdicts(v), []string{"schema=pass", "change=pass", "lock=fail"}) {
			t.Fatalf("pull request #%d while #%d holds dev: exit %d, %s %v\n%s", pr, holder, code, v.Reason, verdicts(v), stderr)
		}
		if got := forge.askedSince(before); !slices.Equal(got, []int{holder}) {
			t.Errorf("asked the forge about %v, want the holder #%d", got, holder)
		}
		comment := forge.lastComment(pr)
		for _, want := range []string{"**" + string(runner.StateHeldByPR) + "**", templates.EscapeMarkdown(fmt.Sprintf("held by pull request #%d", holder)), templates.EscapeMarkdown("nova unlock --env dev")} {
			if !strings.Contains(comment, want) {
				t.Errorf("the comment on #%d lacks %q:\n%s", pr, want, comment)
			}
		}
	}
	applies := func(pr int, audience string) {
		t.Helper()
		code, v, stderr := onPR(pr, audience)
		if code != ExitPass || stage(v, "lock").Verdict != runner.Pass || stage(v, "apply").Verdict != runner.Pass {
			t.Fatalf("pull request #%d: exit %d, %s %v\n%s", pr, code, v.Reason, verdicts(v), stderr)
		}
		if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, "+audience+"!" {
			t.Errorf("after pull request #%d applied, dev says %q", pr, got)
		}
	}

	applies(1, "one")
	held(2, 1, "two")
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, one!" {
		t.Errorf("the refused run changed dev: %q", got)
	}

	// Outside a pull request (local mode here) the lock neither stops a
	// run nor is taken by it, and #1 still holds dev afterwards.
	c.writeContract(helloContract("local", "dev"))
	if code, v, stderr := c.nova(ctx, "run"); code != ExitPass || stage(v, "lock").Stage != "" {
		t.Fatalf("a local run: exit %d, %v\n%s", code, verdicts(v), stderr)
	}
	held(2, 1, "two")

	// The holder's own run never waits for its own lock.
	before := forge.askedCount()
	applies(1, "one-b")
	if got := forge.askedSince(before); len(got) != 0 {
		t.Errorf("the holder's run asked the forge about %v", got)
	}

	forge.mu.Lock()
	forge.states[1] = "merged"
	forge.mu.Unlock()
	applies(2, "two")
	held(3, 2, "three")

	// An operator releases #2's hold; the release is evidence, and #3 goes
	// on without asking about #2.
	unlock := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		env := map[string]string{"USER": "ops-lead"}
		for k, v := range local {
			env[k] = v
		}
		code := exitCode(run(ctx, Env{Args: append([]string{"unlock", "--dir", c.dir}, args...), Getenv: func(k string) string { return env[k] }, Stdout: &stdout, Stderr: &stderr}))
		if code != wantCode {
			t.Fatalf("nova unlock %v: exit %d, want %d\n%s%s", args, code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String() + stderr.String()
	}
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--env", "dev"}, "--reason is required"},
		{[]string{"--env", "qa", "--reason", "x"}, "only dev is locked per pull request"},
		{[]string{"--reason", "x"}, "--env is required"},
	} {
		if out := unlock(ExitError, tc.args...); !strings.Contains(out, string(runner.ConfigInvalid)) || !strings.Contains(out, tc.says) {
			t.Errorf("nova unlock %v: %s", tc.args, out)
		}
	}
	if out := unlock(ExitPass, "--env", "dev", "--reason", "#2 is abandoned"); !strings.Contains(out, "held by pull request #2") || !strings.Contains(out, "released by ops-lead") {
		t.Errorf("nova unlock: %s", out)
	}
	if out := unlock(ExitError, "--env", "dev", "--contract", "0c0ffee0-1111-4222-8333-444455556666", "--reason", "again"); !strings.Contains(out, "no pull request holds dev") {
		t.Errorf("nova unlock with nothing held: %s", out)
	}
	before = forge.askedCount()
	applies(3, "three")
	if got := forge.askedSince(before); len(got) != 0 {
		t.Errorf("after the release, #3's run asked the forge about %v", got)
	}

	var stdout, stderr bytes.Buffer
	query := []string{"evidence", "query", "--type", runner.EventLockReleased, "--output", "jsonl"}
	if code := exitCode(run(ctx, Env{Args: query, Getenv: func(k string) string { return local[k] }, Stdout: &stdout, Stderr: &stderr})); code != ExitPass {
		t.Fatalf("nova evidence query: exit %d\n%s", code, stderr.String())
	}
	var released struct {
		Environment string             `json:"environment"`
		Data        runner.LockRelease `json:"data"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &released); err != nil {
		t.Fatalf("the release on record: %v\n%s", err, stdout.String())
	}
	if r := released.Data; released.Environment != "dev" || r.PullRequest != 2 || r.ReleasedBy != "ops-lead" || r.Reason != "#2 is abandoned" || r.Hold == "" {
		t.Errorf("the release on record: %+v", released)
	}
}

// novaOnForge runs one command as a forge's runner does, with env as its
// environment; the runner's masks come before the JSON document.
func novaOnForge(ctx context.Context, t *testing.T, c *consumer, env map[string]string, args ...string) (int, runView, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{args[0], "--dir", c.dir, "--state-dir", c.stateDir, "--output", "json"}, args[1:]...)
	code := exitCode(run(ctx, Env{Args: full, Getenv: func(k string) string { return env[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
	var doc []string
	for _, line := range strings.Split(stdout.String(), "\n") {
		if !strings.HasPrefix(line, "::") {
			doc = append(doc, line)
		}
	}
	var v runView
	if err := json.Unmarshal([]byte(strings.Join(doc, "\n")), &v); err != nil {
		t.Fatalf("nova %v: stdout is not one JSON document: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return code, v, stderr.String()
}
