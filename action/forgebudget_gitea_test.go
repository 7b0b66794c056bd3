package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
	"github.com/nova-platform/nova/templates"
)

// apiCounter stands between nova and a real Gitea and counts the API
// requests that pass, by "METHOD path".
type apiCounter struct {
	srv *httptest.Server

	mu       sync.Mutex
	total    int
	requests map[string]int
}

func newAPICounter(tb testing.TB, target string) *apiCounter {
	u, err := url.Parse(target)
	if err != nil {
		tb.Fatal(err)
	}
	c := &apiCounter{requests: map[string]int{}}
	proxy := httputil.NewSingleHostReverseProxy(u)
	c.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/") {
			c.mu.Lock()
			c.total++
			c.requests[r.Method+" "+r.URL.Path]++
			c.mu.Unlock()
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(c.srv.Close)
	return c
}

func (c *apiCounter) counts() (int, map[string]int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]int{}
	for k, v := range c.requests {
		out[k] = v
	}
	return c.total, out
}

// giteaPullRequestOf commits n contracts and a change to each, pushes both
// to a new repository of s as two branches, opens the pull request of the
// change, and points m's environment at it through a counter, as Gitea's
// runner would for a job of that pull request. It returns the counter,
// the repository's API path and the pull request's number.
func giteaPullRequestOf(m *monorepoRun, s *giteatest.Server, n int) (*apiCounter, string, int) {
	tb := m.t
	tb.Helper()
	for i := range n {
		m.contract(fmt.Sprintf("svc/%04d/.nova/contract.yml", i), budgetID(i), fmt.Sprintf("team %d", i))
	}
	base := m.commit("base")
	for i := range n {
		m.contract(fmt.Sprintf("svc/%04d/.nova/contract.yml", i), budgetID(i), fmt.Sprintf("team %d, changed", i))
	}
	head := m.commit("the change")
	owner, name := s.AdminUser, "mono"
	s.CreateRepo(tb, owner, name)
	repo, err := git.PlainOpen(m.root)
	if err != nil {
		tb.Fatal(err)
	}
	for ref, sha := range map[string]string{"refs/heads/nova-base": base, "refs/heads/nova-change": head} {
		if err := repo.Storer.SetReference(plumbing.NewHashReference(plumbing.ReferenceName(ref), plumbing.NewHash(sha))); err != nil {
			tb.Fatal(err)
		}
	}
	if _, err := repo.CreateRemote(&config.RemoteConfig{Name: "gitea", URLs: []string{s.URL + "/" + owner + "/" + name + ".git"}}); err != nil {
		tb.Fatal(err)
	}
	if err := repo.Push(&git.PushOptions{RemoteName: "gitea", Auth: &githttp.BasicAuth{Username: s.AdminUser, Password: s.AdminToken},
		RefSpecs: []config.RefSpec{"refs/heads/nova-base:refs/heads/nova-base", "refs/heads/nova-change:refs/heads/nova-change"}}); err != nil {
		tb.Fatal(err)
	}
	pr := s.CreatePullRequest(tb, owner, name, "nova-change", "nova-base", "a change to every contract", s.Admin())
	counter := newAPICounter(tb, s.URL)
	event := filepath.Join(tb.TempDir(), "event.json")
	writeFile(tb, event, fmt.Sprintf(`{"pull_request":{"number":%d,"base":{"sha":"%s"},"head":{"sha":"%s"}}}`, pr, base, head))
	for k, v := range map[string]string{
		"GITEA_ACTIONS": "true", "GITHUB_ACTIONS": "true", "GITHUB_SERVER_URL": counter.srv.URL,
		"GITHUB_REPOSITORY": owner + "/" + name, "GITHUB_EVENT_NAME": "pull_request", "GITHUB_EVENT_PATH": event, "GITHUB_TOKEN": s.AdminToken,
		"GITHUB_RUN_ID": "1", "GITHUB_RUN_NUMBER": "1",
	} {
		m.env[k] = v
	}
	return counter, "/repos/" + owner + "/" + name, pr
}

// TestGiteaJobWithinTheBudget: on a real Gitea, a job reporting twelve
// contracts sets a status for each and keeps one summary comment, within
// three API requests per contract; run again on the same commit it sets
// no status and edits no comment.
func TestGiteaJobWithinTheBudget(t *testing.T) {
	const n = 12
	s := giteatest.Start(t)
	m := newMonorepoRun(t)
	counter, repoPath, pr := giteaPullRequestOf(m, s, n)

	code, stdout, stderr := m.nova("validate", "--changed")
	if code != ExitPass || strings.Contains(stderr, "could not") {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, ExitPass, stdout, stderr)
	}
	total, byRoute := counter.counts()
	t.Logf("requests by route: %v", byRoute)
	if total > 3*n {
		t.Errorf("%d requests for %d contracts, more than 3 each: %v", total, n, byRoute)
	}
	var statuses []struct{ Context string }
	s.API(t, s.AdminToken, http.MethodGet, repoPath+"/commits/"+m.headOf(t)+"/statuses?limit=50", nil, &statuses)
	seen := map[string]bool{}
	for _, st := range statuses {
		seen[st.Context] = true
	}
	for i := range n {
		if !seen["nova/"+budgetID(i)+"/dev"] {
			t.Errorf("no status nova/%s/dev on the head", budgetID(i))
		}
	}
	var comments []struct{ Body string }
	s.API(t, s.AdminToken, http.MethodGet, fmt.Sprintf("%s/issues/%d/comments", repoPath, pr), nil, &comments)
	if len(comments) != 1 || !strings.HasPrefix(comments[0].Body, summaryMarker("dev", budgetID(0), 1)) {
		t.Fatalf("comments: want the one summary of dev, got %d: %v", len(comments), comments)
	}
	for i := range n {
		if !strings.Contains(comments[0].Body, "<code>"+templates.EscapeMarkdown(budgetID(i))+"</code>") {
			t.Errorf("the summary has no row for %s", budgetID(i))
		}
	}

	if code, stdout, stderr := m.nova("validate", "--changed"); code != ExitPass {
		t.Fatalf("second run: exit %d\n%s\n%s", code, stdout, stderr)
	}
	_, again := counter.counts()
	for _, route := range []string{"POST " + "/api/v1" + repoPath + "/statuses/" + m.headOf(t)} {
		if d := again[route] - byRoute[route]; d != 0 {
			t.Errorf("the second run made %d more %s", d, route)
		}
	}
	for route, k := range again {
		if strings.HasPrefix(route, "PATCH ") && k != byRoute[route] {
			t.Errorf("the second run edited an unchanged comment: %s", route)
		}
	}
}

// headOf is the commit HEAD of m's repository names.
func (m *monorepoRun) headOf(tb testing.TB) string {
	tb.Helper()
	repo, err := git.PlainOpen(m.root)
	if err != nil {
		tb.Fatal(err)
	}
	h, err := repo.Head()
	if err != nil {
		tb.Fatal(err)
	}
	return h.Hash().String()
}
