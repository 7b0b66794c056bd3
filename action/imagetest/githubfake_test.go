package imagetest

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/cgi"
	"net/http/httptest"
	"os/exec"
	"path"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeGitHub answers the REST API calls nova makes for one pull request,
// in the shapes GitHub documents (go-github decodes them), keeping the
// comments, statuses, deployments, reviews and environment approvals it
// is sent or given. It stands in for GitHub, which cannot be reached from
// here; Gitea is tested for real.
//
// With a repository (newJourneyGitHub) it also serves what a workflow run
// reads of it: the repository and its branches, files at a commit, the
// rules of the evidence repository's branch, and the evidence repository
// itself over git's smart HTTP, as github.com serves one host for the web,
// git and (GitHub Enterprise's layout) the API under /api/v3.
type fakeGitHub struct {
	t   *testing.T
	srv *httptest.Server
	// token is the workflow's job token; tokens maps every token the
	// fake accepts to whom it belongs.
	token  string
	tokens map[string]string
	owner  string
	repo   string
	// apiPrefix is where the REST API is served ("" or "/api/v3").
	apiPrefix string
	// git is the bare repository of owner/repo; evidence the bare
	// evidence repository, served at /<owner>/evidence.git.
	git, evidence string

	mu          sync.Mutex
	pr          pullFixture
	comments    []fakeComment
	statuses    []fakeStatus
	deployments []fakeDeployment
	reviews     []fakeReview
	approvals   map[int64][]fakeApproval
	requests    map[string]int
	nextID      int64
}

// pullFixture is the pull request the fake serves.
type pullFixture struct {
	Number           int
	Author           string
	HeadSHA, BaseSHA string
	HeadRef, BaseRef string
	// Commits are the pull request's commits (default: the head).
	Commits []string
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

type fakeReview struct {
	ID                    int64
	User, State, CommitID string
	Submitted             time.Time
}

// fakeApproval is one review of a workflow run's deployment to an
// environment (GET /repos/{o}/{r}/actions/runs/{id}/approvals).
type fakeApproval struct {
	Env, User, State, Comment string
}

// botLogin is who the job token belongs to.
const botLogin = "github-actions[bot]"

// newFakeGitHub serves owner/repo's pull request pr; git is a repository
// holding its default branch, main, whose files it serves.
func newFakeGitHub(t *testing.T, owner, repo, git string, pr pullFixture) *fakeGitHub {
	f := &fakeGitHub{t: t, token: "ghs_FakeGitHubToken0123456789abcdef", owner: owner, repo: repo, pr: pr, nextID: 1000,
		git: git, approvals: map[int64][]fakeApproval{}, requests: map[string]int{}}
	f.tokens = map[string]string{f.token: botLogin}
	f.srv = httptest.NewServer(f.handler())
	t.Cleanup(f.srv.Close)
	return f
}

// newJourneyGitHub is the fake of a whole repository: git is owner/repo's
// bare repository, evidence the evidence repository's, pushed to with
// evidenceToken. It listens on an address containers reach (the Docker
// bridge's gateway), since nova runs in the action's container.
func newJourneyGitHub(t *testing.T, owner, repo, git, evidence, evidenceToken string, pr pullFixture) *fakeGitHub {
	f := &fakeGitHub{t: t, token: "ghs_JobToken0123456789abcdefABCDEF01", owner: owner, repo: repo, pr: pr, nextID: 1000,
		apiPrefix: "/api/v3", git: git, evidence: evidence, approvals: map[int64][]fakeApproval{}, requests: map[string]int{}}
	f.tokens = map[string]string{f.token: botLogin, evidenceToken: "nova-evidence"}
	l, err := net.Listen("tcp", dockerHostAddress(t)+":0")
	if err != nil {
		t.Fatal(err)
	}
	f.srv = httptest.NewUnstartedServer(f.handler())
	f.srv.Listener.Close()
	f.srv.Listener = l
	f.srv.Start()
	t.Cleanup(f.srv.Close)
	return f
}

// dockerHostAddress is the host's address on Docker's default bridge,
// where a container reaches a server on the host.
func dockerHostAddress(t *testing.T) string {
	t.Helper()
	iface, err := net.InterfaceByName("docker0")
	if err != nil {
		t.Fatalf("no docker0 bridge, so containers cannot reach the GitHub fake: %v", err)
	}
	addrs, err := iface.Addrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ip, ok := a.(*net.IPNet); ok && ip.IP.To4() != nil {
			return ip.IP.String()
		}
	}
	t.Fatal("docker0 has no IPv4 address")
	return ""
}

