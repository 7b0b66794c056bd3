package chain

import (
	"net/url"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
)

// Credentials authenticate fetches and pushes over http(s) with basic auth
// (a forge token: username "x-access-token" works for GitHub and Gitea).
// They are held in memory and sent with each request; they never become
// part of a URL that is stored, shown or logged.
type Credentials struct {
	Username string
	Password string
}

func (c Credentials) Auth() transport.AuthMethod {
	if c == (Credentials{}) {
		return nil
	}
	return &githttp.BasicAuth{Username: c.Username, Password: c.Password}
}

// SplitCredentials returns an http(s) URL without its userinfo, and the
// credentials to send instead: creds when set, else those the URL held.
// Other URLs keep theirs: in ssh://git@host the user is no secret.
func SplitCredentials(raw string, creds Credentials) (string, Credentials) {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil || (u.Scheme != "http" && u.Scheme != "https") {
		return raw, creds
	}
	if creds == (Credentials{}) {
		pw, _ := u.User.Password()
		creds = Credentials{Username: u.User.Username(), Password: pw}
	}
	u.User = nil
	return u.String(), creds
}

// RedactURL drops any credentials from a URL before it is shown: tokens
// never appear in errors or logs.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 && strings.Contains(raw[:i], "://") {
			return raw[:strings.Index(raw, "://")+3] + "***@" + raw[i+1:]
		}
		return raw
	}
	u.User = url.User("***")
	return u.String()
}
