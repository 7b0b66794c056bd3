package github

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

func TestUnauthorized(t *testing.T) {
	f := newFakeGitHub(t)
	const wrong = "ghs_ExpiredToken9876543210zyxwvuZYXWV"
	_, err := f.client(func(c *Config) { c.Token = wrong }).Reviews().Claims(t.Context(), reviewRequest())
	checkNoSecret(t, err, wrong)
	if runner.ReasonOf(err) != runner.ForgeAPIFailed {
		t.Fatalf("reason = %s; want %s", runner.ReasonOf(err), runner.ForgeAPIFailed)
	}
	want := "reading pull request 7: GitHub answered 401 Unauthorized: Bad credentials; the token is invalid or has expired"
	if err.Error() != want {
		t.Errorf("error = %q\nwant    %q", err, want)
	}
	if n := len(f.requests()); n != 1 {
		t.Errorf("%d requests; a 401 is not worth retrying", n)
	}
}

// TestTokenNeverInErrors provokes every kind of failure, including a
// server that echoes the Authorization header back, and looks for the
// token in what comes out.
func TestTokenNeverInErrors(t *testing.T) {
	echo := func(status int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			writeJSON(w, status, map[string]any{
				"message":           "request with " + r.Header.Get("Authorization") + " refused",
				"documentation_url": "https://docs.github.com/rest",
				"errors":            []any{map[string]any{"resource": "Issue", "code": "custom", "message": "token " + testToken}},
			})
		}
	}
	tests := []struct {
		name    string
		handler http.HandlerFunc
		// wantErr is a substring of the error.
		wantErr string
	}{
		{name: "403 echoing the header", handler: echo(403), wantErr: "request with Bearer [redacted] refused"},
		{name: "404 echoing the header", handler: echo(404), wantErr: "it does not exist, or the token cannot see it (this call needs pull-requests: read)"},
		{name: "422 echoing the token in its errors", handler: echo(422), wantErr: "(token [redacted])"},
		{name: "502 until the retries run out, echoing the header", handler: echo(502), wantErr: "gave up after 5 attempts: 502 Bad Gateway: request with Bearer [redacted] refused"},
		{name: "a rate limit beyond the budget", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-RateLimit-Remaining", "0")
			w.Header().Set("X-RateLimit-Reset", fmt.Sprint(newClock().now.Add(2*time.Hour).Unix()))
			writeJSON(w, 403, fixture(t, "rate_limited.json"))
		}, wantErr: "beyond the 1h1m0s one request may wait"},
		{name: "an answer that is not JSON", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(200)
			_, _ = w.Write([]byte("<html>" + r.Header.Get("Authorization")))
		}, wantErr: "reading pull request 7: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/octo-org/infra/pulls/7", tt.handler)
			_, err := f.client().Reviews().Claims(t.Context(), reviewRequest())
			checkNoToken(t, err)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v; want it to contain %q", err, tt.wantErr)
			}
			if runner.ReasonOf(err) != runner.ForgeAPIFailed {
				t.Errorf("reason = %s; want %s", runner.ReasonOf(err), runner.ForgeAPIFailed)
			}
		})
	}

	t.Run("an unreachable API", func(t *testing.T) {
		f := newFakeGitHub(t)
		c := f.client()
		f.srv.Close()
		_, err := c.Reviews().Claims(t.Context(), reviewRequest())
		checkNoToken(t, err)
		if runner.ReasonOf(err) != runner.ForgeAPIFailed || !strings.Contains(err.Error(), "gave up after 5 attempts") {
			t.Fatalf("error = %v; want FORGE_API_FAILED after the retries", err)
		}
	})

	t.Run("a token that cannot be a header", func(t *testing.T) {
		bad := testToken + "\n"
		_, err := New(Config{Owner: "o", Repo: "r", Token: bad})
		checkNoSecret(t, err, testToken)
		if runner.ReasonOf(err) != runner.ConfigInvalid {
			t.Fatalf("error = %v; want %s", err, runner.ConfigInvalid)
		}
	})
}
