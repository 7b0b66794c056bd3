package giteatest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// Rerun re-runs every job of run number run of owner/repo as the user, as
// the "Re-run all jobs" button does: Gitea 1.23's API has no re-run, so
// this signs in to the web UI and posts the button's form with the CSRF
// token Gitea sets in its cookie.
func (s *Server) Rerun(t testing.TB, owner, repo string, run int64, as User) {
	t.Helper()
	if err := s.rerun(t.Context(), owner, repo, run, as); err != nil {
		t.Fatalf("giteatest: re-running run #%d of %s/%s as %s: %v", run, owner, repo, as.Name, err)
	}
}

func (s *Server) rerun(ctx context.Context, owner, repo string, run int64, as User) error {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return err
	}
	c := &http.Client{Jar: jar}
	base, err := url.Parse(s.URL)
	if err != nil {
		return err
	}
	csrf := func() string {
		for _, ck := range jar.Cookies(base) {
			if ck.Name == "_csrf" {
				return ck.Value
			}
		}
		return ""
	}
	send := func(method, p string, form url.Values) error {
		var body io.Reader
		if form != nil {
			body = strings.NewReader(form.Encode())
		}
		req, err := http.NewRequestWithContext(ctx, method, s.URL+p, body)
		if err != nil {
			return err
		}
		if form != nil {
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.Header.Set("X-Csrf-Token", csrf())
		}
		resp, err := c.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, _ = io.Copy(io.Discard, resp.Body)
		if resp.StatusCode >= 400 {
			return fmt.Errorf("%s %s: %s", method, p, resp.Status)
		}
		return nil
	}
	// The login page sets the session's CSRF cookie; signing in starts a
	// new session, whose token the next page sets.
	if err := send(http.MethodGet, "/user/login", nil); err != nil {
		return err
	}
	if err := send(http.MethodPost, "/user/login", url.Values{"user_name": {as.Name}, "password": {as.Password}}); err != nil {
		return err
	}
	runPath := "/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/actions/runs/" + strconv.FormatInt(run, 10)
	if err := send(http.MethodGet, runPath, nil); err != nil {
		return err
	}
	return send(http.MethodPost, runPath+"/rerun", url.Values{})
}
