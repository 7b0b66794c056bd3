package gitea

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// actionsThread serves a pull request's comments the way Gitea 1.23 does,
// for comments the Actions user (id -2, what a job token posts as) left:
// the real server in these tests runs no workflow, so it holds none. The
// token is nova-bot's, which Gitea does not let edit others' comments.
type actionsThread struct {
	t        *testing.T
	mu       sync.Mutex
	comments []map[string]any
	writes   []string
}

func (a *actionsThread) serve(w http.ResponseWriter, r *http.Request) {
	a.mu.Lock()
	defer a.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/user":
		json.NewEncoder(w).Encode(map[string]any{"id": 7, "login": "nova-bot"})
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/repos/platform/infra/issues/1/comments":
		if p := r.URL.Query().Get("page"); p != "" && p != "1" {
			json.NewEncoder(w).Encode([]any{})
			return
		}
		json.NewEncoder(w).Encode(a.comments)
	case r.Method == http.MethodPatch && strings.HasPrefix(r.URL.Path, "/api/v1/repos/platform/infra/issues/comments/"):
		a.writes = append(a.writes, "PATCH "+strings.TrimPrefix(r.URL.Path, "/api/v1/repos/platform/infra/issues/comments/"))
		id, _ := strconv.ParseInt(strings.TrimPrefix(r.URL.Path, "/api/v1/repos/platform/infra/issues/comments/"), 10, 64)
		for _, c := range a.comments {
			if c["id"] == float64(id) && c["user"].(map[string]any)["id"] != float64(7) {
				w.WriteHeader(http.StatusForbidden)
				json.NewEncoder(w).Encode(map[string]string{"message": ""})
				return
			}
		}
		a.t.Errorf("nova-bot edited its own comment %d; none was expected", id)
	case r.Method == http.MethodPost && r.URL.Path == "/api/v1/repos/platform/infra/issues/1/comments":
		var in struct{ Body string }
		json.NewDecoder(r.Body).Decode(&in)
		a.writes = append(a.writes, "POST")
		c := map[string]any{"id": float64(90 + len(a.comments)), "body": in.Body, "user": map[string]any{"id": float64(7), "login": "nova-bot"},
			"html_url": "http://gitea.example/platform/infra/pulls/1#issuecomment-90"}
		a.comments = append(a.comments, c)
		w.WriteHeader(http.StatusCreated)
		json.NewEncoder(w).Encode(c)
	default:
		a.t.Errorf("unexpected %s %s", r.Method, r.URL)
		w.WriteHeader(http.StatusNotFound)
	}
}

// TestUpsertCommentAfterTheJobToken: the workflow switched from the job
// token to nova-bot's, which may not edit the Actions user's comment: a
// new report stands and says the job token's is out of date; the next run
// changes nothing. A person's comment that starts with the marker is not
// Nova's.
func TestUpsertCommentAfterTheJobToken(t *testing.T) {
	const marker = runner.CommentPrefix + "comment contract=c1 env=prod -->"
	a := &actionsThread{t: t, comments: []map[string]any{
		{"id": float64(11), "body": marker + "\nprod: awaiting approval", "html_url": "http://gitea.example/platform/infra/pulls/1#issuecomment-11",
			"user": map[string]any{"id": float64(actionsUserID), "login": "gitea-actions"}},
		{"id": float64(12), "body": marker + "\nprod: approved ✅", "html_url": "http://gitea.example/platform/infra/pulls/1#issuecomment-12",
			"user": map[string]any{"id": float64(31), "login": "mallory"}},
	}}
	c := newTestClient(t, fakeGitea(t, a.serve).URL)
	body := marker + "\nprod: applied"
	for range 2 {
		if err := c.PullRequest().UpsertComment(t.Context(), marker, body); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"PATCH 11", "POST", "PATCH 11"}, a.writes); diff != "" {
		t.Errorf("writes over two runs (-want +got):\n%s", diff)
	}
	if len(a.comments) != 3 {
		t.Fatalf("%d comments, want the two and one new", len(a.comments))
	}
	got := a.comments[2]["body"].(string)
	if !strings.HasPrefix(got, body) || !strings.Contains(got, "Out of date: Nova's earlier [comment 11](http://gitea.example/platform/infra/pulls/1#issuecomment-11)") {
		t.Errorf("the new report says:\n%s", got)
	}
}
