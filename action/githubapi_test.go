package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// githubAPI is a fake GitHub REST API for the calls a job's forge report
// makes: the pull request's comments, commit statuses and check runs. It
// counts every request, answers a read whose If-None-Match names the
// current ETag with 304 Not Modified as GitHub does, and answers chosen
// writes and reads with a rate limit first (secondary: 403 with
// Retry-After and GitHub's documented message; or 429 with Retry-After),
// so a test sees the job wait and go on.
type githubAPI struct {
	t   testing.TB
	srv *httptest.Server

	mu sync.Mutex
	// requests counts every request by "METHOD path"; notModified those
	// answered 304, which GitHub does not count against the primary
	// limit; limited those answered with a rate limit.
	requests    map[string]int
	total       int
	notModified int
	limited     int
	// comments on pull request 7, oldest first, ids from 1.
	comments []fakeComment
	// statuses are every status set, in order; checkRuns every check run.
	statuses  []fakeStatus
	checkRuns []fakeCheckRun
	// writes counts POSTs and PATCHes; limitWrites lists which of them
	// (1-based, counting refused attempts too) first meet the secondary
	// limit; limitReads which GETs meet a 429.
	writes, reads           int
	limitWrites, limitReads []int
	// limitPrimary lists the writes that meet the primary limit: 403,
	// X-RateLimit-Remaining 0, and the reset at resetAt.
	limitPrimary []int
	resetAt      time.Time
}

type fakeComment struct {
	ID   int64
	Body string
}

type fakeStatus struct {
	SHA, Context, State, Description, TargetURL string
}

type fakeCheckRun struct {
	HeadSHA, Name, Conclusion, Title, Summary string
}

// secondaryLimitMessage is GitHub's documented answer to a secondary rate
// limit (docs.github.com, "Rate limits for the REST API").
const secondaryLimitMessage = `{"message":"You have exceeded a secondary rate limit. Please wait a few minutes before you try again. If you reach out to GitHub Support for help, please include the request ID 0000:0000:0000:0000:0000.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits","status":"403"}`

func newGitHubAPI(t testing.TB) *githubAPI {
	g := &githubAPI{t: t, requests: map[string]int{}}
	g.srv = httptest.NewServer(g)
	t.Cleanup(g.srv.Close)
	return g
}

func (g *githubAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	g.mu.Lock()
	defer g.mu.Unlock()
	g.total++
	g.requests[r.Method+" "+r.URL.Path]++
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Header().Set("X-RateLimit-Limit", "1000")
	w.Header().Set("X-RateLimit-Remaining", "900")
	switch r.Method {
	case http.MethodPost, http.MethodPatch:
		g.writes++
		if slices.Contains(g.limitPrimary, g.writes) {
			g.limited++
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(g.resetAt.Unix(), 10))
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, `{"message":"API rate limit exceeded for installation ID 1.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api"}`)
			return
		}
		if slices.Contains(g.limitWrites, g.writes) {
			g.limited++
			w.Header().Set("Retry-After", "60")
			w.WriteHeader(http.StatusForbidden)
			_, _ = io.WriteString(w, secondaryLimitMessage)
			return
		}
	case http.MethodGet:
		g.reads++
		if slices.Contains(g.limitReads, g.reads) {
			g.limited++
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_, _ = io.WriteString(w, `{"message":"API rate limit exceeded"}`)
			return
		}
	}
	status, answer := g.route(r, body, w.Header())
	if status == http.StatusOK && r.Method == http.MethodGet {
		sum := sha256.Sum256(answer)
		etag := `W/"` + hex.EncodeToString(sum[:16]) + `"`
		w.Header().Set("ETag", etag)
		if r.Header.Get("If-None-Match") == etag {
			g.notModified++
			w.WriteHeader(http.StatusNotModified)
			return
		}
	}
	w.WriteHeader(status)
	_, _ = w.Write(answer)
}

