package github

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/forgehttp"
)

// The permission each call needs, named as a GitHub App or the workflow's
// permissions: block names it, so a 403 tells the operator what to grant.
const (
	permActionsRead  = "actions: read"
	permPullsRead    = "pull-requests: read"
	permIssuesRead   = "issues: read (or pull-requests: read)"
	permPullsWrite   = "pull-requests: write"
	permMembersRead  = "members: read (an organization permission, which the workflow's GITHUB_TOKEN cannot have: use an app or a token with read:org)"
	permStatusesW    = "statuses: write"
	permStatusesR    = "statuses: read"
	permChecksW      = "checks: write"
	permDeploymentsW = "deployments: write"
	permIssuesWrite  = "issues: write"
)

// apiError is GitHub's answer to a failed call, rebuilt from its status and
// message only: go-github's own errors print the request URL and keep the
// response (and so the request and its headers) reachable, and neither has
// any business in a run's log.
type apiError struct {
	Status  int
	Message string
	// Hint says what the status means for Nova's operator.
	Hint string
}

func (e *apiError) Error() string {
	s := fmt.Sprintf("GitHub answered %d %s", e.Status, http.StatusText(e.Status))
	if e.Message != "" {
		s += ": " + e.Message
	}
	if e.Hint != "" {
		s += "; " + e.Hint
	}
	return s
}

// plainError is an error whose text was scrubbed; it wraps nothing.
type plainError string

func (e plainError) Error() string { return string(e) }

// fail turns an error from a call into Nova's: the activity first, the
// reason FORGE_API_FAILED (RUN_CANCELLED when the caller gave up), and
// nothing of the token, the request or its headers.
func (c *Client) fail(ctx context.Context, err error, perm, format string, args ...any) error {
	activity := fmt.Sprintf(format, args...)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return runner.Errorf(runner.RunCancelled, "%s: %w", activity, ctxErr)
	}
	return runner.Errorf(runner.ForgeAPIFailed, "%s: %w", activity, c.scrub(err, perm))
}

func (c *Client) scrub(err error, perm string) error {
	var gu *forgehttp.GiveUpError
	if errors.As(err, &gu) {
		return plainError(c.redact(gu.Error()))
	}
	var rl *gh.RateLimitError
	if errors.As(err, &rl) {
		return &apiError{Status: statusOf(rl.Response, http.StatusForbidden), Message: c.redact(rl.Message),
			Hint: fmt.Sprintf("rate limited until %s, beyond the retry budget", rl.Rate.Reset.UTC().Format(time.RFC3339))}
	}
	var ab *gh.AbuseRateLimitError
	if errors.As(err, &ab) {
		return &apiError{Status: statusOf(ab.Response, http.StatusForbidden), Message: c.redact(ab.Message),
			Hint: "GitHub's secondary rate limit, beyond the retry budget"}
	}
	var tf *gh.TwoFactorAuthError
	if errors.As(err, &tf) {
		return &apiError{Status: http.StatusUnauthorized, Message: c.redact(tf.Message), Hint: hint(http.StatusUnauthorized, perm)}
	}
	var er *gh.ErrorResponse
	if errors.As(err, &er) {
		status := statusOf(er.Response, 0)
		msg := er.Message
		for _, e := range er.Errors {
			if e.Message != "" {
				msg += " (" + e.Message + ")"
			} else if e.Code != "" {
				msg += fmt.Sprintf(" (%s %s.%s)", e.Code, e.Resource, e.Field)
			}
		}
		return &apiError{Status: status, Message: c.redact(msg), Hint: hint(status, perm)}
	}
	var ae *gh.AcceptedError
	if errors.As(err, &ae) {
		return plainError("GitHub accepted the request for later processing (202) instead of doing it")
	}
	// A transport error: url.Error prints the URL, which holds no secret,
	// but only the cause matters here.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return plainError(c.redact(err.Error()))
}

func statusOf(resp *http.Response, fallback int) int {
	if resp == nil {
		return fallback
	}
	return resp.StatusCode
}

func hint(status int, perm string) string {
	switch status {
	case http.StatusUnauthorized:
		return "the token is invalid or has expired"
	case http.StatusForbidden:
		return "the token lacks a permission: this call needs " + perm
	case http.StatusNotFound:
		return "it does not exist, or the token cannot see it (this call needs " + perm + ")"
	}
	return ""
}

// redact removes the token from text that came from elsewhere (GitHub's
// messages, a proxy's error page), in case any of it echoes the request.
func (c *Client) redact(s string) string {
	if c.token == "" {
		return s
	}
	return strings.ReplaceAll(s, string(c.token), "[redacted]")
}
