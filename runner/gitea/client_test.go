package gitea

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/forgehttp"
)

const secret = "5e3c1d7a9b0f4e2d8c6a1b3f5e7d9c0a2b4d6f81"

// noWait never waits: tests must not.
func noWait(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// fakeGitea answers /api/v1/version as Gitea 1.23.8 and everything else
// with handler.
func fakeGitea(t *testing.T, handler http.HandlerFunc) *httptest.Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/api/v1/version" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"version":"1.23.8"}`)
			return
		}
		handler(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts
}

func testConfig(url string) Config {
	return Config{URL: url, Token: secret, Owner: "platform", Repo: "infra", PullRequest: 1, Retry: forgehttp.Policy{Sleep: noWait}}
}

func newTestClient(t *testing.T, url string) *Client {
	t.Helper()
	c, err := New(t.Context(), testConfig(url))
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c
}

// wantReason fails unless err carries reason and says each of says, and
// never the token.
func wantReason(t *testing.T, err error, reason runner.Reason, says ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want %s", reason)
	}
	if got := runner.ReasonOf(err); got != reason {
		t.Errorf("reason %s, want %s: %v", got, reason, err)
	}
	for _, s := range says {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not say %q", err, s)
		}
	}
	if strings.Contains(err.Error(), secret) {
		t.Errorf("error holds the token: %q", err)
	}
}

func TestNewChecksTheConfig(t *testing.T) {
	ok := testConfig("https://gitea.example.com")
	tests := []struct {
		name   string
		change func(*Config)
		says   string
	}{
		{"no URL", func(c *Config) { c.URL = "" }, "no URL"},
		{"not http", func(c *Config) { c.URL = "ftp://gitea.example.com" }, "not an http(s) URL"},
		{"no host", func(c *Config) { c.URL = "https://" }, "not an http(s) URL"},
		{"credentials in the URL", func(c *Config) { c.URL = "https://bot:" + secret + "@gitea.example.com" }, "holds credentials"},
		{"a token as the URL's user", func(c *Config) { c.URL = "ftp://" + secret + "@gitea.example.com" }, "holds credentials"},
		{"a URL that does not parse", func(c *Config) { c.URL = "https://bot:" + secret + "%zz@gitea.example.com" }, "reading the URL"},
		{"a query", func(c *Config) { c.URL = "https://gitea.example.com/?token=" + secret }, "query"},
		{"no token", func(c *Config) { c.Token = "" }, "no token"},
		{"no owner", func(c *Config) { c.Owner = "" }, "no repository"},
		{"negative pull request", func(c *Config) { c.PullRequest = -1 }, "negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.change(&cfg)
			_, err := New(t.Context(), cfg)
			wantReason(t, err, runner.ConfigInvalid, tc.says)
		})
	}
}

func TestNewFailsClearly(t *testing.T) {
	refused := func() string {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		return "http://" + l.Addr().String()
	}()
	// Gitea 1.23 checks the token on every route, /version included, and
	// calls a token it does not know "user does not exist"; the answer here
	// also echoes the token, as a careless proxy might.
	unauthorized := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		json.NewEncoder(w).Encode(map[string]string{"message": "user does not exist [uid: 0, name: ] (" + r.Header.Get("Authorization") + ")"})
	}))
	defer unauthorized.Close()
	notGitea := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{}`)
	}))
	defer notGitea.Close()
	html := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html>a login page</html>`)
	}))
	defer html.Close()

	tests := []struct {
		name string
		url  string
		says []string
	}{
		{"nothing listens", refused, []string{"listing the comments", "gave up after 5 attempts", "connection refused"}},
		{"the token is refused", unauthorized.URL, []string{"listing the comments", "invalid or lacks a scope", "401 Unauthorized", "[REDACTED]"}},
		{"not gitea", notGitea.URL, []string{"listing the comments", notGitea.URL + " does not answer /api/v1/version as Gitea does"}},
		{"not an API", html.URL, []string{"listing the comments", html.URL + " does not answer /api/v1/version as Gitea does"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// New asks nothing; the first call says what is wrong.
			c := newTestClient(t, tc.url)
			_, err := c.Comments().Claims(t.Context(), request)
			wantReason(t, err, runner.ForgeAPIFailed, tc.says...)
		})
	}
}

// TestTokenNeverInErrors provokes every kind of failure from a server that
// echoes the Authorization header into its answers.
func TestTokenNeverInErrors(t *testing.T) {
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"message": "you sent " + r.Header.Get("Authorization")})
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		says    []string
	}{
		{"401", echo(http.StatusUnauthorized), []string{"invalid or lacks a scope"}},
		{"403", echo(http.StatusForbidden), []string{"lacks a scope or its user lacks a permission"}},
		{"422", echo(http.StatusUnprocessableEntity), []string{"422 Unprocessable Entity", "you sent token [REDACTED]"}},
		{"500 until the retries run out", echo(http.StatusInternalServerError), []string{"gave up after 5 attempts"}},
		{"not JSON", func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, "<html>\n<p>bad request from %s</p>\n</html>", r.Header.Get("Authorization"))
		}, []string{"400 Bad Request"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newTestClient(t, fakeGitea(t, tc.handler).URL)
			ctx := t.Context()
			_, err := c.Reviews().Claims(ctx, request)
			wantReason(t, err, runner.ForgeAPIFailed, append([]string{"reading pull request platform/infra#1"}, tc.says...)...)
			_, err = c.Comments().Claims(ctx, request)
			wantReason(t, err, runner.ForgeAPIFailed, append([]string{"listing the comments of pull request platform/infra#1"}, tc.says...)...)
			_, err = c.Teams().IsTeamMember(ctx, "platform/qa", "bob")
			teamReason := runner.ForgeAPIFailed
			if tc.name == "403" {
				// A token that may not list the teams cannot tell who
				// approves: a configuration error of its own.
				teamReason = runner.ApproverTeamUnreadable
			}
			wantReason(t, err, teamReason, append([]string{"finding team platform/qa"}, tc.says...)...)
			_, err = c.PullRequest().Change(ctx)
			wantReason(t, err, runner.ForgeAPIFailed, tc.says...)
			err = c.PullRequest().UpsertComment(ctx, runner.CommentPrefix+" -->", runner.CommentPrefix+" -->\nbody")
			wantReason(t, err, runner.ForgeAPIFailed, append([]string{"updating nova's comment"}, tc.says...)...)
			err = c.Statuses().SetStatus(ctx, commit, runner.CommitStatus{Context: "nova/qa", State: runner.StatePending})
			wantReason(t, err, runner.ForgeAPIFailed, append([]string{"setting status nova/qa on platform/infra@" + commit}, tc.says...)...)
		})
	}
}