// route answers one request; it runs under g.mu.
func (g *githubAPI) route(r *http.Request, body []byte, h http.Header) (int, []byte) {
	path := r.URL.Path
	switch {
	case r.Method == http.MethodGet && path == "/repos/o/r/issues/7/comments":
		var all []any
		for _, c := range g.comments {
			all = append(all, g.comment(c))
		}
		return http.StatusOK, mustJSON(g.pageItems(r, all, h))
	case r.Method == http.MethodPost && path == "/repos/o/r/issues/7/comments":
		var in struct{ Body string }
		_ = json.Unmarshal(body, &in)
		c := fakeComment{ID: int64(len(g.comments) + 1), Body: in.Body}
		g.comments = append(g.comments, c)
		return http.StatusCreated, mustJSON(g.comment(c))
	case r.Method == http.MethodPatch && strings.HasPrefix(path, "/repos/o/r/issues/comments/"):
		id, _ := strconv.ParseInt(strings.TrimPrefix(path, "/repos/o/r/issues/comments/"), 10, 64)
		var in struct{ Body string }
		_ = json.Unmarshal(body, &in)
		for i := range g.comments {
			if g.comments[i].ID == id {
				g.comments[i].Body = in.Body
				return http.StatusOK, mustJSON(g.comment(g.comments[i]))
			}
		}
	case r.Method == http.MethodPost && strings.HasPrefix(path, "/repos/o/r/statuses/"):
		var in struct {
			State, Context, Description string
			TargetURL                   string `json:"target_url"`
		}
		_ = json.Unmarshal(body, &in)
		g.statuses = append(g.statuses, fakeStatus{SHA: strings.TrimPrefix(path, "/repos/o/r/statuses/"), Context: in.Context,
			State: in.State, Description: in.Description, TargetURL: in.TargetURL})
		return http.StatusCreated, []byte(`{}`)
	case r.Method == http.MethodGet && strings.HasPrefix(path, "/repos/o/r/commits/") && strings.HasSuffix(path, "/status"):
		sha := strings.TrimSuffix(strings.TrimPrefix(path, "/repos/o/r/commits/"), "/status")
		// Newest of each context, as GitHub's combined status has it.
		latest := map[string]fakeStatus{}
		var order []string
		for _, s := range g.statuses {
			if s.SHA != sha {
				continue
			}
			if _, ok := latest[s.Context]; !ok {
				order = append(order, s.Context)
			}
			latest[s.Context] = s
		}
		var all []any
		for _, c := range order {
			s := latest[c]
			all = append(all, map[string]any{"state": s.State, "context": s.Context, "description": s.Description, "target_url": s.TargetURL})
		}
		items := g.pageItems(r, all, h)
		return http.StatusOK, mustJSON(map[string]any{"state": "pending", "sha": sha, "total_count": len(all), "statuses": items})
	case r.Method == http.MethodPost && path == "/repos/o/r/check-runs":
		var in struct {
			HeadSHA    string `json:"head_sha"`
			Name       string
			Conclusion string
			Output     struct{ Title, Summary string }
		}
		_ = json.Unmarshal(body, &in)
		if len([]rune(in.Output.Summary)) > 65535 {
			return http.StatusUnprocessableEntity, []byte(`{"message":"Invalid request.\n\nOnly 65535 characters are allowed; 65536 were supplied."}`)
		}
		g.checkRuns = append(g.checkRuns, fakeCheckRun{HeadSHA: in.HeadSHA, Name: in.Name, Conclusion: in.Conclusion, Title: in.Output.Title, Summary: in.Output.Summary})
		return http.StatusCreated, mustJSON(map[string]any{"id": len(g.checkRuns), "name": in.Name})
	case r.Method == http.MethodGet && path == "/user":
		return http.StatusForbidden, []byte(`{"message":"Resource not accessible by integration"}`)
	}
	return http.StatusNotFound, []byte(`{"message":"Not Found"}`)
}

// comment is a comment as GitHub shows it, posted by the workflow's token.
func (g *githubAPI) comment(c fakeComment) map[string]any {
	return map[string]any{"id": c.ID, "body": c.Body, "html_url": fmt.Sprintf("https://github.example.com/o/r/pull/7#issuecomment-%d", c.ID),
		"user": map[string]any{"login": "github-actions[bot]", "type": "Bot"}}
}

// pageItems is one page of a list, linked to the next in h the way GitHub
// links it.
func (g *githubAPI) pageItems(r *http.Request, all []any, h http.Header) []any {
	per, _ := strconv.Atoi(r.URL.Query().Get("per_page"))
	if per <= 0 {
		per = 30
	}
	page := max(1, atoi(r.URL.Query().Get("page")))
	from, to := min((page-1)*per, len(all)), min(page*per, len(all))
	if to < len(all) {
		q := r.URL.Query()
		q.Set("page", strconv.Itoa(page+1))
		h.Set("Link", fmt.Sprintf(`<%s%s?%s>; rel="next"`, g.srv.URL, r.URL.Path, q.Encode()))
	}
	out := all[from:to]
	if out == nil {
		out = []any{}
	}
	return out
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// budget is what the fake saw, for a test or a benchmark to report.
type budget struct {
	Requests, NotModified, Limited int
	ByRoute                        map[string]int
	Comments, CommentBytes         int
	Statuses, CheckRuns            int
}

func (g *githubAPI) budget() budget {
	g.mu.Lock()
	defer g.mu.Unlock()
	b := budget{Requests: g.total, NotModified: g.notModified, Limited: g.limited, ByRoute: map[string]int{}, Comments: len(g.comments),
		Statuses: len(g.statuses), CheckRuns: len(g.checkRuns)}
	for k, v := range g.requests {
		b.ByRoute[k] = v
	}
	for _, c := range g.comments {
		b.CommentBytes += len(c.Body)
	}
	return b
}

// waits records the waits the forge's client was asked to make, making
// none: a rate limit's Retry-After is seen without time passing.
type waits struct {
	mu  sync.Mutex
	all []time.Duration
	now time.Time
}

func (w *waits) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.all = append(w.all, d)
	w.now = w.now.Add(d)
	return nil
}

func (w *waits) Now() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.now.IsZero() {
		w.now = time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC)
	}
	return w.now
}

func (w *waits) slept() []time.Duration {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.all)
}