// apiURL is GITHUB_API_URL; serverURL GITHUB_SERVER_URL.
func (f *fakeGitHub) apiURL() string    { return f.srv.URL + f.apiPrefix }
func (f *fakeGitHub) serverURL() string { return f.srv.URL }

func (f *fakeGitHub) handler() http.Handler {
	mux := http.NewServeMux()
	base := f.apiPrefix + "/repos/" + f.owner + "/" + f.repo
	n := strconv.Itoa(f.pr.Number)
	mux.HandleFunc("GET "+base+"/pulls/"+n, f.getPull)
	mux.HandleFunc("GET "+base+"/pulls/"+n+"/commits", f.listCommits)
	mux.HandleFunc("GET "+base+"/pulls/"+n+"/reviews", f.listReviews)
	mux.HandleFunc("GET "+base+"/actions/runs/{run}/approvals", f.listApprovals)
	mux.HandleFunc("GET "+base+"/issues/"+n+"/comments", f.listComments)
	mux.HandleFunc("POST "+base+"/issues/"+n+"/comments", f.createComment)
	mux.HandleFunc("PATCH "+base+"/issues/comments/{id}", f.editComment)
	mux.HandleFunc("POST "+base+"/statuses/{sha}", f.createStatus)
	mux.HandleFunc("POST "+base+"/deployments", f.createDeployment)
	mux.HandleFunc("POST "+base+"/deployments/{id}/statuses", f.createDeploymentStatus)
	mux.HandleFunc("GET "+base+"/commits/{sha}", f.getCommit)
	// The token's own user: the workflow's token is the Actions bot.
	mux.HandleFunc("GET "+f.apiPrefix+"/user", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"login": "github-actions[bot]", "id": 41898282, "type": "Bot"})
	})
	if f.git != "" {
		mux.HandleFunc("GET "+base, f.getRepo)
		mux.HandleFunc("GET "+base+"/branches/{branch}", f.getBranch)
		mux.HandleFunc("GET "+base+"/contents/{path...}", f.getContents)
	}
	gitRoot := ""
	if f.evidence != "" {
		// The evidence branch is protected by a ruleset that blocks force
		// pushes, as docs/security.md asks (and the bare repository
		// refuses them, below).
		mux.HandleFunc("GET "+f.apiPrefix+"/repos/"+f.owner+"/evidence/rules/branches/main", func(w http.ResponseWriter, _ *http.Request) {
			writeJSON(w, http.StatusOK, []map[string]any{{"type": "non_fast_forward", "ruleset_source_type": "Repository", "ruleset_source": f.owner + "/evidence", "ruleset_id": 1}})
		})
		gitRoot = "/" + f.owner + "/evidence.git/"
	}
	gitPath, _ := exec.LookPath("git")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gitRoot != "" && strings.HasPrefix(r.URL.Path, gitRoot) {
			// git's smart HTTP, pushes authenticated with the evidence
			// token as GitHub takes a token: any user name, the token as
			// the password.
			_, pass, ok := r.BasicAuth()
			if !ok || f.tokens[pass] != "nova-evidence" {
				w.Header().Set("WWW-Authenticate", `Basic realm="GitHub"`)
				http.Error(w, "Authentication failed", http.StatusUnauthorized)
				return
			}
			f.count("git " + r.Method)
			(&cgi.Handler{Path: gitPath, Args: []string{"http-backend"}, Root: "/" + f.owner,
				Env: []string{"GIT_PROJECT_ROOT=" + path.Dir(f.evidence), "GIT_HTTP_EXPORT_ALL=1", "REMOTE_USER=nova-evidence", "GIT_CONFIG_NOSYSTEM=1"}}).ServeHTTP(w, r)
			return
		}
		auth := r.Header.Get("Authorization")
		token, _ := strings.CutPrefix(auth, "Bearer ")
		if t, ok := strings.CutPrefix(auth, "token "); ok {
			token = t
		}
		if _, ok := f.tokens[token]; !ok {
			writeJSON(w, http.StatusUnauthorized, map[string]string{"message": "Bad credentials", "documentation_url": "https://docs.github.com/rest"})
			return
		}
		if _, pattern := mux.Handler(r); pattern == "" {
			f.t.Errorf("fake GitHub: unexpected %s %s", r.Method, r.URL.Path)
			writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
			return
		}
		_, pattern := mux.Handler(r)
		f.count(pattern)
		mux.ServeHTTP(w, r)
	})
}

