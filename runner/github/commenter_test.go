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
// place, each by its author. The token is me's (a bot's when me ends in
// [bot], which GitHub does not let read GET /user); it edits its own
// comments, and others' only when canEditOthers.
type commentThread struct {
	t             *testing.T
	me            string
	canEditOthers bool
	mu            sync.Mutex
	bodies        []string // comment i has id 1000+i
	authors       []string // "" is alice
}

func (c *commentThread) register(f *fakeGitHub) {
	f.handle("GET /repos/octo-org/infra/issues/7/comments", c.list)
	f.handle("POST /repos/octo-org/infra/issues/7/comments", c.create)
	f.handle("PATCH /repos/octo-org/infra/issues/comments/{id}", c.edit)
	f.handle("GET /user", func(w http.ResponseWriter, r *http.Request) {
		if c.me == "" || strings.HasSuffix(c.me, "[bot]") {
			writeJSON(w, http.StatusForbidden, fixture(c.t, "forbidden.json"))
			return
		}
		writeJSON(w, 200, map[string]any{"login": c.me, "id": 42, "type": "User"})
	})
}

func (c *commentThread) author(i int) string {
	if i < len(c.authors) && c.authors[i] != "" {
		return c.authors[i]
	}
	return "alice"
}

func (c *commentThread) comment(i int) map[string]any {
	return fixtureWith(c.t, "comment.json", func(m map[string]any) {
		m["id"] = 1000 + i
		m["body"] = c.bodies[i]
		m["html_url"] = fmt.Sprintf("https://github.com/octo-org/infra/pull/7#issuecomment-%d", 1000+i)
		user := m["user"].(map[string]any)
		user["login"] = c.author(i)
		if strings.HasSuffix(c.author(i), "[bot]") {
			user["type"] = "Bot"
		}
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
	for len(c.authors) < len(c.bodies) {
		c.authors = append(c.authors, "")
	}
	c.bodies = append(c.bodies, in.Body)
	c.authors = append(c.authors, c.me)
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
	if c.author(id-1000) != c.me && !c.canEditOthers {
		writeJSON(w, http.StatusForbidden, fixture(c.t, "forbidden.json"))
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
	thread := &commentThread{t: t, me: "github-actions[bot]"}
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
		{name: "a body with its marker further down", marker: marker, body: "## Plan for prod\n" + marker},
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
	const marker = "<!-- nova:c0ffee00:prod -->"
	f := newFakeGitHub(t)
	thread := &commentThread{t: t, me: "github-actions[bot]"}
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

// TestUpsertCommentAcrossTokens: the job token's comments are Nova's to a
// personal token the workflow switched to (GitHub calls their poster a
// Bot); a person's comment that starts with the marker is not.
func TestUpsertCommentAcrossTokens(t *testing.T) {
	const marker = "<!-- nova:comment contract=c1 env=prod -->"
	stale := marker + "\nprod: awaiting approval"
	body := marker + "\nprod: applied"
	tests := []struct {
		name          string
		me            string
		canEditOthers bool
		bodies        []string
		authors       []string
		want          []string
		writes        []string
	}{
		{
			name: "a maintainer's token updates the job token's comment", me: "octo-admin", canEditOthers: true,
			bodies: []string{"lgtm", stale}, authors: []string{"", "github-actions[bot]"},
			want:   []string{"lgtm", body},
			writes: []string{"PATCH /repos/octo-org/infra/issues/comments/1001"},
		},
		{
			name: "a token that may not edit it posts one that says so", me: "nova-bot",
			bodies: []string{stale}, authors: []string{"github-actions[bot]"},
			want: []string{stale, body + "\n\n*Out of date: Nova's earlier [comment 1000](https://github.com/octo-org/infra/pull/7#issuecomment-1000), " +
				"which this run's token may not edit. This comment is the current report.*\n"},
			writes: []string{"PATCH /repos/octo-org/infra/issues/comments/1000", "POST /repos/octo-org/infra/issues/7/comments"},
		},
		{
			name: "the job token's stale copy is marked superseded", me: "octo-admin", canEditOthers: true,
			bodies: []string{stale, marker + "\nprod: planned"}, authors: []string{"github-actions[bot]", "octo-admin"},
			want:   []string{"<!-- nova:superseded -->\n*Out of date: Nova keeps the current report of this contract and environment in another comment on this pull request.*\n", body},
			writes: []string{"PATCH /repos/octo-org/infra/issues/comments/1000", "PATCH /repos/octo-org/infra/issues/comments/1001"},
		},
		{
			name: "a person's comment that starts with the marker is theirs", me: "github-actions[bot]", canEditOthers: true,
			bodies: []string{marker + "\nprod: approved ✅"}, authors: []string{"mallory"},
			want:   []string{marker + "\nprod: approved ✅", body},
			writes: []string{"POST /repos/octo-org/infra/issues/7/comments"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			if !strings.HasSuffix(tt.me, "[bot]") {
				f.token = personalToken
			}
			thread := &commentThread{t: t, me: tt.me, canEditOthers: tt.canEditOthers, bodies: tt.bodies, authors: tt.authors}
			thread.register(f)
			if err := f.client().Commenter().UpsertComment(t.Context(), marker, body); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, thread.snapshot()); diff != "" {
				t.Errorf("thread (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.writes, writes(f)); diff != "" {
				t.Errorf("writes (-want +got):\n%s", diff)
			}
		})
	}
}
