package github

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// commentThread is a pull request's comments kept the way GitHub keeps
// them: listed oldest first in pages, created with the next id, edited in
// place.
type commentThread struct {
	t      *testing.T
	mu     sync.Mutex
	bodies []string // comment i has id 1000+i
}

func (c *commentThread) register(f *fakeGitHub) {
	f.handle("GET /repos/octo-org/infra/issues/7/comments", c.list)
	f.handle("POST /repos/octo-org/infra/issues/7/comments", c.create)
	f.handle("PATCH /repos/octo-org/infra/issues/comments/{id}", c.edit)
}

func (c *commentThread) comment(i int) map[string]any {
	return fixtureWith(c.t, "comment.json", func(m map[string]any) {
		m["id"] = 1000 + i
		m["body"] = c.bodies[i]
	})
}

func (c *commentThread) list(w http.ResponseWriter, r *http.Request) {
	c.mu.Lock()
	defer c.mu.Unlock()
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	page, _ := strconv.Atoi(r.URL.Query().Get("page"))
	page = max(page, 1)
	var out []any
	for i := (page - 1) * per; i < len(c.bodies) && i < page*per; i++ {
		out = append(out, c.comment(i))
	}
	if page*per < len(c.bodies) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		w.Header().Set("Link", fmt.Sprintf(`<http://%s%s?%s>; rel="next"`, r.Host, r.URL.Path, q.Encode()))
	}
	writeJSON(w, 200, append([]any{}, out...))
}

func (c *commentThread) create(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		c.t.Error(err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.bodies = append(c.bodies, in.Body)
	writeJSON(w, http.StatusCreated, c.comment(len(c.bodies)-1))
}

func (c *commentThread) edit(w http.ResponseWriter, r *http.Request) {
	var in struct{ Body string }
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		c.t.Error(err)
	}
	id, _ := strconv.Atoi(r.PathValue("id"))
	c.mu.Lock()
	defer c.mu.Unlock()
	if id < 1000 || id-1000 >= len(c.bodies) {
		writeJSON(w, 404, fixture(c.t, "not_found.json"))
		return
	}
	c.bodies[id-1000] = in.Body
	writeJSON(w, 200, c.comment(id-1000))
}

func (c *commentThread) snapshot() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]string(nil), c.bodies...)
}

// writes lists the requests that changed the thread.
func writes(f *fakeGitHub) []string {
	var out []string
	for _, r := range f.requests() {
		if !strings.HasPrefix(r, "GET ") {
			out = append(out, r)
		}
	}
	return out
}

func TestUpsertComment(t *testing.T) {
	const marker = "<!-- nova:c0ffee00:prod -->"
	f := newFakeGitHub(t)
	// 205 comments by others: the thread spans three pages of 100.
	thread := &commentThread{t: t}
	for i := range 205 {
		thread.bodies = append(thread.bodies, fmt.Sprintf("comment %d", i))
	}
	thread.register(f)
	m := f.client().Commenter()

	first := marker + "\n## Plan for prod\n1 to add"
	if err := m.UpsertComment(t.Context(), marker, first); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"POST /repos/octo-org/infra/issues/7/comments"}, writes(f)); diff != "" {
		t.Fatalf("first upsert (-want +got):\n%s", diff)
	}

	second := marker + "\n## Plan for prod\n2 to add"
	if err := m.UpsertComment(t.Context(), marker, second); err != nil {
		t.Fatal(err)
	}
	// The comment created last, on page 3, is the one updated.
	wantWrites := []string{"POST /repos/octo-org/infra/issues/7/comments", "PATCH /repos/octo-org/infra/issues/comments/1205"}
	if diff := cmp.Diff(wantWrites, writes(f)); diff != "" {
		t.Fatalf("second upsert (-want +got):\n%s", diff)
	}
	got := thread.snapshot()
	if len(got) != 206 || got[205] != second {
		t.Errorf("thread has %d comments, the last %q; want 206, the last the second body", len(got), got[len(got)-1])
	}

	// The same body again changes nothing.
	if err := m.UpsertComment(t.Context(), marker, second); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantWrites, writes(f)); diff != "" {
		t.Errorf("unchanged upsert (-want +got):\n%s", diff)
	}
}

func TestUpsertCommentRefuses(t *testing.T) {
	const marker = "<!-- nova:c0ffee00:prod -->"
	tests := []struct {
		name, marker, body string
	}{
		{name: "a body longer than GitHub accepts", marker: marker, body: marker + strings.Repeat("x", MaxCommentLength-len(marker)+1)},
		{name: "a body without its marker", marker: marker, body: "## Plan for prod"},
		{name: "an empty marker", marker: " ", body: "## Plan for prod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			(&commentThread{t: t}).register(f)
			err := f.client().Commenter().UpsertComment(t.Context(), tt.marker, tt.body)
			if runner.ReasonOf(err) != runner.InternalError {
				t.Fatalf("error = %v; want %s", err, runner.InternalError)
			}
			if n := len(f.requests()); n != 0 {
				t.Errorf("%d requests; want none", n)
			}
		})
	}
}

func TestUpsertCommentAtTheLimit(t *testing.T) {
	const marker = "<!-- nova -->"
	f := newFakeGitHub(t)
	thread := &commentThread{t: t}
	thread.register(f)
	// Characters, not bytes: 65 536 two-byte characters fit.
	body := marker + strings.Repeat("é", MaxCommentLength-len(marker))
	if err := f.client().Commenter().UpsertComment(t.Context(), marker, body); err != nil {
		t.Fatal(err)
	}
	if got := thread.snapshot(); len(got) != 1 || got[0] != body {
		t.Errorf("the body was not posted whole")
	}
}