func (f *fakeGitHub) count(what string) {
	f.mu.Lock()
	f.requests[what]++
	f.mu.Unlock()
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (f *fakeGitHub) user(login string) map[string]any {
	// GitHub calls an app's user, the Actions bot among them, a Bot.
	if strings.HasSuffix(login, "[bot]") {
		return map[string]any{"login": login, "id": len(login), "type": "Bot"}
	}
	return map[string]any{"login": login, "id": len(login), "type": "User"}
}

func (f *fakeGitHub) repoJSON() map[string]any {
	return map[string]any{"id": 1296269, "name": f.repo, "full_name": f.owner + "/" + f.repo, "owner": f.user(f.owner), "default_branch": "main", "private": true}
}

func (f *fakeGitHub) getPull(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	pr := f.pr
	f.mu.Unlock()
	commits := len(pr.Commits)
	if commits == 0 {
		commits = 1
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"number": pr.Number, "state": "open", "user": f.user(pr.Author), "commits": commits,
		"head": map[string]any{"sha": pr.HeadSHA, "ref": pr.HeadRef, "repo": f.repoJSON()},
		"base": map[string]any{"sha": pr.BaseSHA, "ref": pr.BaseRef, "repo": f.repoJSON()},
	})
}

func (f *fakeGitHub) listCommits(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	shas := f.pr.Commits
	if len(shas) == 0 {
		shas = []string{f.pr.HeadSHA}
	}
	author := f.pr.Author
	f.mu.Unlock()
	out := []map[string]any{}
	for _, sha := range shas {
		out = append(out, map[string]any{"sha": sha, "author": f.user(author)})
	}
	writeJSON(w, http.StatusOK, out)
}

// push moves the pull request's head to sha, a new commit of it.
func (f *fakeGitHub) push(sha string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.pr.Commits) == 0 {
		f.pr.Commits = []string{f.pr.HeadSHA}
	}
	f.pr.Commits = append(f.pr.Commits, sha)
	f.pr.HeadSHA = sha
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

// addComment posts a comment as login, as a person in the browser does,
// and returns it as GitHub's issue_comment event carries it.
func (f *fakeGitHub) addComment(login, body string) map[string]any {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.nextID++
	now := time.Now().Truncate(time.Second)
	c := fakeComment{ID: f.nextID, User: login, Body: body, Created: now, Updated: now}
	f.comments = append(f.comments, c)
	return f.commentJSON(c)
}

