package github

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Retry bounds how long and how often a request is retried. Zero fields
// take the defaults in withDefaults.
type Retry struct {
	// MaxAttempts is the number of attempts per request, the first
	// included (default 5; 1 disables retries).
	MaxAttempts int
	// BaseDelay is the first backoff after a server error (default 1s);
	// each further one doubles, up to MaxDelay (default 30s).
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxWait is the most one request may spend waiting between attempts
	// (default 5m). A rate limit that asks for longer fails the request at
	// once: a job held an hour for a rate-limit reset is worse than a
	// clear failure that can be re-run.
	MaxWait time.Duration
	// Timeout bounds each attempt, reading the answer included
	// (default 30s).
	Timeout time.Duration
	// Sleep waits d or until ctx is done (default: a timer). Tests replace
	// it, and Now, so that nothing really waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock X-RateLimit-Reset is read against (default
	// time.Now).
	Now func() time.Time
}

// secondaryWait is the least GitHub asks a client to wait after a
// secondary rate limit that names no Retry-After.
const secondaryWait = time.Minute

func (r Retry) withDefaults() Retry {
	if r.MaxAttempts <= 0 {
		r.MaxAttempts = 5
	}
	if r.BaseDelay <= 0 {
		r.BaseDelay = time.Second
	}
	if r.MaxDelay <= 0 {
		r.MaxDelay = 30 * time.Second
	}
	if r.MaxWait <= 0 {
		r.MaxWait = 5 * time.Minute
	}
	if r.Timeout <= 0 {
		r.Timeout = 30 * time.Second
	}
	if r.Sleep == nil {
		r.Sleep = sleep
	}
	if r.Now == nil {
		r.Now = time.Now
	}
	return r
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// secret is a string that does not print.
type secret string

func (secret) String() string   { return "[redacted]" }
func (secret) GoString() string { return "[redacted]" }

// transport is the one way out to GitHub: it adds the token, bounds each
// attempt with a timeout, and retries what may succeed later.
type transport struct {
	next http.RoundTripper
	// token goes only to scheme://host, the API's own origin, so that a
	// redirect to another host (a renamed repository's download, a
	// misconfigured proxy) never carries it.
	token        secret
	scheme, host string
	retry        Retry
}

// giveUpError is a request the transport stopped retrying. It holds no URL
// and no header, only what GitHub's last answer said.
type giveUpError struct {
	attempts int
	// last describes the last answer ("502 Bad Gateway: message").
	last string
	// why is set when the transport stopped before MaxAttempts.
	why string
}

func (e *giveUpError) Error() string {
	attempts := fmt.Sprintf("%d attempts", e.attempts)
	if e.attempts == 1 {
		attempts = "1 attempt"
	}
	if e.why != "" {
		return fmt.Sprintf("%s (after %s: %s)", e.why, attempts, e.last)
	}
	return fmt.Sprintf("gave up after %s: %s", attempts, e.last)
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		out, err := t.prepare(req, attempt)
		if err != nil {
			return nil, err
		}
		resp, err := t.send(out)
		wait, last, retry := t.classify(req, resp, err, attempt)
		if !retry {
			hideExhaustion(resp)
			return resp, err
		}
		drain(resp)
		switch {
		case attempt >= t.retry.MaxAttempts:
			return nil, &giveUpError{attempts: attempt, last: last}
		case waited+wait > t.retry.MaxWait:
			return nil, &giveUpError{attempts: attempt, last: last,
				why: fmt.Sprintf("the next retry is %s away, beyond the %s one request may wait", wait, t.retry.MaxWait)}
		}
		if err := t.retry.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		waited += wait
	}
}

// prepare makes attempt's request: a clone (a RoundTripper must not change
// the caller's), a fresh body for a retry, and the token for GitHub's own
// origin only.
func (t *transport) prepare(req *http.Request, attempt int) (*http.Request, error) {
	out := req.Clone(req.Context())
	if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("replaying the request body: %w", err)
		}
		out.Body = body
	}
	out.Header.Del("Authorization")
	if strings.EqualFold(out.URL.Scheme, t.scheme) && strings.EqualFold(out.URL.Host, t.host) {
		out.Header.Set("Authorization", "Bearer "+string(t.token))
	}
	return out, nil
}

