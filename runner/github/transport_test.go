package github

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// answer is one scripted response of the fake API.
type answer struct {
	status int
	header map[string]string
	// body is a fixture name.
	body string
}

// script answers the n-th request with answers[n] and counts requests.
type script struct {
	t       *testing.T
	mu      sync.Mutex
	answers []answer
	n       int
}

func (s *script) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	i := s.n
	s.n++
	s.mu.Unlock()
	if i >= len(s.answers) {
		s.t.Errorf("request %d: only %d answers scripted", i+1, len(s.answers))
		w.WriteHeader(http.StatusTeapot)
		return
	}
	a := s.answers[i]
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	body := []byte(`{"message":"` + http.StatusText(a.status) + `"}`)
	if a.body != "" {
		body = fixture(s.t, a.body)
	}
	writeJSON(w, a.status, body)
}

func (s *script) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.n
}

// TestRetries: the shared transport (runner/forgehttp, whose tests cover
// its policy) answers GitHub's rate limits before go-github sees them, and
// what it gives up on reaches the caller as FORGE_API_FAILED, without the
// token.
func TestRetries(t *testing.T) {
	// The fake clock starts at newClock's time; resets are relative to it.
	reset := strconv.FormatInt(newClock().now.Add(42*time.Second).Unix(), 10)
	ok := answer{status: 200, body: "team_membership_active.json"}
	tests := []struct {
		name    string
		answers []answer
		// wantSlept is what the transport asked the sleeper for.
		wantSlept []time.Duration
		// wantErr is a substring of the error; "" means success.
		wantErr string
		// wantReason is the error's reason (default FORGE_API_FAILED).
		wantReason runner.Reason
	}{
		{
			name: "403 primary rate limit waits past X-RateLimit-Reset",
			answers: []answer{{status: 403, body: "rate_limited.json", header: map[string]string{
				"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Used": "5000",
				"X-RateLimit-Reset": reset, "X-RateLimit-Resource": "core",
			}}, ok},
			wantSlept: []time.Duration{43 * time.Second},
		},
		{
			name:      "403 secondary rate limit with Retry-After",
			answers:   []answer{{status: 403, body: "secondary_rate_limited.json", header: map[string]string{"Retry-After": "30"}}, ok},
			wantSlept: []time.Duration{30 * time.Second},
		},
		{
			name:      "403 secondary rate limit without Retry-After waits a minute",
			answers:   []answer{{status: 403, body: "secondary_rate_limited.json"}, ok},
			wantSlept: []time.Duration{time.Minute},
		},
		{
			name:      "retries exhausted",
			answers:   []answer{{status: 502}, {status: 502}, {status: 502}, {status: 502}, {status: 502}},
			wantSlept: []time.Duration{1 * time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second},
			wantErr:   "gave up after 5 attempts: 502 Bad Gateway",
		},
		{
			name:    "a rate limit longer than the maximum wait fails at once",
			answers: []answer{{status: 429, header: map[string]string{"Retry-After": "7200"}}},
			wantErr: "the next retry is 2h0m0s away, beyond the 1h1m0s one request may wait (after 1 attempt: 429 Too Many Requests",
		},
		{
			name:       "a permission 403 is not retried",
			answers:    []answer{{status: 403, body: "forbidden.json"}},
			wantErr:    "the token lacks a permission: this call needs members: read",
			wantReason: runner.ApproverTeamUnreadable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			s := &script{t: t, answers: tt.answers}
			f.handle("GET /orgs/octo-org/teams/sre/memberships/alice", s.ServeHTTP)
			member, err := f.client().Teams().IsTeamMember(t.Context(), "octo-org/sre", "alice")
			checkNoToken(t, err)
			if tt.wantErr == "" {
				if err != nil || !member {
					t.Fatalf("IsTeamMember = %v, %v; want true", member, err)
				}
			} else {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v; want it to contain %q", err, tt.wantErr)
				}
				want := tt.wantReason
				if want == "" {
					want = runner.ForgeAPIFailed
				}
				if r := runner.ReasonOf(err); r != want {
					t.Errorf("reason = %s; want %s", r, want)
				}
			}
			if diff := cmp.Diff(tt.wantSlept, f.clock.Slept()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			if s.count() != len(tt.answers) {
				t.Errorf("%d requests; want %d", s.count(), len(tt.answers))
			}
		})
	}
}

func TestRetryReplaysTheBody(t *testing.T) {
	f := newFakeGitHub(t)
	var (
		mu     sync.Mutex
		bodies []string
	)
	f.handle("POST /repos/octo-org/infra/statuses/{sha}", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		n := len(bodies)
		mu.Unlock()
		if n == 1 {
			writeJSON(w, http.StatusBadGateway, []byte(`{"message":"Server Error"}`))
			return
		}
		writeJSON(w, http.StatusCreated, fixture(t, "status.json"))
	})
	err := f.client().Statuses().SetStatus(t.Context(), headSHA, runner.CommitStatus{Context: "nova/prod", State: runner.StateSuccess})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || bodies[0] != bodies[1] || !strings.Contains(bodies[1], `"context":"nova/prod"`) {
		t.Errorf("bodies = %q; want the same full body twice", bodies)
	}
}

