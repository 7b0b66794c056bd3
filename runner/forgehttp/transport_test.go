package forgehttp

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
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

// epoch is the fake clock's time; X-RateLimit-Reset is read against it.
var epoch = time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)

type answer struct {
	status int
	header map[string]string
	// message is the JSON error body's message ("scripted" when empty).
	message string
}

// scripted serves answers in order, the last one for ever after, and
// keeps the bodies it was sent.
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
	for k, v := range a.header {
		w.Header().Set(k, v)
	}
	w.WriteHeader(a.status)
	msg := a.message
	if msg == "" {
		msg = "scripted"
	}
	io.WriteString(w, `{"message":"`+msg+`"}`)
}

func (s *scripted) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies
}

func retryAfterHeader(v string) map[string]string { return map[string]string{"Retry-After": v} }

func TestTransport(t *testing.T) {
	reset := strconv.FormatInt(epoch.Add(42*time.Second).Unix(), 10)
	tests := []struct {
		name    string
		policy  Policy
		answers []answer
		// wantStatus is the answer returned; 0 means a *GiveUpError
		// saying wantErr.
		wantStatus int
		wantErr    string
		wantTries  int
		wantWaits  []time.Duration
	}{
		{
			name:       "429 waits as long as Retry-After says, then succeeds",
			answers:    []answer{{status: 429, header: retryAfterHeader("7")}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{7 * time.Second},
		},
		{
			name:       "Retry-After as a date",
			answers:    []answer{{status: 503, header: retryAfterHeader(epoch.Add(9 * time.Second).Format(http.TimeFormat))}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{9 * time.Second},
		},
		{
			name:       "429 without Retry-After waits a minute",
			answers:    []answer{{status: 429}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{time.Minute},
		},
		{
			name: "403 primary rate limit waits past X-RateLimit-Reset",
			answers: []answer{{status: 403, message: "API rate limit exceeded", header: map[string]string{
				"X-RateLimit-Limit": "5000", "X-RateLimit-Remaining": "0", "X-RateLimit-Reset": reset,
			}}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{43 * time.Second},
		},
		{
			name:       "403 secondary rate limit with Retry-After",
			answers:    []answer{{status: 403, message: "You have exceeded a secondary rate limit.", header: retryAfterHeader("30")}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{30 * time.Second},
		},
		{
			name:       "403 secondary rate limit without Retry-After waits a minute",
			answers:    []answer{{status: 403, message: "You have exceeded a secondary rate limit."}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{time.Minute},
		},
		{
			name:       "a permission 403 is returned, not retried",
			answers:    []answer{{status: 403, message: "Resource not accessible by integration"}},
			wantStatus: 403, wantTries: 1,
		},
		{
			name:       "502 backs off, then succeeds",
			answers:    []answer{{status: 502}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{time.Second},
		},
		{
			name:      "5xx until the attempts run out",
			policy:    Policy{MaxAttempts: 4},
			answers:   []answer{{status: 503}},
			wantErr:   "gave up after 4 attempts: 503 Service Unavailable: scripted",
			wantTries: 4, wantWaits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
		},
		{
			name:      "backoff is capped",
			policy:    Policy{MaxAttempts: 6, BaseDelay: time.Second, MaxDelay: 3 * time.Second, MaxWait: time.Hour},
			answers:   []answer{{status: 500}},
			wantErr:   "gave up after 6 attempts",
			wantTries: 6, wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second, 3 * time.Second},
		},
		{
			name:      "a Retry-After past the wait limit fails at once",
			policy:    Policy{MaxWait: time.Minute, MaxRateLimitWait: time.Minute},
			answers:   []answer{{status: 429, header: retryAfterHeader("3600")}},
			wantErr:   "the next retry is 1h0m0s away, beyond the 1m0s one request may wait (after 1 attempt: 429 Too Many Requests: scripted)",
			wantTries: 1,
		},
		{
			name:       "a primary limit's reset within the hour is waited for, past MaxWait",
			policy:     Policy{MaxWait: time.Minute},
			answers:    []answer{{status: 429, header: retryAfterHeader("3000")}, {status: 200}},
			wantStatus: 200, wantTries: 2, wantWaits: []time.Duration{50 * time.Minute},
		},
		{
			name:      "a rate limit further than MaxRateLimitWait fails at once",
			answers:   []answer{{status: 429, header: retryAfterHeader("7200")}},
			wantErr:   "the next retry is 2h0m0s away, beyond the 1h1m0s one request may wait",
			wantTries: 1,
		},
		{
			name:      "the total wait is bounded",
			policy:    Policy{MaxWait: 5 * time.Second},
			answers:   []answer{{status: 503, header: retryAfterHeader("2")}},
			wantErr:   "beyond the 5s one request may wait (after 3 attempts",
			wantTries: 3, wantWaits: []time.Duration{2 * time.Second, 2 * time.Second},
		},
		{
			name:       "401 is returned, not retried",
			answers:    []answer{{status: 401}},
			wantStatus: 401, wantTries: 1,
		},
		{
			name:       "404 is returned, not retried",
			answers:    []answer{{status: 404}},
			wantStatus: 404, wantTries: 1,
		},
		{
			name:      "one attempt never retries",
			policy:    Policy{MaxAttempts: 1},
			answers:   []answer{{status: 502}},
			wantErr:   "gave up after 1 attempt: 502 Bad Gateway",
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
			tc.policy.Now = func() time.Time { return epoch }
			hc := &http.Client{Transport: New(nil, tc.policy)}

			resp, err := hc.Get(ts.URL)
			if tc.wantStatus != 0 {
				if err != nil {
					t.Fatalf("GET: %v, want status %d", err, tc.wantStatus)
				}
				// The answer returned is whole, its body readable.
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				if resp.StatusCode != tc.wantStatus || !strings.Contains(string(body), `"message"`) {
					t.Errorf("status %d, body %q; want %d with its body", resp.StatusCode, body, tc.wantStatus)
				}
			} else {
				if err == nil {
					resp.Body.Close()
					t.Fatalf("GET: status %d, want an error", resp.StatusCode)
				}
				var gu *GiveUpError
				if !errors.As(err, &gu) {
					t.Errorf("error %v is no *GiveUpError", err)
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

func TestTransportReplaysTheBody(t *testing.T) {
	srv := &scripted{answers: []answer{{status: 502}, {status: 500}, {status: 201}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	sl := &sleeper{}
	hc := &http.Client{Transport: New(nil, Policy{Sleep: sl.sleep})}

	resp, err := hc.Post(ts.URL, "application/json", strings.NewReader(`{"body":"plan"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if diff := cmp.Diff([]string{`{"body":"plan"}`, `{"body":"plan"}`, `{"body":"plan"}`}, srv.requests()); diff != "" {
		t.Errorf("bodies received (-want +got):\n%s", diff)
	}
}

func TestTransportStopsWhenTheContextEnds(t *testing.T) {
	srv := &scripted{answers: []answer{{status: 503}}}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	sl := &sleeper{then: cancel} // the run is cancelled while waiting
	hc := &http.Client{Transport: New(nil, Policy{Sleep: sl.sleep})}

	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL, nil)
	resp, err := hc.Do(req)
	if err == nil {
		resp.Body.Close()
		t.Fatal("no error after the context was cancelled")
	}
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
	if got := len(srv.requests()); got != 1 {
		t.Errorf("%d attempts, want 1", got)
	}
}

func TestTransportTimesOutAnAttempt(t *testing.T) {
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
	hc := &http.Client{Transport: New(nil, Policy{Timeout: 50 * time.Millisecond, Sleep: sl.sleep})}

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

// A connection refused never reached the forge, so even a POST is tried
// again; the error, once the attempts run out, still says what happened.
func TestTransportRetriesARefusedConnection(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close() // nothing listens there now
	sl := &sleeper{}
	hc := &http.Client{Transport: New(nil, Policy{MaxAttempts: 3, Sleep: sl.sleep})}

	resp, err := hc.Post("http://"+addr, "application/json", strings.NewReader("{}"))
	if err == nil {
		resp.Body.Close()
		t.Fatal("no error from a closed port")
	}
	if !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("error %v, want ECONNREFUSED", err)
	}
	if got := len(sl.recorded()); got != 2 {
		t.Errorf("%d waits, want 2", got)
	}
}

// roundTripFunc stands between the transport and the network.
type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// A connection lost after the request went out may have reached the
// forge: only a request that is harmless to repeat is sent again.
func TestTransportRepeatsOnlyWhatIsHarmlessAfterALostConnection(t *testing.T) {
	for _, tt := range []struct {
		method string
		want   int
	}{{http.MethodGet, 2}, {http.MethodPatch, 2}, {http.MethodPost, 1}} {
		t.Run(tt.method, func(t *testing.T) {
			calls := 0
			next := roundTripFunc(func(*http.Request) (*http.Response, error) {
				calls++
				return nil, errors.New("connection reset by peer")
			})
			req, _ := http.NewRequestWithContext(t.Context(), tt.method, "http://forge.invalid/x", strings.NewReader("{}"))
			_, err := New(next, Policy{MaxAttempts: 2, Sleep: (&sleeper{}).sleep}).RoundTrip(req)
			if err == nil || !strings.Contains(err.Error(), "connection reset by peer") {
				t.Errorf("error %v, want the connection's", err)
			}
			if calls != tt.want {
				t.Errorf("%d attempts, want %d", calls, tt.want)
			}
		})
	}
}