// send runs one attempt under its own timeout. The timeout's context lives
// until the caller closes the body, so it also bounds reading the answer.
func (t *transport) send(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.retry.Timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if ctx.Err() == context.DeadlineExceeded && req.Context().Err() == nil {
			return nil, fmt.Errorf("no answer within %s", t.retry.Timeout)
		}
		return nil, err
	}
	resp.Body = &cancelBody{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

type cancelBody struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelBody) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// classify decides whether an attempt's outcome is worth another attempt,
// how long to wait first, and how to describe it if it is the last.
func (t *transport) classify(req *http.Request, resp *http.Response, err error, attempt int) (wait time.Duration, last string, retry bool) {
	if err != nil {
		// A request that may have reached GitHub is only repeated when
		// repeating it is harmless; the caller's own cancellation never is.
		if req.Context().Err() != nil || !idempotent(req.Method) || !replayable(req) {
			return 0, "", false
		}
		return t.backoff(attempt), err.Error(), true
	}
	if !replayable(req) {
		return 0, "", false
	}
	h := resp.Header
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests || code == http.StatusForbidden:
		// Primary limit: remaining 0, wait for the reset. Secondary limit:
		// Retry-After, or a message saying so. Any other 403 is about
		// permissions and will not change by waiting.
		if d, ok := retryAfter(h.Get("Retry-After"), t.retry.Now()); ok {
			return d, describe(resp), true
		}
		if h.Get("X-RateLimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				// The header has whole seconds: one more makes sure the
				// window has really turned over.
				d := time.Unix(reset, 0).Sub(t.retry.Now()) + time.Second
				return max(d, time.Second), describe(resp), true
			}
		}
		if code == http.StatusTooManyRequests || secondaryLimit(resp) {
			return max(t.backoff(attempt), secondaryWait), describe(resp), true
		}
		return 0, "", false
	case code >= 500:
		// GitHub's 5xx are almost always transient. A POST that failed
		// with one may still have happened; every POST here either
		// replaces what it repeats (statuses) or adds a visible duplicate
		// at worst (a comment, a deployment), never a decision.
		return t.backoff(attempt), describe(resp), true
	}
	return 0, "", false
}

func (t *transport) backoff(attempt int) time.Duration {
	d := t.retry.BaseDelay
	for i := 1; i < attempt && d < t.retry.MaxDelay; i++ {
		d *= 2
	}
	return min(d, t.retry.MaxDelay)
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPatch:
		// The one PATCH this package sends replaces a comment's body.
		return true
	}
	return false
}

// replayable reports whether the request's body can be sent again.
func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// retryAfter reads a Retry-After header: delay-seconds or an HTTP date.
func retryAfter(v string, now time.Time) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	if s, err := strconv.Atoi(strings.TrimSpace(v)); err == nil && s >= 0 {
		return time.Duration(s) * time.Second, true
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(at.Sub(now), 0), true
	}
	return 0, false
}

// maxErrorBody bounds how much of an error answer is read to classify it.
const maxErrorBody = 1 << 20

// secondaryLimit reports whether a 403's body says it is GitHub's secondary
// rate limit. The body is read and put back for go-github to parse.
func secondaryLimit(resp *http.Response) bool {
	msg := strings.ToLower(message(resp))
	return strings.Contains(msg, "secondary rate limit") || strings.Contains(msg, "abuse detection")
}

// message returns GitHub's "message" from an error answer, leaving the body
// readable again.
func message(resp *http.Response) string {
	body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	resp.Body = struct {
		io.Reader
		io.Closer
	}{bytes.NewReader(body), resp.Body}
	var m struct {
		Message string `json:"message"`
	}
	if json.Unmarshal(body, &m) == nil && m.Message != "" {
		return m.Message
	}
	return ""
}

func describe(resp *http.Response) string {
	s := resp.Status
	if s == "" {
		s = strconv.Itoa(resp.StatusCode)
	}
	if m := message(resp); m != "" {
		s += ": " + m
	}
	return s
}

// hideExhaustion keeps go-github from learning that the primary rate limit
// is used up. Told so, it refuses every later request until the reset
// without sending it; this transport waits for the reset (or fails within
// its budget) itself, and only when GitHub actually says so.
func hideExhaustion(resp *http.Response) {
	if resp != nil && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		resp.Header.Del("X-RateLimit-Remaining")
		resp.Header.Del("X-RateLimit-Reset")
	}
}

func drain(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
}