// roundTripFunc lets a test stand between the adapter and the network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestNetworkErrors(t *testing.T) {
	tests := []struct {
		name      string
		call      func(*Client) error
		wantCalls int
		wantErr   bool
	}{
		{
			name: "a GET is repeated after a connection error",
			call: func(c *Client) error {
				_, err := c.Teams().IsTeamMember(context.Background(), "octo-org/sre", "alice")
				return err
			},
			wantCalls: 2,
		},
		{
			// The POST may have reached GitHub: repeating it could create
			// a second deployment.
			name: "a POST is not repeated after a connection error",
			call: func(c *Client) error {
				_, err := c.Deployments().StartDeployment(context.Background(), headSHA, runner.Prod, "apply")
				return err
			},
			wantCalls: 1,
			wantErr:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /orgs/octo-org/teams/sre/memberships/alice", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, fixture(t, "team_membership_active.json"))
			})
			calls := 0
			c := f.client(func(cfg *Config) {
				cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
					calls++
					if calls == 1 {
						return nil, errors.New("connection reset by peer")
					}
					return http.DefaultTransport.RoundTrip(r)
				})}
			})
			err := tt.call(c)
			checkNoToken(t, err)
			if (err != nil) != tt.wantErr {
				t.Fatalf("error = %v; want error %v", err, tt.wantErr)
			}
			if err != nil && runner.ReasonOf(err) != runner.ForgeAPIFailed {
				t.Errorf("reason = %s; want %s", runner.ReasonOf(err), runner.ForgeAPIFailed)
			}
			if calls != tt.wantCalls {
				t.Errorf("%d attempts; want %d", calls, tt.wantCalls)
			}
		})
	}
}

func TestEveryAttemptHasATimeout(t *testing.T) {
	f := newFakeGitHub(t)
	attempts := 0
	c := f.client(func(cfg *Config) {
		cfg.Retry.Timeout = time.Nanosecond
		cfg.Retry.MaxAttempts = 2
		cfg.HTTPClient = &http.Client{Transport: roundTripFunc(func(r *http.Request) (*http.Response, error) {
			attempts++
			if _, ok := r.Context().Deadline(); !ok {
				t.Error("an attempt without a deadline")
			}
			// A server that never answers: the attempt ends when its
			// deadline (long past, at a nanosecond) says so.
			<-r.Context().Done()
			return nil, r.Context().Err()
		})}
	})
	_, err := c.Teams().IsTeamMember(t.Context(), "octo-org/sre", "alice")
	checkNoToken(t, err)
	if err == nil || !strings.Contains(err.Error(), "no answer within 1ns") {
		t.Fatalf("error = %v; want a timeout", err)
	}
	if runner.ReasonOf(err) != runner.ForgeAPIFailed {
		t.Errorf("reason = %s; want %s", runner.ReasonOf(err), runner.ForgeAPIFailed)
	}
	if attempts != 2 {
		t.Errorf("%d attempts; want 2", attempts)
	}
}

func TestWaitsHonourTheContext(t *testing.T) {
	f := newFakeGitHub(t)
	s := &script{t: t, answers: []answer{{status: 503}}}
	f.handle("GET /orgs/octo-org/teams/sre/memberships/alice", s.ServeHTTP)
	ctx, cancel := context.WithCancel(t.Context())
	c := f.client(func(cfg *Config) {
		// The run is cancelled while the transport waits to retry.
		cfg.Retry.Sleep = func(ctx context.Context, d time.Duration) error {
			cancel()
			return ctx.Err()
		}
	})
	_, err := c.Teams().IsTeamMember(ctx, "octo-org/sre", "alice")
	if !errors.Is(err, context.Canceled) || runner.ReasonOf(err) != runner.RunCancelled {
		t.Fatalf("error = %v (reason %s); want a cancellation", err, runner.ReasonOf(err))
	}
	if s.count() != 1 {
		t.Errorf("%d requests; want 1", s.count())
	}
}

func TestTokenGoesOnlyToTheAPI(t *testing.T) {
	// Another origin GitHub might redirect to; it must not see the token.
	var (
		mu      sync.Mutex
		gotAuth []string
	)
	elsewhere := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = append(gotAuth, r.Header.Get("Authorization"))
		mu.Unlock()
		writeJSON(w, 200, fixture(t, "pull.json"))
	}))
	defer elsewhere.Close()

	f := newFakeGitHub(t)
	f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, elsewhere.URL+"/moved/pulls/7", http.StatusFound)
	})
	f.handle("GET /repos/octo-org/infra/pulls/7/commits", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "pull_commits.json"))
	})
	if _, err := f.client().PullRequest().Change(t.Context()); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff([]string{""}, gotAuth); diff != "" {
		t.Errorf("Authorization sent to another host (-want +got):\n%s", diff)
	}
}

func TestUsingTheLastRequestDoesNotStopTheNext(t *testing.T) {
	f := newFakeGitHub(t)
	f.handle("GET /orgs/octo-org/teams/sre/memberships/{user}", func(w http.ResponseWriter, r *http.Request) {
		// The request that used the last unit of the hour succeeds, and
		// says so; go-github alone would refuse the next call unsent.
		w.Header().Set("X-RateLimit-Remaining", "0")
		w.Header().Set("X-RateLimit-Reset", strconv.FormatInt(time.Now().Add(time.Hour).Unix(), 10))
		writeJSON(w, 200, fixture(t, "team_membership_active.json"))
	})
	teams := f.client().Teams()
	for _, login := range []string{"alice", "bob"} {
		if _, err := teams.IsTeamMember(t.Context(), "octo-org/sre", login); err != nil {
			t.Fatalf("%s: %v", login, err)
		}
	}
	if n := len(f.requests()); n != 2 {
		t.Errorf("%d requests reached GitHub; want 2", n)
	}
}
