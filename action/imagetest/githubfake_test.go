package imagetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub answers the REST API calls nova makes for one pull request,
// in the shapes GitHub documents (go-github decodes them), keeping the
// comments, statuses and deployments it is sent. It stands in for GitHub,
// which cannot be reached from here; Gitea is tested for real.
type fakeGitHub struct {
	t     *testing.T
	srv   *httptest.Server
	token string
	owner string
	repo  string
	pr    pullFixture

	mu          sync.Mutex
	comments    []fakeComment
	statuses    []fakeStatus
	deployments []fakeDeployment
	nextID      int64
}

// pullFixture is the pull request the fake serves. Its base branch is the
// repository's default branch, protected, at BaseSHA, and holds BaseFiles.
type pullFixture struct {
	Number           int
	Author           string
	HeadSHA, BaseSHA string
	HeadRef, BaseRef string
	BaseFiles        map[string]string
}

type fakeComment struct {
	ID               int64
	User, Body       string
	Created, Updated time.Time
}

type fakeStatus struct {
	SHA, State, Context, Description string
}

type fakeDeployment struct {
	ID          int64
	Ref, Env    string
	StateLog    []string
	Description string
}

func newFakeGitHub(t *testing.T, owner, repo string, pr pullFixture) *fakeGitHub {
	f := &fakeGitHub{t: t, token: "ghs_FakeGitHubToken0123456789abcdef", owner: owner, repo: repo, pr: pr, nextID: 1000}
	mux := http.NewServeMux()
	base := "/repos/" + owner + "/" + repo
	n := strconv.Itoa(pr.Number)
	mux.HandleFunc("GET "+base+"/pulls/"+n, f.getPull)
	mux.HandleFunc("GET "+base+"/pulls/"+n+"/commits", f.listCommits)
	mux.HandleFunc("GET "+base+"/pulls/"+n+"/reviews", f.empty)
	mux.HandleFunc("GET "+base+"/actions/runs/{run}/approvals", f.empty)
	mux.HandleFunc("GET "+base+"/issues/"+n+"/comments", f.listComments)
	mux.HandleFunc("POST "+base+"/issues/"+n+"/comments", f.createComment)
	mux.HandleFunc("PATCH "+base+"/issues/comments/{id}", f.editComment)
	mux.HandleFunc("POST "+base+"/statuses/{sha}", f.createStatus)
	mux.HandleFunc("POST "+base+"/deployments", f.createDeployment)
	mux.HandleFunc("POST "+base+"/deployments/{id}/statuses", f.createDeploymentStatus)
	mux.HandleFunc("GET "+base, f.getRepo)
	mux.HandleFunc("GET "+base+"/branches/{branch}", f.getBranch)
	mux.HandleFunc("GET "+base+"/contents/{path...}", f.getContents)
	mux.HandleFunc("GET "+base+"/commits/{sha}", f.getCommit)
	// The token is the workflow's: GitHub says it is the Actions bot.
	mux.HandleFunc("GET /user", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"login": "github-actions[bot]", "id": 41898282, "type": "Bot"})
	})
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		if auth != "Bearer "+f.token && auth != "token "+f.token {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			t.Errorf("fake GitHub: unexpected %s %s", r.Method, r.URL.Path)
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
			return
		}
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeGitHub) user(login string) map[string]any {
	return map[string]any{"login": login, "id": len(login), "type": "User"}
}

func (f *fakeGitHub) getPull(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{
		"number": f.pr.Number, "state": "open", "user": f.user(f.pr.Author), "commits": 1,
		"head": map[string]any{"sha": f.pr.HeadSHA, "ref": f.pr.HeadRef},
		"base": map[string]any{"sha": f.pr.BaseSHA, "ref": f.pr.BaseRef},
	})
}

func (f *fakeGitHub) getRepo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"name": f.repo, "full_name": f.owner + "/" + f.repo, "default_branch": f.pr.BaseRef, "private": true})
}

func (f *fakeGitHub) getBranch(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("branch") != f.pr.BaseRef {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Branch not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": f.pr.BaseRef, "commit": map[string]any{"sha": f.pr.BaseSHA}, "protected": true})
}

func (f *fakeGitHub) getContents(w http.ResponseWriter, r *http.Request) {
	text, ok := f.pr.BaseFiles[r.PathValue("path")]
	if !ok || r.URL.Query().Get("ref") != f.pr.BaseSHA {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"type": "file", "encoding": "base64", "size": len(text), "path": r.PathValue("path"),
		"content": base64.StdEncoding.EncodeToString([]byte(text))})
}