func TestCancelledIsNotAForgeFailure(t *testing.T) {
	ts := fakeGitea(t, func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) })
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	cfg := testConfig(ts.URL)
	// The run is cancelled while the transport waits to retry.
	cfg.Retry.Sleep = func(ctx context.Context, _ time.Duration) error {
		cancel()
		return ctx.Err()
	}
	c, err := New(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	err = c.Statuses().SetStatus(ctx, commit, runner.CommitStatus{Context: "nova/qa", State: runner.StatePending})
	wantReason(t, err, runner.RunCancelled, "setting status nova/qa", "context canceled")
}

func TestWithoutAPullRequest(t *testing.T) {
	ts := fakeGitea(t, func(w http.ResponseWriter, r *http.Request) { t.Errorf("unexpected %s %s", r.Method, r.URL) })
	cfg := testConfig(ts.URL)
	cfg.PullRequest = 0
	c, err := New(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	_, err = c.Reviews().Claims(ctx, request)
	wantReason(t, err, runner.ConfigInvalid, "no pull request")
	_, err = c.Comments().Claims(ctx, request)
	wantReason(t, err, runner.ConfigInvalid, "no pull request")
	_, err = c.PullRequest().Change(ctx)
	wantReason(t, err, runner.ConfigInvalid, "no pull request")
	err = c.PullRequest().UpsertComment(ctx, runner.CommentPrefix+" -->", runner.CommentPrefix+" -->\nbody")
	wantReason(t, err, runner.ConfigInvalid, "no pull request")
}

// TestPaginate checks the ways a list ends, including the one Gitea's
// issue comments route takes: ignoring page and limit altogether.
func TestPaginate(t *testing.T) {
	const items = 5
	tests := []struct {
		name string
		// serve writes page (1-based) of the list.
		headers   func(w http.ResponseWriter, r *http.Request, page, limit int)
		ignore    bool // the server returns every item whatever the page
		wantCalls int
	}{
		{"X-Total-Count", func(w http.ResponseWriter, _ *http.Request, _, _ int) {
			w.Header().Set("X-Total-Count", strconv.Itoa(items))
		}, false, 3},
		{"Link", func(w http.ResponseWriter, r *http.Request, page, limit int) {
			if page*limit < items {
				w.Header().Set("Link", fmt.Sprintf(`<http://x%s?page=%d&limit=%d>; rel="next"`, r.URL.Path, page+1, limit))
			}
		}, false, 3},
		{"no headers: a short page ends it", func(http.ResponseWriter, *http.Request, int, int) {}, false, 3},
		{"page ignored, with X-Total-Count", func(w http.ResponseWriter, _ *http.Request, _, _ int) {
			w.Header().Set("X-Total-Count", strconv.Itoa(items))
		}, true, 1},
		{"page ignored, no headers: a page with nothing new ends it", func(http.ResponseWriter, *http.Request, int, int) {}, true, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			ts := fakeGitea(t, func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls++
				mu.Unlock()
				page, _ := strconv.Atoi(r.URL.Query().Get("page"))
				limit, _ := strconv.Atoi(r.URL.Query().Get("limit"))
				from, to := (page-1)*limit, min(page*limit, items)
				if tc.ignore {
					from, to = 0, items
				}
				var list []map[string]any
				for i := from; i < to; i++ {
					list = append(list, map[string]any{"id": i + 1})
				}
				tc.headers(w, r, page, limit)
				json.NewEncoder(w).Encode(list)
			})
			c := newTestClient(t, ts.URL)
			c.pageSize = 2
			ctx := t.Context()
			got, err := paginate(ctx, c, "listing reviews", func(r *sdk.PullReview) string { return idKey(r.ID) },
				func(o sdk.ListOptions) ([]*sdk.PullReview, *sdk.Response, error) {
					return c.api(ctx).ListPullReviews("platform", "infra", 1, sdk.ListPullReviewsOptions{ListOptions: o})
				})
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, r := range got {
				ids = append(ids, r.ID)
			}
			if diff := cmp.Diff([]int64{1, 2, 3, 4, 5}, ids); diff != "" {
				t.Errorf("ids (-want +got):\n%s", diff)
			}
			if calls != tc.wantCalls {
				t.Errorf("%d requests, want %d", calls, tc.wantCalls)
			}
		})
	}
}
