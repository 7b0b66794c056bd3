package forgehttp

import (
	"bytes"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// secondaryWait is the least GitHub asks a client to wait after a
// secondary rate limit that names no Retry-After.
const secondaryWait = time.Minute

// classify decides whether an attempt's outcome is worth another attempt,
// how long to wait first, how to describe it if it is the last, and
// whether the wait is a rate limit's.
func (t *Transport) classify(req *http.Request, resp *http.Response, err error, attempt int) (wait time.Duration, last string, retry, limited bool) {
	wait, last, retry = t.classifyAnswer(req, resp, err, attempt)
	limited = retry && resp != nil && (resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusForbidden)
	return wait, last, retry, limited
}

func (t *Transport) classifyAnswer(req *http.Request, resp *http.Response, err error, attempt int) (wait time.Duration, last string, retry bool) {
	if !replayable(req) {
		return 0, "", false
	}
	if err != nil {
		// The caller's own cancellation is never retried, nor is what no
		// retry will change. A request that may have reached the forge is
		// only repeated when repeating it is harmless.
		var certErr *tls.CertificateVerificationError
		if req.Context().Err() != nil || errors.As(err, &certErr) || !idempotent(req.Method) && !unsent(err) {
			return 0, "", false
		}
		return t.backoff(attempt), err.Error(), true
	}
	h := resp.Header
	after, named := retryAfter(h.Get("Retry-After"), t.policy.Now())
	switch code := resp.StatusCode; {
	case code == http.StatusTooManyRequests || code == http.StatusForbidden:
		// Primary limit: remaining 0, wait for the reset. Secondary limit:
		// Retry-After, or a message saying so. Any other 403 is about
		// permissions and will not change by waiting.
		if named {
			return after, describe(resp), true
		}
		if h.Get("X-RateLimit-Remaining") == "0" {
			if reset, err := strconv.ParseInt(h.Get("X-RateLimit-Reset"), 10, 64); err == nil {
				// The header has whole seconds: one more makes sure the
				// window has really turned over.
				d := time.Unix(reset, 0).Sub(t.policy.Now()) + time.Second
				return max(d, time.Second), describe(resp), true
			}
		}
		if code == http.StatusTooManyRequests || secondaryLimit(resp) {
			return max(t.backoff(attempt), secondaryWait), describe(resp), true
		}
	case code >= 500:
		// Almost always transient. A POST that failed with one may still
		// have happened; the adapters' POSTs either replace what they
		// repeat (statuses) or add a visible duplicate at worst (a
		// comment, a deployment), never a decision.
		if named {
			return after, describe(resp), true
		}
		return t.backoff(attempt), describe(resp), true
	}
	return 0, "", false
}

func (t *Transport) backoff(attempt int) time.Duration {
	d := t.policy.BaseDelay
	for i := 1; i < attempt && d < t.policy.MaxDelay; i++ {
		d *= 2
	}
	return min(d, t.policy.MaxDelay)
}

func idempotent(method string) bool {
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodOptions, http.MethodPut, http.MethodDelete:
		return true
	case http.MethodPatch:
		// The adapters' PATCHes replace a comment's body or a claim's.
		return true
	}
	return false
}

// unsent reports an error from before the request was written: the
// connection was never made, so the forge cannot have acted on it.
func unsent(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
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

// secondaryLimit reports whether a 403's body says it is GitHub's secondary
// rate limit. The body is read and put back for the caller to parse.
func secondaryLimit(resp *http.Response) bool {
	msg := strings.ToLower(message(resp))
	return strings.Contains(msg, "secondary rate limit") || strings.Contains(msg, "abuse detection")
}

// message returns the "message" of an error answer (GitHub's and Gitea's
// alike), leaving the body readable again.
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
		s = strconv.Itoa(resp.StatusCode) + " " + http.StatusText(resp.StatusCode)
	}
	if m := message(resp); m != "" {
		s += ": " + m
	}
	return s
}
