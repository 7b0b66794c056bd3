package github

import (
	"net/http"
	"strings"
)

// secret is a string that does not print.
type secret string

func (secret) String() string   { return "[redacted]" }
func (secret) GoString() string { return "[redacted]" }

// transport is the one way out to GitHub: it adds the token for GitHub's
// own origin and sends through the shared retrying transport.
type transport struct {
	next http.RoundTripper
	// token goes only to scheme://host, the API's own origin, so that a
	// redirect to another host (a renamed repository's download, a
	// misconfigured proxy) never carries it.
	token        secret
	scheme, host string
}

func (t *transport) RoundTrip(req *http.Request) (*http.Response, error) {
	out := req.Clone(req.Context())
	out.Header.Del("Authorization")
	if strings.EqualFold(out.URL.Scheme, t.scheme) && strings.EqualFold(out.URL.Host, t.host) {
		out.Header.Set("Authorization", "Bearer "+string(t.token))
	}
	resp, err := t.next.RoundTrip(out)
	hideExhaustion(resp)
	return resp, err
}

// hideExhaustion keeps go-github from learning that the primary rate limit
// is used up. Told so, it refuses every later request until the reset
// without sending it; the retrying transport waits for the reset (or fails
// within its budget) itself, and only when GitHub actually says so.
func hideExhaustion(resp *http.Response) {
	if resp != nil && resp.Header.Get("X-RateLimit-Remaining") == "0" {
		resp.Header.Del("X-RateLimit-Remaining")
		resp.Header.Del("X-RateLimit-Reset")
	}
}
