package gitea

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// sleeper records the waits asked of it instead of waiting.
type sleeper struct {
	mu    sync.Mutex
	waits []time.Duration
	// then runs on each wait, after it is recorded (to cancel a context).
	then func()
}

func (s *sleeper) sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.waits = append(s.waits, d)
	then := s.then
	s.mu.Unlock()
	if then != nil {
		then()
	}
	return ctx.Err()
}

func (s *sleeper) recorded() []time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waits
}

type answer struct {
	status     int
	retryAfter string
}

// scripted serves answers in order, the last one for ever after, and
// counts the requests.
type scripted struct {
	mu      sync.Mutex
	answers []answer
	bodies  []string
}

func (s *scripted) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	s.mu.Lock()
	n := len(s.bodies)
	s.bodies = append(s.bodies, string(b))
	a := s.answers[min(n, len(s.answers)-1)]
	s.mu.Unlock()
	if a.retryAfter != "" {
		w.Header().Set("Retry-After", a.retryAfter)
	}
	w.WriteHeader(a.status)
	io.WriteString(w, `{"message":"scripted"}`)
}

func (s *scripted) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies
}

func TestRetryTransport(t *testing.T) {
	tests := []struct {
		name    string
		policy  RetryPolicy
		answers []answer
		// wantStatus is the answer returned; 0 means an error with reason
		// ForgeAPIFailed mentioning wantErr.
		wantStatus int
		wantErr    string
		wantTries  int
		wantWaits  []time.Duration
	}{
		{
			name:       "429 waits as long as Retry-After says, then succeeds",
			answers:    []answer{{429, "7"}, {200, ""}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{7 * time.Second},
		},
		{
			name:       "502 backs off, then succeeds",
			answers:    []answer{{502, ""}, {200, ""}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{time.Second},
		},
		{
			name:      "5xx until the retries run out",
			policy:    RetryPolicy{MaxRetries: 3},
			answers:   []answer{{503, ""}},
			wantErr:   "giving up after 4 attempts: gitea answered 503 Service Unavailable",
			wantTries: 4, wantWaits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name:      "backoff is capped",
			policy:    RetryPolicy{MaxRetries: 5, BaseDelay: time.Second, MaxDelay: 3 * time.Second, MaxWait: time.Hour},
			answers:   []answer{{500, ""}},
			wantErr:   "giving up after 6 attempts",
			wantTries: 6, wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		},
		{
			name:      "a Retry-After past the wait limit fails at once",
			policy:    RetryPolicy{MaxWait: time.Minute},
			answers:   []answer{{429, "3600"}},
			wantErr:   "waiting 1h0m0s more would pass the 1m0s limit: gitea answered 429 Too Many Requests (rate-limited), asking to retry after 1h0m0s",
			wantTries: 1,
		},
		{
			name:      "the total wait is bounded",
			policy:    RetryPolicy{MaxWait: 5 * time.Second},
			answers:   []answer{{503, "2"}},
			wantErr:   "giving up after 3 attempts",
			wantTries: 3, wantWaits: []time.Duration{2 * time.Second, 2 * time.Second},
		},
		{
			name:       "401 is returned, not retried",
			answers:    []answer{{401, ""}},
			wantStatus: 401, wantTries: 1,
		},
		{
			name:       "404 is returned, not retried",
			answers:    []answer{{404, ""}},
			wantStatus: 404, wantTries: 1,
		},
		{
			name:      "negative MaxRetries never retries",
			policy:    RetryPolicy{MaxRetries: -1},
			answers:   []answer{{502, ""}},
			wantErr:   "giving up after 1 attempt: gitea answered 502 Bad Gateway",
			wantTries: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := &scripted{answers: tc.answers}
			ts := httptest.NewServer(srv)
			defer ts.Close()
			sl := &sleeper{}
			tc.policy.Sleep = sl.sleep
			hc := &http.Client{Transport: newRetryTransport(nil, tc.policy)}

			resp, err := hc.Get(ts.URL)
			if tc.wantStatus != 0 {
				if err != nil {
					t.Fatalf("GET: %v, want status %d", err, tc.wantStatus)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.wantStatus {
					t.Errorf("status %d, want %d", resp.StatusCode, tc.wantStatus)
				}
			} else {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET: status %d, want an error", resp.StatusCode)
				}
				if got := runner.ReasonOf(err); got != runner.ForgeAPIFailed {
					t.Errorf("reason %s, want %s (%v)", got, runner.ForgeAPIFailed, err)
				}
				if !strings.Contains(err.Error(), tc.wantErr) {
					t.Errorf("error %q does not say %q", err, tc.wantErr)
				}
			}
			if got := len(srv.requests()); got != tc.wantTries {
				t.Errorf("%d attempts, want %d", got, tc.wantTries)
			}
			if diff := cmp.Diff(tc.wantWaits, sl.recorded()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRetryTransportReplaysTheBody(t *testing.T) {
	srv := &scripted{answers: []answer{{502, ""}, {500, ""}, {201, ""}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	sl := &sleeper{}
	hc := &http.Client{Transport: newRetryTransport(nil, RetryPolicy{Sleep: sl.sleep})}

	resp, err := hc.Post(ts.URL, "application/json", strings.NewReader(`{"body":"plan"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{`{"body":"plan"}`, `{"body":"plan"}`, `{"body":"plan"}`}, srv.requests()); diff != "" {
		t.Errorf("bodies received (-want +got):\n%s", diff)
	}
}

func TestRetryTransportStopsWhenTheContextEnds(t *testing.T) {
	srv := &scripted{answers: []answer{{503, ""}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sl := &sleeper{then: cancel} // the run is cancelled while waiting
	hc := &http.Client{Transport: newRetryTransport(nil, RetryPolicy{Sleep: sl.sleep})}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("no error after the context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if got := runner.ReasonOf(err); got != runner.RunCancelled {
		t.Errorf("reason %s, want %s", got, runner.RunCancelled)
	}
	if got := len(srv.requests()); got != 1 {
		t.Errorf("%d attempts, want 1", got)
	}
}

func TestRetryTransportTimesOutAnAttempt(t *testing.T) {
	var mu sync.Mutex
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls++
		first := calls == 1
		mu.Unlock()
		if first {
			<-r.Context().Done() // hangs until the client gives up
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer ts.Close()
	sl := &sleeper{}
	hc := &http.Client{Transport: newRetryTransport(nil, RetryPolicy{Timeout: 50 * time.Millisecond, Sleep: sl.sleep})}

	resp, err := hc.Get(ts.URL)
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, want 200", resp.StatusCode)
	}
	if diff := cmp.Diff([]time.Duration{time.Second}, sl.recorded()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
}

func TestRetryTransportRetriesARefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	sl := &sleeper{}
	hc := &http.Client{Transport: newRetryTransport(nil, RetryPolicy{MaxRetries: 2, Sleep: sl.sleep})}

	resp, err := hc.Get("http://" + addr)
	if err == nil {
		resp.Body.Close()
		t.Fatal("no error from a closed port")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v, want ECONNREFUSED", err)
	}
	if got := runner.ReasonOf(err); got != runner.ForgeAPIFailed {
		t.Errorf("reason %s, want %s", got, runner.ForgeAPIFailed)
	}
	if got := len(sl.recorded()); got != 2 {
		t.Errorf("%d waits, want 2", got)
	}
}
