package github

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner/forgehttp"
)

// testToken looks like an installation token, so a leak would look like
// one too.
const testToken = "ghs_NovaTestToken0123456789abcdefABCD"

// personalToken is a personal access token's shape: GitHub answers GET
// /user for it, where an installation token (testToken) is not asked.
const personalToken = "ghp_NovaTestToken0123456789abcdefABCD"

// planned is when the test plan was recorded; fixtures put reviews and
// comments on both sides of it.
var planned = time.Date(2024, 5, 2, 9, 30, 0, 0, time.UTC)

const (
	headSHA   = "6dcb09b5b57875f334f61aebed695e2e4193db5e"
	baseSHA   = "9a8b7c6d5e4f30211203f4e5d6c7b8a9f0e1d2c3"
	digest    = "3f1c9a0b7e2d4c5f8a6b1e0d9c8b7a6f5e4d3c2b1a0f9e8d7c6b5a4f3e2d1c0b"
	testRunID = 30433642
)

// fakeClock stands in for time: Sleep records what it was asked to wait
// and moves the clock on, without waiting.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	slept []time.Duration
}

func newClock() *fakeClock {
	return &fakeClock{now: time.Date(2024, 5, 2, 12, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.slept = append(c.slept, d)
	c.now = c.now.Add(d)
	return nil
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Slept() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.slept...)
}

// fakeGitHub is an httptest server with GitHub's routes registered per
// test. It refuses requests without the test token, as GitHub does, and
// logs every request it answers.
type fakeGitHub struct {
	t     *testing.T
	srv   *httptest.Server
	mux   *http.ServeMux
	clock *fakeClock
	// token is the one token the fake accepts (testToken unless a test
	// changes it before its first request).
	token string

	mu  sync.Mutex
	log []string
}

func newFakeGitHub(t *testing.T) *fakeGitHub {
	t.Helper()
	f := &fakeGitHub{t: t, mux: http.NewServeMux(), clock: newClock(), token: testToken}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.log = append(f.log, r.Method+" "+r.URL.RequestURI())
		f.mu.Unlock()
		if r.Header.Get("Authorization") != "Bearer "+f.token {
			writeJSON(w, http.StatusUnauthorized, fixture(t, "bad_credentials.json"))
			return
		}
		f.mux.ServeHTTP(w, r)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeGitHub) handle(pattern string, h http.HandlerFunc) { f.mux.HandleFunc(pattern, h) }

// pagesRead lists the page parameter of every request for path.
func (f *fakeGitHub) pagesRead(path string) []string {
	var pages []string
	for _, r := range f.requests() {
		u, err := url.Parse(strings.TrimPrefix(r, "GET "))
		if err == nil && strings.HasPrefix(r, "GET ") && u.Path == path {
			pages = append(pages, u.Query().Get("page"))
		}
	}
	return pages
}

func (f *fakeGitHub) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.log...)
}

// config is the Config of a client of f; edit changes it before New.
func (f *fakeGitHub) config() Config {
	return Config{
		APIURL:      f.srv.URL + "/",
		Token:       f.token,
		Owner:       "octo-org",
		Repo:        "infra",
		PullRequest: 7,
		RunID:       testRunID,
		Retry:       forgehttp.Policy{Sleep: f.clock.Sleep, Now: f.clock.Now},
	}
}

func (f *fakeGitHub) client(edit ...func(*Config)) *Client {
	f.t.Helper()
	cfg := f.config()
	for _, e := range edit {
		e(&cfg)
	}
	c, err := New(cfg)
	if err != nil {
		f.t.Fatalf("New: %v", err)
	}
	return c
}

// pages serves fixtures name_page1.json … name_pageN.json as one list,
// linked by Link headers the way GitHub links them.
func (f *fakeGitHub) pages(name string, n int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		page := 1
		if p := r.URL.Query().Get("page"); p != "" {
			page, _ = strconv.Atoi(p)
		}
		if page < 1 || page > n {
			writeJSON(w, http.StatusOK, []byte("[]"))
			return
		}
		link := func(p int, rel string) string {
			q := r.URL.Query()
			q.Set("page", strconv.Itoa(p))
			return fmt.Sprintf(`<http://%s%s?%s>; rel="%s"`, r.Host, r.URL.Path, q.Encode(), rel)
		}
		var links []string
		if page < n {
			links = append(links, link(page+1, "next"), link(n, "last"))
		}
		if page > 1 {
			links = append(links, link(1, "first"), link(page-1, "prev"))
		}
		if len(links) > 0 {
			w.Header().Set("Link", strings.Join(links, ", "))
		}
		writeJSON(w, http.StatusOK, fixture(f.t, fmt.Sprintf("%s_page%d.json", name, page)))
	}
}

func fixture(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	return b
}

// fixtureWith decodes a fixture object, lets edit change it, and encodes
// it again: the documented shape with one field changed per test case.
func fixtureWith(t *testing.T, name string, edit func(map[string]any)) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(fixture(t, name), &m); err != nil {
		t.Fatalf("fixture %s: %v", name, err)
	}
	if edit != nil {
		edit(m)
	}
	return m
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	b, ok := body.([]byte)
	if !ok {
		var err error
		if b, err = json.Marshal(body); err != nil {
			panic(err)
		}
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// checkNoToken fails the test if the token appears in err, in anything it
// wraps, or in any way fmt can print it.
func checkNoToken(t *testing.T, err error) {
	t.Helper()
	checkNoSecret(t, err, testToken)
}

func checkNoSecret(t *testing.T, err error, token string) {
	t.Helper()
	for e := err; e != nil; e = errors.Unwrap(e) {
		for _, s := range []string{e.Error(), fmt.Sprintf("%v", e), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(s, token) {
				t.Errorf("the token appears in an error: %s", s)
			}
		}
	}
}
