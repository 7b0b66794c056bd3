package gitea

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/nova-platform/nova/runner"
)

// RetryPolicy bounds how long one request may take. Zero fields take the
// defaults below.
type RetryPolicy struct {
	// MaxRetries is how many times a request is repeated after its first
	// attempt (default 4); negative means never.
	MaxRetries int
	// BaseDelay is the wait before the first retry, doubled for each
	// further one (default 1s) up to MaxDelay (default 30s). A Retry-After
	// header replaces it.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxWait bounds the time one request spends waiting between attempts
	// (default 2m). A wait that would pass it, such as a long Retry-After,
	// fails the request at once rather than sleeping to no purpose.
	MaxWait time.Duration
	// Timeout bounds one attempt, reading the answer included (default 30s).
	Timeout time.Duration
	// Sleep waits d or until ctx ends, returning ctx's error then. Tests
	// replace it so they never really wait; nil is a real timer.
	Sleep func(ctx context.Context, d time.Duration) error
}

func (p RetryPolicy) withDefaults() RetryPolicy {
	if p.MaxRetries == 0 {
		p.MaxRetries = 4
	}
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 2 * time.Minute
	}
	if p.Timeout <= 0 {
		p.Timeout = 30 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	return p
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// backoff is the wait before retry number n+1 when the server names none.
func (p RetryPolicy) backoff(n int) time.Duration {
	d := p.BaseDelay
	for range n {
		if d >= p.MaxDelay/2 {
			return p.MaxDelay
		}
		d *= 2
	}
	return min(d, p.MaxDelay)
}

// retryTransport repeats requests that failed for a reason that may pass:
// a 5xx answer, 429, a lost connection or an attempt that timed out. Other
// answers, 4xx included, go back to the SDK untouched.
//
// A request is repeated only when its body can be read again (GetBody, as
// http.NewRequest sets for the SDK's byte bodies). POSTs are repeated too:
// a comment or status created twice after a 5xx is a lesser harm than a
// gate that fails whenever a proxy hiccups.
type retryTransport struct {
	base   http.RoundTripper
	policy RetryPolicy
}

func newRetryTransport(base http.RoundTripper, p RetryPolicy) *retryTransport {
	if base == nil {
		base = http.DefaultTransport
	}
	return &retryTransport{base: base, policy: p.withDefaults()}
}

// RoundTrip sends req until it gets an answer worth returning. When the
// attempts or the wait run out it returns a runner.ForgeAPIFailed error
// describing the last failure; when req's context ends, that context's
// error.
func (t *retryTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var waited time.Duration
	for attempt := 0; ; attempt++ {
		resp, err := t.try(req, attempt)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		retry, after, failure := classify(resp, err)
		if !retry || !replayable(req) {
			return resp, err
		}
		if attempt >= t.policy.MaxRetries {
			discard(resp)
			return nil, runner.Errorf(runner.ForgeAPIFailed, "giving up after %s: %w", attempts(attempt+1), failure)
		}
		wait := after
		if wait < 0 {
			wait = t.policy.backoff(attempt)
		}
		if waited+wait > t.policy.MaxWait {
			discard(resp)
			return nil, runner.Errorf(runner.ForgeAPIFailed, "giving up after %s, as waiting %s more would pass the %s limit: %w",
				attempts(attempt+1), wait, t.policy.MaxWait, failure)
		}
		discard(resp)
		if err := t.policy.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		waited += wait
	}
}

// try makes one attempt under its own timeout, which lasts until the
// answer's body is closed.
func (t *retryTransport) try(req *http.Request, attempt int) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.policy.Timeout)
	r := req.WithContext(ctx)
	if attempt > 0 && req.GetBody != nil {
		body, err := req.GetBody()
		if err != nil {
			cancel()
			return nil, fmt.Errorf("rewinding the request body: %w", err)
		}
		r.Body = body
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		timedOut := ctx.Err() != nil && req.Context().Err() == nil
		cancel()
		if timedOut {
			return nil, &attemptTimeout{limit: t.policy.Timeout, err: err}
		}
		return nil, err
	}
	resp.Body = &cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// classify tells whether an attempt failed in a way worth repeating, how
// long the server asked to wait (negative when it did not say), and what
// the failure was.
func classify(resp *http.Response, err error) (retry bool, after time.Duration, failure error) {
	if err != nil {
		var certErr *tls.CertificateVerificationError
		if errors.As(err, &certErr) {
			return false, -1, err // no retry will make a certificate valid
		}
		return true, -1, err
	}
	if resp.StatusCode != http.StatusTooManyRequests && resp.StatusCode < 500 {
		return false, -1, nil
	}
	after = retryAfter(resp.Header.Get("Retry-After"))
	return true, after, &statusFailure{status: resp.StatusCode, retryAfter: after}
}

// retryAfter reads a Retry-After header (seconds or an HTTP date); -1 when
// absent or unreadable.
func retryAfter(v string) time.Duration {
	if v == "" {
		return -1
	}
	if s, err := strconv.Atoi(v); err == nil {
		if s < 0 {
			return -1
		}
		return time.Duration(s) * time.Second
	}
	if at, err := http.ParseTime(v); err == nil {
		return max(time.Until(at), 0)
	}
	return -1
}

func attempts(n int) string {
	if n == 1 {
		return "1 attempt"
	}
	return strconv.Itoa(n) + " attempts"
}

func replayable(req *http.Request) bool {
	return req.Body == nil || req.Body == http.NoBody || req.GetBody != nil
}

// discard reads a little of an answer not returned, so its connection can
// be reused, and closes it.
func discard(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
}

// statusFailure is an answer the transport retried and gave up on.
type statusFailure struct {
	status     int
	retryAfter time.Duration
}

func (e *statusFailure) Error() string {
	msg := fmt.Sprintf("gitea answered %d %s", e.status, http.StatusText(e.status))
	if e.status == http.StatusTooManyRequests {
		msg += " (rate-limited)"
	}
	if e.retryAfter >= 0 {
		msg += fmt.Sprintf(", asking to retry after %s", e.retryAfter)
	}
	return msg
}

type attemptTimeout struct {
	limit time.Duration
	err   error
}

func (e *attemptTimeout) Error() string {
	return fmt.Sprintf("no answer within %s: %v", e.limit, e.err)
}

func (e *attemptTimeout) Unwrap() error { return e.err }

type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b *cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}