// getCommit answers as GitHub does for an unsigned commit: the tests'
// commits are not signed.
func (f *fakeGitHub) getCommit(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"sha": r.PathValue("sha"), "commit": map[string]any{
		"message": "a change", "verification": map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil}}})
}

func (f *fakeGitHub) listCommits(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []map[string]any{{"sha": f.pr.HeadSHA, "author": f.user(f.pr.Author)}})
}

func (f *fakeGitHub) empty(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, []any{})
}

func (f *fakeGitHub) commentJSON(c fakeComment) map[string]any {
	return map[string]any{
		"id": c.ID, "body": c.Body, "user": f.user(c.User),
		"created_at": c.Created.UTC().Format(time.RFC3339), "updated_at": c.Updated.UTC().Format(time.RFC3339),
	}
}

// listComments filters on since as GitHub does: comments updated at or
// after it.
func (f *fakeGitHub) listComments(w http.ResponseWriter, r *http.Request) {
	var since time.Time
	if s := r.URL.Query().Get("since"); s != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, s); err != nil {
			writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "since: " + err.Error()})
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []map[string]any{}
	for _, c := range f.comments {
		if !c.Updated.Before(since) {
			out = append(out, f.commentJSON(c))
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// addComment posts a comment as login, as a person in the browser does.
func (f *fakeGitHub) addComment(login, body string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	now := time.Now().Truncate(time.Second)
	f.comments = append(f.comments, fakeComment{ID: f.nextID, User: login, Body: body, Created: now, Updated: now})
}

// botLogin is who the token belongs to.
const botLogin = "github-actions[bot]"

func (f *fakeGitHub) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "body is missing"})
		return
	}
	f.addComment(botLogin, in.Body)
	f.mu.Lock()
	c := f.comments[len(f.comments)-1]
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, f.commentJSON(c))
}

func (f *fakeGitHub) editComment(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "body is missing"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, c := range f.comments {
		if c.ID == id {
			f.comments[i].Body, f.comments[i].Updated = in.Body, time.Now().Truncate(time.Second)
			writeJSON(w, http.StatusOK, f.commentJSON(f.comments[i]))
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

func (f *fakeGitHub) createStatus(w http.ResponseWriter, r *http.Request) {
	var in struct {
		State, Context, Description string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": err.Error()})
		return
	}
	f.mu.Lock()
	f.statuses = append(f.statuses, fakeStatus{SHA: r.PathValue("sha"), State: in.State, Context: in.Context, Description: in.Description})
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"state": in.State, "context": in.Context, "description": in.Description})
}

func (f *fakeGitHub) createDeployment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Ref, Environment, Description string
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": err.Error()})
		return
	}
	f.mu.Lock()
	f.nextID++
	d := fakeDeployment{ID: f.nextID, Ref: in.Ref, Env: in.Environment, Description: in.Description}
	f.deployments = append(f.deployments, d)
	f.mu.Unlock()
	writeJSON(w, http.StatusCreated, map[string]any{"id": d.ID, "ref": d.Ref, "environment": d.Env})
}

func (f *fakeGitHub) createDeploymentStatus(w http.ResponseWriter, r *http.Request) {
	id, _ := strconv.ParseInt(r.PathValue("id"), 10, 64)
	var in struct {
		State string `json:"state"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": err.Error()})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.deployments {
		if f.deployments[i].ID == id {
			f.deployments[i].StateLog = append(f.deployments[i].StateLog, in.State)
			writeJSON(w, http.StatusCreated, map[string]any{"id": f.nextID, "state": in.State})
			return
		}
	}
	writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
}

// botComment is the body of nova's comment holding marker text.
func (f *fakeGitHub) botComment(contains string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.comments {
		if c.User == botLogin && strings.Contains(c.Body, contains) {
			return c.Body
		}
	}
	return ""
}

// lastStatus is the newest status of sha whose context contains env.
func (f *fakeGitHub) lastStatus(sha, env string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.statuses) - 1; i >= 0; i-- {
		if s := f.statuses[i]; s.SHA == sha && strings.HasSuffix(s.Context, env) {
			return s.State
		}
	}
	return ""
}

func (f *fakeGitHub) deploymentStates(env string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, d := range f.deployments {
		if d.Env == env {
			out = append(out, fmt.Sprintf("%s:%s", d.Ref[:7], strings.Join(d.StateLog, ">")))
		}
	}
	return strings.Join(out, ",")
}
