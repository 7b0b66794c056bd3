package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// issueTracker is a repository's issues kept the way GitHub keeps them:
// listed in pages (pull requests among them), created with the next
// number, edited and closed in place, commented on.
type issueTracker struct {
	t        *testing.T
	mu       sync.Mutex
	issues   []map[string]any // issue i has number 1+i
	comments map[int][]string
}

func (it *issueTracker) register(f *fakeGitHub) {
	f.handle("GET /repos/octo-org/infra/issues", it.list)
	f.handle("POST /repos/octo-org/infra/issues", it.create)
	f.handle("PATCH /repos/octo-org/infra/issues/{n}", it.edit)
	f.handle("POST /repos/octo-org/infra/issues/{n}/comments", it.comment)
}

func (it *issueTracker) add(title, body string, pull bool) {
	it.mu.Lock()
	defer it.mu.Unlock()
	it.issues = append(it.issues, fixtureWith(it.t, "issue.json", func(m map[string]any) {
		m["number"], m["title"], m["body"] = len(it.issues)+1, title, body
		if pull {
			m["pull_request"] = map[string]any{"url": "https://api.github.com/repos/octo-org/infra/pulls/1"}
		}
	}))
}

func (it *issueTracker) list(w http.ResponseWriter, r *http.Request) {
	it.mu.Lock()
	defer it.mu.Unlock()
	q := r.URL.Query()
	if q.Get("state") != "open" {
		it.t.Errorf("listed issues in state %q, want open", q.Get("state"))
	}
	per, _ := strconv.Atoi(q.Get("per_page"))
	page, _ := strconv.Atoi(q.Get("page"))
	page = max(page, 1)
	var open []any
	for _, is := range it.issues {
		if is["state"] == "open" {
			open = append(open, is)
		}
	}
	from, to := min((page-1)*per, len(open)), min(page*per, len(open))
	if to < len(open) {
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, r.Host, r.URL.Path, q.Encode()))
	}
	writeJSON(w, http.StatusOK, append([]any{}, open[from:to]...))
}

func (it *issueTracker) create(w http.ResponseWriter, r *http.Request) {
	var in struct{ Title, Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		it.t.Error(err)
	}
	it.add(in.Title, in.Body, false)
	it.mu.Lock()
	defer it.mu.Unlock()
	writeJSON(w, http.StatusCreated, it.issues[len(it.issues)-1])
}

func (it *issueTracker) edit(w http.ResponseWriter, r *http.Request) {
	var in map[string]any
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		it.t.Error(err)
	}
	n, _ := strconv.Atoi(r.PathValue("n"))
	it.mu.Lock()
	defer it.mu.Unlock()
	if n < 1 || n > len(it.issues) {
		writeJSON(w, http.StatusNotFound, fixture(it.t, "not_found.json"))
		return
	}
	for k, v := range in {
		it.issues[n-1][k] = v
	}
	writeJSON(w, http.StatusOK, it.issues[n-1])
}

func (it *issueTracker) comment(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		it.t.Error(err)
	}
	n, _ := strconv.Atoi(r.PathValue("n"))
	it.mu.Lock()
	defer it.mu.Unlock()
	it.comments[n] = append(it.comments[n], in.Body)
	writeJSON(w, http.StatusCreated, fixtureWith(it.t, "comment.json", func(m map[string]any) { m["body"] = in.Body }))
}

// state is each issue's number, state and title.
func (it *issueTracker) state() []string {
	it.mu.Lock()
	defer it.mu.Unlock()
	var out []string
	for _, is := range it.issues {
		out = append(out, fmt.Sprintf("#%v %v %v", is["number"], is["state"], is["title"]))
	}
	return out
}

func TestDriftIssueLifecycle(t *testing.T) {
	const marker = "<!-- nova:drift:c0ffee00:prod -->"
	f := newFakeGitHub(t)
	it := &issueTracker{t: t, comments: map[int][]string{}}
	// 150 open issues of others, and a pull request quoting the marker:
	// the list spans two pages, and a pull request is never Nova's issue.
	for i := range 150 {
		it.add(fmt.Sprintf("issue %d", i), "unrelated", false)
	}
	it.add("Mention the marker", "see "+marker, true)
	it.register(f)
	issues := f.client().Issues()
	ctx := t.Context()

	if err := issues.CloseIssue(ctx, marker, "clear"); err != nil {
		t.Fatalf("close without an issue: %v", err)
	}
	if w := writes(f); len(w) != 0 {
		t.Fatalf("closing no issue wrote %v", w)
	}
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", marker+"\n1 resource"); err != nil {
		t.Fatal(err)
	}
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", marker+"\n2 resources"); err != nil {
		t.Fatal(err)
	}
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", marker+"\n2 resources"); err != nil {
		t.Fatal(err)
	}
	if err := issues.CloseIssue(ctx, marker, "No drift found by run r9"); err != nil {
		t.Fatal(err)
	}
	want := []string{
		"POST /repos/octo-org/infra/issues",
		"PATCH /repos/octo-org/infra/issues/152",
		"POST /repos/octo-org/infra/issues/152/comments",
		"PATCH /repos/octo-org/infra/issues/152",
	}
	if diff := cmp.Diff(want, writes(f)); diff != "" {
		t.Errorf("writes (-want +got):\n%s", diff)
	}
	if got := it.state()[151]; got != "#152 closed Drift: c0ffee00 in prod" {
		t.Errorf("the drift issue is %q", got)
	}
	if diff := cmp.Diff([]string{"No drift found by run r9"}, it.comments[152]); diff != "" {
		t.Errorf("comments (-want +got):\n%s", diff)
	}
	// Drift again after the close: a new issue, not the closed one.
	if err := issues.UpsertIssue(ctx, marker, "Drift: c0ffee00 in prod", "3 resources"); err != nil {
		t.Fatal(err)
	}
	if got := it.state(); len(got) != 153 || got[152] != "#153 open Drift: c0ffee00 in prod" {
		t.Errorf("after drift returned: %v", got[150:])
	}
}

func TestDriftIssueRefusesAnEmptyMarker(t *testing.T) {
	f := newFakeGitHub(t)
	if err := f.client().Issues().UpsertIssue(t.Context(), " ", "t", "b"); err == nil || len(f.requests()) != 0 {
		t.Errorf("empty marker: %v, %d requests", err, len(f.requests()))
	}
}
