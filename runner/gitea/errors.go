package gitea

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// fail turns an SDK error into the error Nova reports: the activity, then
// what Gitea said, with the token removed. The context's end is
// RunCancelled, not a forge failure, so an interrupted run is never
// reported as Gitea's fault.
func (c *Client) fail(ctx context.Context, activity string, resp *sdk.Response, err error) error {
	if ctx.Err() != nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		return runner.Errorf(runner.RunCancelled, "%s: %w", activity, err)
	}
	if resp == nil || resp.Response == nil {
		return runner.Errorf(runner.ForgeAPIFailed, "%s: %w", activity, c.redactErr(err))
	}
	if resp.StatusCode/100 == 2 {
		// An answer that is not what the API returns: maybe not Gitea.
		return runner.Errorf(runner.ForgeAPIFailed, "%s: %w%s", activity, c.redactErr(err), c.notGitea(ctx))
	}
	ae := &apiError{status: resp.StatusCode, message: c.clean(err.Error())}
	if resp.StatusCode == http.StatusNotFound {
		ae.message += c.notGitea(ctx)
	}
	switch resp.StatusCode {
	case http.StatusUnauthorized:
		return runner.Errorf(runner.ForgeAPIFailed, "%s: gitea refused the token, which is invalid or lacks a scope: %w", activity, ae)
	case http.StatusForbidden:
		return runner.Errorf(runner.ForgeAPIFailed, "%s: gitea forbids it; the token lacks a scope or its user lacks a permission: %w", activity, ae)
	}
	return runner.Errorf(runner.ForgeAPIFailed, "%s: %w", activity, ae)
}

// notGitea is what to add to an error when the URL may not be Gitea's
// API: asked only once something failed, so a working job never pays for
// it. The answer names no version when the URL serves something else.
func (c *Client) notGitea(ctx context.Context) string {
	version, _, err := c.api(ctx).ServerVersion()
	if err == nil && version != "" {
		return ""
	}
	return "; " + c.url + " does not answer /api/v1/version as Gitea does: is this Gitea's root URL?"
}

// apiError is a non-2xx answer as the SDK read it: the status and Gitea's
// message, cleaned.
type apiError struct {
	status  int
	message string
}

func (e *apiError) Error() string {
	return fmt.Sprintf("%d %s: %s", e.status, http.StatusText(e.status), e.message)
}

// maxMessage bounds how much of Gitea's answer an error repeats; a proxy's
// HTML error page says nothing useful after its title.
const maxMessage = 300

// clean makes a message from Gitea fit on one line, without the token.
func (c *Client) clean(msg string) string {
	msg = c.redact(msg)
	msg = strings.Join(strings.Fields(msg), " ")
	if r := []rune(msg); len(r) > maxMessage {
		msg = string(r[:maxMessage]) + "…"
	}
	return msg
}

func (c *Client) redact(msg string) string {
	if c.token == "" {
		return msg
	}
	return strings.ReplaceAll(msg, c.token, "[REDACTED]")
}

// redactErr returns err, or a copy of its message without the token when
// it holds it. Nothing Nova sends puts the token anywhere but a header, but
// a server or proxy may echo headers back.
func (c *Client) redactErr(err error) error {
	if msg := err.Error(); c.token != "" && strings.Contains(msg, c.token) {
		return errors.New(c.redact(msg))
	}
	return err
}
