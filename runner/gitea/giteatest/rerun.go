package giteatest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"slices"
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
	w, err := s.signIn(ctx, as)
	if err != nil {
		return err
	}
	runPath := "/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/actions/runs/" + strconv.FormatInt(run, 10)
	if _, err := w.send(http.MethodGet, runPath, nil); err != nil {
		return err
	}
	_, err = w.send(http.MethodPost, runPath+"/rerun", url.Values{})
	return err
}

// Dispatch starts workflow (its file name under .gitea/workflows) on the
// branch with the inputs, as the user, as the "Run workflow" form of the
// repository's Actions page does: Gitea 1.23's API has no
// workflow_dispatch (POST …/actions/workflows/{id}/dispatches came in
// 1.24), its web UI has (POST /{owner}/{repo}/actions/run). The form
// answers every outcome with a redirect and says which in its flash
// cookie, so a dispatch Gitea refused fails here rather than as a run
// that never comes.
func (s *Server) Dispatch(t testing.TB, owner, repo, workflow, branch string, inputs map[string]string, as User) {
	t.Helper()
	if err := s.dispatch(t.Context(), owner, repo, workflow, branch, inputs, as); err != nil {
		t.Fatalf("giteatest: dispatching %s on %s of %s/%s as %s: %v", workflow, branch, owner, repo, as.Name, err)
	}
}

func (s *Server) dispatch(ctx context.Context, owner, repo, workflow, branch string, inputs map[string]string, as User) error {
	w, err := s.signIn(ctx, as)
	if err != nil {
		return err
	}
	actions := "/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + "/actions"
	if _, err := w.send(http.MethodGet, actions+"?workflow="+url.QueryEscape(workflow), nil); err != nil {
		return err
	}
	form := url.Values{"workflow": {workflow}, "ref": {"refs/heads/" + branch}}
	for _, k := range slices.Sorted(maps.Keys(inputs)) {
		form.Set(k, inputs[k])
	}
	w.c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	resp, err := w.send(http.MethodPost, actions+"/run", form)
	if err != nil {
		return err
	}
	for _, ck := range resp.Cookies() {
		if ck.Name != "gitea_flash" {
			continue
		}
		// The cookie holds the flash's query string escaped once more.
		raw, err := url.QueryUnescape(ck.Value)
		if err != nil {
			return fmt.Errorf("reading Gitea's answer %q: %w", ck.Value, err)
		}
		flash, err := url.ParseQuery(raw)
		if err != nil {
			return fmt.Errorf("reading Gitea's answer %q: %w", ck.Value, err)
		}
		if msg := flash.Get("success"); msg != "" {
			return nil
		}
		return fmt.Errorf("gitea refused it: %v", flash)
	}
	return errors.New("gitea's answer has no message saying whether the run started")
}

// webSession is a user signed in to Gitea's web UI.
type webSession struct {
	ctx  context.Context
	s    *Server
	c    *http.Client
	base *url.URL
}

// signIn signs in as the user. The login page sets the session's CSRF
// cookie; signing in starts a new session, whose token the next page
// sets.
func (s *Server) signIn(ctx context.Context, as User) (*webSession, error) {
	jar, err := cookiejar.New(nil)
	if err != nil {
		return nil, err
	}
	base, err := url.Parse(s.URL)
	if err != nil {
		return nil, err
	}
	w := &webSession{ctx: ctx, s: s, c: &http.Client{Jar: jar}, base: base}
	if _, err := w.send(http.MethodGet, "/user/login", nil); err != nil {
		return nil, err
	}
	if _, err := w.send(http.MethodPost, "/user/login", url.Values{"user_name": {as.Name}, "password": {as.Password}}); err != nil {
		return nil, err
	}
	return w, nil
}

func (w *webSession) csrf() string {
	for _, ck := range w.c.Jar.Cookies(w.base) {
		if ck.Name == "_csrf" {
			return ck.Value
		}
	}
	return ""
}

// send sends a request with the session's cookies (and a form with its
// CSRF token), and fails on an error status.
func (w *webSession) send(method, p string, form url.Values) (*http.Response, error) {
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(w.ctx, method, w.s.URL+p, body)
	if err != nil {
		return nil, err
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("X-Csrf-Token", w.csrf())
	}
	resp, err := w.c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode >= 400 {
		return nil, fmt.Errorf("%s %s: %s", method, p, resp.Status)
	}
	return resp, nil
}
