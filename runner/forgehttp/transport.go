// Package forgehttp is the HTTP transport both forge adapters (GitHub and
// Gitea) send their requests through. It bounds each attempt with a
// timeout and retries what may succeed later — server errors, rate limits
// and lost connections of requests safe to repeat — waiting as the forge
// asks (Retry-After; GitHub's X-RateLimit-Reset once X-RateLimit-Remaining
// is 0; a minute after its secondary limit), within a bounded total wait,
// and stops as soon as the request's context ends.
//
// It is not hashicorp/go-retryablehttp (v0.7.8), which was weighed for the
// job: its CheckRetry sees neither the request nor the time already spent
// waiting, so it can neither refuse to repeat a POST that may have reached
// the forge nor stop at a budget; its Backoff reads Retry-After on 429 and
// 503 only and knows nothing of X-RateLimit-Reset or GitHub's 403s; and
// its waits are timers a test cannot stand in for.
package forgehttp

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"
)

// Policy bounds how long and how often a request is retried. Zero fields
// take the defaults in withDefaults.
type Policy struct {
	// MaxAttempts is the number of attempts per request, the first
	// included (default 5; 1 disables retries).
	MaxAttempts int
	// BaseDelay is the first backoff when the forge names no wait
	// (default 1s); each further one doubles, up to MaxDelay (default 30s).
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxWait is the most one request may spend waiting between attempts
	// (default 5m). A wait that would pass it, such as a rate limit that
	// resets in an hour, fails the request at once: a job held an hour is
	// worse than a clear failure that can be re-run. A wait a rate limit
	// names is bounded by MaxRateLimitWait instead.
	MaxWait time.Duration
	// MaxRateLimitWait is the most one request may wait on the forge's
	// rate limits: its Retry-After, the reset of GitHub's primary limit
	// (default 61m, since the primary window is an hour). A job reporting
	// a thousand contracts meets the job token's 1 000 requests an hour;
	// waiting for the reset keeps every status and comment, where failing
	// would lose them.
	MaxRateLimitWait time.Duration
	// Timeout bounds each attempt, reading the answer included
	// (default 30s).
	Timeout time.Duration
	// Sleep waits d or until ctx is done, returning ctx's error then
	// (default: a timer). Tests replace it, and Now, so that nothing
	// really waits.
	Sleep func(ctx context.Context, d time.Duration) error
	// Now is the clock Retry-After dates and X-RateLimit-Reset are read
	// against (default time.Now).
	Now func() time.Time
}

func (p Policy) withDefaults() Policy {
	if p.MaxAttempts <= 0 {
		p.MaxAttempts = 5
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = time.Second
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = 30 * time.Second
	}
	if p.MaxWait <= 0 {
		p.MaxWait = 5 * time.Minute
	}
	if p.MaxRateLimitWait <= 0 {
		p.MaxRateLimitWait = 61 * time.Minute
	}
	if p.Timeout <= 0 {
		p.Timeout = 30 * time.Second
	}
	if p.Sleep == nil {
		p.Sleep = sleep
	}
	if p.Now == nil {
		p.Now = time.Now
	}
	return p
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

// Transport retries requests over next (nil: http.DefaultTransport) by
// its policy. Answers it does not retry, and the last of those it did
// when it gives up on an error, go back to the caller untouched.
type Transport struct {
	next   http.RoundTripper
	policy Policy
}

// New returns a Transport over next with policy p.
func New(next http.RoundTripper, p Policy) *Transport {
	if next == nil {
		next = http.DefaultTransport
	}
	return &Transport{next: next, policy: p.withDefaults()}
}

// GiveUpError is a request the transport stopped retrying. It holds no URL
// and no header, only what the last attempt met: the forge's answer
// ("502 Bad Gateway: message") or the connection's error, which it wraps.
type GiveUpError struct {
	Attempts int
	Last     string
	// Why is set when the transport stopped before MaxAttempts.
	Why string
	// Err is the last attempt's error when it had no answer.
	Err error
}

func (e *GiveUpError) Error() string {
	attempts := fmt.Sprintf("%d attempts", e.Attempts)
	if e.Attempts == 1 {
		attempts = "1 attempt"
	}
	if e.Why != "" {
		return fmt.Sprintf("%s (after %s: %s)", e.Why, attempts, e.Last)
	}
	return fmt.Sprintf("gave up after %s: %s", attempts, e.Last)
}

func (e *GiveUpError) Unwrap() error { return e.Err }

// RoundTrip sends req until it gets an answer worth returning. When the
// attempts or the wait run out it returns a *GiveUpError; when req's
// context ends while waiting, that context's error.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx := req.Context()
	var waited time.Duration
	for attempt := 1; ; attempt++ {
		out, err := prepare(req, attempt)
		if err != nil {
			return nil, err
		}
		resp, err := t.send(out)
		wait, last, retry, limited := t.classify(req, resp, err, attempt)
		if !retry {
			return resp, err
		}
		drain(resp)
		bound := t.policy.MaxWait
		if limited {
			bound = t.policy.MaxRateLimitWait
		}
		switch {
		case attempt >= t.policy.MaxAttempts:
			return nil, &GiveUpError{Attempts: attempt, Last: last, Err: err}
		case waited+wait > bound:
			return nil, &GiveUpError{Attempts: attempt, Last: last, Err: err,
				Why: fmt.Sprintf("the next retry is %s away, beyond the %s one request may wait", wait, bound)}
		}
		if err := t.policy.Sleep(ctx, wait); err != nil {
			return nil, err
		}
		waited += wait
	}
}

// prepare makes attempt's request: a clone (a RoundTripper must not change
// the caller's) with a fresh body for a retry.
func prepare(req *http.Request, attempt int) (*http.Request, error) {
	out := req.Clone(req.Context())
	if attempt > 1 && req.Body != nil && req.Body != http.NoBody {
		body, err := req.GetBody()
		if err != nil {
			return nil, fmt.Errorf("replaying the request body: %w", err)
		}
		out.Body = body
	}
	return out, nil
}

// send runs one attempt under its own timeout. The timeout's context lives
// until the caller closes the body, so it also bounds reading the answer.
func (t *Transport) send(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithTimeout(req.Context(), t.policy.Timeout)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		cancel()
		if ctx.Err() == context.DeadlineExceeded && req.Context().Err() == nil {
			// Not the caller's deadline: this is no cancellation.
			return nil, fmt.Errorf("no answer within %s", t.policy.Timeout)
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

// maxErrorBody bounds how much of an answer not returned is read.
const maxErrorBody = 1 << 20

// drain reads what is left of an answer not returned, so its connection
// can be reused, and closes it.
func drain(resp *http.Response) {
	if resp == nil {
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, maxErrorBody))
	_ = resp.Body.Close()
}