func (f *fakeGitHub) createComment(w http.ResponseWriter, r *http.Request) {
	var in struct {
		Body string `json:"body"`
	}
	if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.Body == "" {
		writeJSON(w, http.StatusUnprocessableEntity, map[string]string{"message": "body is missing"})
		return
	}
	writeJSON(w, http.StatusCreated, f.addComment(botLogin, in.Body))
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

// review submits a review of the pull request's head as login. GitHub
// refuses an author's approval of their own pull request.
func (f *fakeGitHub) review(login, state string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if login == f.pr.Author && state != "COMMENTED" {
		return nil, fmt.Errorf("Can not approve your own pull request")
	}
	f.nextID++
	r := fakeReview{ID: f.nextID, User: login, State: state, CommitID: f.pr.HeadSHA, Submitted: time.Now().Truncate(time.Second)}
	f.reviews = append(f.reviews, r)
	return f.reviewJSON(r), nil
}

func (f *fakeGitHub) reviewJSON(r fakeReview) map[string]any {
	return map[string]any{"id": r.ID, "user": f.user(r.User), "state": r.State, "commit_id": r.CommitID, "body": "",
		"submitted_at": r.Submitted.UTC().Format(time.RFC3339)}
}

func (f *fakeGitHub) listReviews(w http.ResponseWriter, _ *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []map[string]any{}
	for _, r := range f.reviews {
		out = append(out, f.reviewJSON(r))
	}
	writeJSON(w, http.StatusOK, out)
}

// approveDeployment records login's review of run's deployment to env,
// as GitHub does when a required reviewer approves or rejects it.
func (f *fakeGitHub) approveDeployment(run int64, env, login, state string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.approvals[run] = append(f.approvals[run], fakeApproval{Env: env, User: login, State: state})
}

func (f *fakeGitHub) listApprovals(w http.ResponseWriter, r *http.Request) {
	run, _ := strconv.ParseInt(r.PathValue("run"), 10, 64)
	f.mu.Lock()
	defer f.mu.Unlock()
	out := []map[string]any{}
	for _, a := range f.approvals[run] {
		out = append(out, map[string]any{"environments": []map[string]any{{"name": a.Env}}, "state": a.State, "user": f.user(a.User), "comment": a.Comment})
	}
	writeJSON(w, http.StatusOK, out)
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

// getCommit says what GitHub says of a commit's signature (the provenance
// input without trusted keys): a commit of the consumer's repository that
// carries an OpenPGP signature is verified, as GitHub verifies one signed
// with a key its author registered; any other is unsigned.
func (f *fakeGitHub) getCommit(w http.ResponseWriter, r *http.Request) {
	sha := r.PathValue("sha")
	verification := map[string]any{"verified": false, "reason": "unsigned", "signature": nil, "payload": nil}
	if f.git != "" {
		if raw, err := exec.Command("git", "--git-dir", f.git, "cat-file", "commit", sha).Output(); err == nil {
			if _, sig, ok := strings.Cut(string(raw), "\ngpgsig "); ok {
				sig, _, _ = strings.Cut(sig, "\n\n")
				verification = map[string]any{"verified": true, "reason": "valid", "signature": sig, "payload": "tree …", "verified_at": "2024-05-02T09:00:00Z"}
			}
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"sha": sha, "commit": map[string]any{"message": "a change", "verification": verification}})
}

func (f *fakeGitHub) getRepo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, f.repoJSON())
}

// getBranch answers from the bare repository; main is protected.
func (f *fakeGitHub) getBranch(w http.ResponseWriter, r *http.Request) {
	branch := r.PathValue("branch")
	out, err := exec.Command("git", "--git-dir", f.git, "rev-parse", "--verify", "refs/heads/"+branch).Output()
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Branch not found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"name": branch, "protected": branch == "main",
		"commit": map[string]any{"sha": strings.TrimSpace(string(out))}})
}

// getContents serves a file of the bare repository at ?ref=, base64 as
// GitHub does.
func (f *fakeGitHub) getContents(w http.ResponseWriter, r *http.Request) {
	p, ref := r.PathValue("path"), r.URL.Query().Get("ref")
	if ref == "" {
		ref = "main"
	}
	data, err := exec.Command("git", "--git-dir", f.git, "show", ref+":"+p).Output()
	if err != nil {
		writeJSON(w, http.StatusNotFound, map[string]string{"message": "Not Found"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"type": "file", "encoding": "base64", "name": path.Base(p), "path": p, "size": len(data),
		"content": base64.StdEncoding.EncodeToString(data)})
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

// botComments counts nova's comments holding marker text.
func (f *fakeGitHub) botComments(contains string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	n := 0
	for _, c := range f.comments {
		if c.User == botLogin && strings.Contains(c.Body, contains) {
			n++
		}
	}
	return n
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
