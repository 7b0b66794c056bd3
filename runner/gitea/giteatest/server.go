// Package giteatest runs a real Gitea server for tests, the way
// net/http/httptest runs an http.Server: Start gives each test a fresh, empty
// forge on loopback with an admin account, and the helpers set up users,
// organisations, teams, repositories, commits and pull requests through
// Gitea's own API and real git over HTTP.
//
// The server is the Gitea binary that `.ci/tools.sh gitea` builds into the
// tools cache, at Version. A test that calls Start fails, never skips, when
// that binary is missing: an adapter tested only against recorded fixtures
// drifts from the real API without anyone noticing.
//
// Tokens never appear in errors or logs: every token the server hands out is
// redacted from API error messages and git output before they are reported.
package giteatest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Version is the Gitea release Start runs; testdata was recorded from it and
// .ci/tools.sh pins the same one.
const Version = "1.23.8"

const (
	// startTimeout bounds migrate, admin creation and boot together. Start
	// takes seconds on an idle machine, but `go test ./...` builds and runs
	// other packages on the same two cores meanwhile.
	startTimeout = 3 * time.Minute
	// requestTimeout bounds one API request or one git command.
	requestTimeout = time.Minute
	// stopGrace is how long Gitea gets to shut down after SIGTERM before it
	// is killed: its graceful shutdown drains queues, which is quick when idle.
	stopGrace = 15 * time.Second
	// adminName is the site administrator Start creates.
	adminName = "nova-admin"
)

// Server is a running Gitea. Its fields are read-only.
type Server struct {
	// URL is the root URL, without a trailing slash: the API is at URL+"/api/v1".
	URL string
	// AdminUser, AdminPassword and AdminToken belong to the site
	// administrator, who also owns every organisation CreateOrg makes.
	AdminUser     string
	AdminPassword string
	AdminToken    string
	// WorkDir holds app.ini, the database, the repositories and gitea.log.
	WorkDir string

	client *http.Client

	mu      sync.Mutex
	secrets []string // every token and password handed out, for redaction
}

// User is an account made by CreateUser, with an access token of scope "all".
type User struct {
	Name     string
	Password string
	Email    string
	Token    string
}

// APIError is a non-2xx answer from the Gitea API. Tests branch on Status
// to prove what Gitea refuses (for example 422 for approving one's own pull).
type APIError struct {
	Method string
	Path   string
	Status int
	// Message is Gitea's "message" field, or the start of the body when
	// the body is not Gitea's error JSON. Known tokens are redacted.
	Message string
}

func (e *APIError) Error() string {
	return fmt.Sprintf("%s %s: status %d: %s", e.Method, e.Path, e.Status, e.Message)
}

// Start runs a new Gitea on a free loopback port and stops it when the test
// ends. It fails the test when the binary or its source tree is missing.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	ctx, cancel := context.WithTimeout(t.Context(), startTimeout)
	defer cancel()

	bin, err := findBinary()
	if err != nil {
		t.Fatalf("giteatest: %v; build it with `.ci/tools.sh gitea` (or `make tools`), or set NOVA_GITEA_BIN to a gitea %s binary", err, Version)
	}
	src, err := findSource(bin)
	if err != nil {
		t.Fatalf("giteatest: %v; rebuild with `.ci/tools.sh gitea`", err)
	}

	work := t.TempDir()
	// Built without the bindata tag, Gitea reads these from its work path.
	for _, dir := range []string{"options", "templates", "public"} {
		if err := os.Symlink(filepath.Join(src, dir), filepath.Join(work, dir)); err != nil {
			t.Fatalf("giteatest: linking %s: %v", dir, err)
		}
	}
	port, err := freePort()
	if err != nil {
		t.Fatalf("giteatest: %v", err)
	}
	s := &Server{
		URL:           "http://127.0.0.1:" + strconv.Itoa(port),
		AdminUser:     adminName,
		AdminPassword: randomHex(16),
		WorkDir:       work,
		client:        &http.Client{},
	}
	s.addSecret(s.AdminPassword)
	env := giteaEnv(work)
	var signing string
	if o.signMerges {
		ini, extra, stop, err := signingKey(ctx, work)
		if err != nil {
			t.Fatalf("giteatest: %v", err)
		}
		t.Cleanup(stop)
		signing, env = ini, append(env, extra...)
	}
	conf, err := writeConfig(work, port, s.URL, signing)
	if err != nil {
		t.Fatalf("giteatest: %v", err)
	}

	if err := s.runCLI(ctx, bin, env, "migrate", "--config", conf); err != nil {
		t.Fatalf("giteatest: %v", err)
	}
	if err := s.runCLI(ctx, bin, env, "admin", "user", "create", "--config", conf,
		"--username", adminName, "--password", s.AdminPassword,
		"--email", s.Admin().Email, "--admin", "--must-change-password=false"); err != nil {
		t.Fatalf("giteatest: %v", err)
	}

	if err := s.serve(ctx, t, bin, conf, env); err != nil {
		t.Fatalf("giteatest: %v\n%s", err, s.logTail())
	}

	var version struct {
		Version string `json:"version"`
	}
	if err := s.Do(ctx, "", http.MethodGet, "/version", nil, &version); err != nil {
		t.Fatalf("giteatest: confirming gitea is up: %v\n%s", err, s.logTail())
	}
	if version.Version != Version {
		t.Fatalf("giteatest: %s is gitea %q, want %s; rebuild with `.ci/tools.sh gitea`", bin, version.Version, Version)
	}

	tok, err := s.createToken(ctx, adminName, s.AdminPassword)
	if err != nil {
		t.Fatalf("giteatest: %v", err)
	}
	s.AdminToken = tok
	return s
}

// serve starts `gitea web` and returns once it accepts connections.
//
// Readiness is an event, not a poll: Gitea speaks systemd's notify protocol,
// so it is given a NOTIFY_SOCKET and sends READY=1 once every server it runs
// holds its listener. Systemd's other half, LISTEN_FDS, would also remove the
// free-port race, but Gitea then takes itself for a graceful restart and
// sends SIGTERM to its parent, which here is the test binary.
func (s *Server) serve(ctx context.Context, t testing.TB, bin, conf string, env []string) error {
	// Unix socket paths are limited to about 100 bytes, and t.TempDir can
	// be longer than that under a long TMPDIR or test name.
	sockDir, err := os.MkdirTemp("", "giteatest-")
	if err != nil {
		return fmt.Errorf("creating notify socket dir: %w", err)
	}
	t.Cleanup(func() { os.RemoveAll(sockDir) })
	sockPath := filepath.Join(sockDir, "notify")
	notify, err := net.ListenUnixgram("unixgram", &net.UnixAddr{Name: sockPath, Net: "unixgram"})
	if err != nil {
		return fmt.Errorf("listening on notify socket: %w", err)
	}

	logFile, err := os.OpenFile(filepath.Join(s.WorkDir, "gitea.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		notify.Close()
		return fmt.Errorf("opening gitea.log: %w", err)
	}
	// Not CommandContext: the server outlives ctx, which bounds only the start.
	cmd := exec.Command(bin, "web", "--config", conf)
	cmd.Dir = s.WorkDir
	cmd.Env = append(slices.Clip(env), "NOTIFY_SOCKET="+sockPath)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	if err := cmd.Start(); err != nil {
		notify.Close()
		logFile.Close()
		return fmt.Errorf("starting gitea web: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	ready := make(chan struct{})
	go func() {
		// Reads until the socket is closed at cleanup, so later
		// notifications (STOPPING=1) find a reader rather than an error.
		buf := make([]byte, 4096)
		signalled := false
		for {
			n, err := notify.Read(buf)
			if err != nil {
				return
			}
			for _, line := range strings.Split(string(buf[:n]), "\n") {
				if line == "READY=1" && !signalled {
					signalled = true
					close(ready)
				}
			}
		}
	}()

	t.Cleanup(func() {
		if err := stopProcess(cmd.Process, exited); err != nil {
			t.Logf("giteatest: %v", err)
		}
		notify.Close()
		logFile.Close()
	})

	select {
	case <-ready:
		return nil
	case err := <-exited:
		exited <- err // stopProcess reads it again
		return fmt.Errorf("gitea web exited before it was ready (port %s taken?): %v", strings.TrimPrefix(s.URL, "http://"), err)
	case <-ctx.Done():
		return fmt.Errorf("waiting for gitea web to be ready: %w", ctx.Err())
	}
}

// stopProcess sends SIGTERM to the process Start began and waits for it,
// killing it after stopGrace.
func stopProcess(p *os.Process, exited chan error) error {
	if err := p.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		_ = p.Kill()
	}
	timer := time.NewTimer(stopGrace)
	defer timer.Stop()
	select {
	case <-exited:
		return nil
	case <-timer.C:
		_ = p.Kill()
		<-exited
		return fmt.Errorf("gitea (pid %d) did not stop within %s of SIGTERM and was killed", p.Pid, stopGrace)
	}
}

// runCLI runs one gitea subcommand to completion, its output kept for the
// error only.
func (s *Server) runCLI(ctx context.Context, bin string, env []string, args ...string) error {
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Dir = s.WorkDir
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("running gitea %s: %w\n%s", args[0], err, s.redact(tail(string(out), 40)))
	}
	return nil
}

// logTail is the end of gitea web's output, for failure messages.
func (s *Server) logTail() string {
	b, err := os.ReadFile(filepath.Join(s.WorkDir, "gitea.log"))
	if err != nil {
		return "(no gitea.log: " + err.Error() + ")"
	}
	return "gitea.log:\n" + s.redact(tail(string(b), 40))
}

func tail(s string, lines int) string {
	parts := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(parts) > lines {
		parts = parts[len(parts)-lines:]
	}
	return strings.Join(parts, "\n")
}

// findBinary looks where .ci/tools.sh puts gitea, after the two places a
// developer can override it.
func findBinary() (string, error) {
	if p := os.Getenv("NOVA_GITEA_BIN"); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("NOVA_GITEA_BIN: %w", err)
		}
		return p, nil
	}
	if p, err := exec.LookPath("gitea"); err == nil {
		return p, nil
	}
	bin, err := toolsBin()
	if err != nil {
		return "", err
	}
	p := filepath.Join(bin, "gitea")
	if _, err := os.Stat(p); err != nil {
		return "", fmt.Errorf("gitea %s not found (NOVA_GITEA_BIN unset, none on PATH, none at %s)", Version, p)
	}
	return p, nil
}

// toolsBin is .ci/tools.sh's TOOLS_BIN, computed the same way.
func toolsBin() (string, error) {
	if d := os.Getenv("NOVA_TOOLS_BIN"); d != "" {
		return d, nil
	}
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("locating the tools cache: %w", err)
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "nova-tools", "bin"), nil
}

// findSource finds the Gitea source tree the binary was built from, whose
// options/, templates/ and public/ it reads at run time. tools.sh names it
// in a ".src" file beside the versioned binary that "gitea" links to.
func findSource(bin string) (string, error) {
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return "", fmt.Errorf("resolving %s: %w", bin, err)
	}
	var candidates []string
	for _, p := range []string{real + ".src", bin + ".src"} {
		if b, err := os.ReadFile(p); err == nil {
			candidates = append(candidates, strings.TrimSpace(string(b)))
		}
	}
	candidates = append(candidates, filepath.Join(filepath.Dir(real), "..", "gitea-src-v"+Version))
	for _, dir := range candidates {
		if fi, err := os.Stat(filepath.Join(dir, "templates")); err == nil && fi.IsDir() {
			return dir, nil
		}
	}
	return "", fmt.Errorf("no gitea source tree (options/, templates/, public/) for %s; looked in %s", bin, strings.Join(candidates, ", "))
}

// freePort asks the kernel for a free loopback port. Gitea binds it a
// moment later, so another process could take it in between; Start then
// fails saying so rather than talking to a stranger.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// giteaEnv is cleanEnv with Gitea's work path.
func giteaEnv(work string) []string {
	return append(cleanEnv(), "GITEA_WORK_DIR="+work)
}

// cleanEnv is the environment without anything that would point Gitea or
// git somewhere else (GITEA_CUSTOM, GIT_DIR, an outer NOTIFY_SOCKET,
// LISTEN_FDS).
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, "GITEA_") || strings.HasPrefix(name, "GIT_") ||
			strings.HasPrefix(name, "LISTEN_") || name == "NOTIFY_SOCKET" || name == "WATCHDOG_USEC" {
			continue
		}
		env = append(env, kv)
	}
	return env
}

// writeConfig writes custom/conf/app.ini and returns its path. Secrets are
// set here so Gitea never rewrites the file to add its own.
func writeConfig(work string, port int, rootURL, extra string) (string, error) {
	jwt := make([]byte, 32)
	if _, err := rand.Read(jwt); err != nil {
		return "", fmt.Errorf("generating jwt secret: %w", err)
	}
	// The first line must be the root override: CI runs as root, and
	// Gitea refuses to run as root without it.
	ini := fmt.Sprintf(`I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true
APP_NAME = giteatest
RUN_MODE = prod
WORK_PATH = %[1]s

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = %[2]d
DOMAIN = 127.0.0.1
ROOT_URL = %[3]s/
LOCAL_ROOT_URL = %[3]s/
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
APP_DATA_PATH = %[1]s/data

[database]
DB_TYPE = sqlite3
PATH = %[1]s/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[security]
INSTALL_LOCK = true
SECRET_KEY = %[4]s
INTERNAL_TOKEN = %[5]s
PASSWORD_COMPLEXITY = off
MIN_PASSWORD_LENGTH = 8

[oauth2]
JWT_SECRET = %[6]s

[actions]
ENABLED = true

[repository]
ROOT = %[1]s/repositories
DEFAULT_BRANCH = main

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = false

[mailer]
ENABLED = false

; Tests point webhooks at httptest servers on loopback (or at test hosts in
; their own network namespaces); Gitea's default allows only external hosts.
[webhook]
ALLOWED_HOST_LIST = loopback,private
DELIVER_TIMEOUT = 10

; In-memory queues and a database issue indexer: nothing to build or flush
; at start and stop, and no state worth keeping between tests.
[queue]
TYPE = channel

[indexer]
ISSUE_INDEXER_TYPE = db

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[api]
ENABLE_SWAGGER = false

[cron]
ENABLED = false

[log]
MODE = console
LEVEL = Warn
ROOT_PATH = %[1]s/log
`, work, port, rootURL, randomHex(32), randomHex(32), base64.RawURLEncoding.EncodeToString(jwt)) + extra

	dir := filepath.Join(work, "custom", "conf")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("creating %s: %w", dir, err)
	}
	p := filepath.Join(dir, "app.ini")
	if err := os.WriteFile(p, []byte(ini), 0o600); err != nil {
		return "", fmt.Errorf("writing app.ini: %w", err)
	}
	return p, nil
}

func randomHex(n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return hex.EncodeToString(b)
}

func (s *Server) addSecret(v string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.secrets = append(s.secrets, v)
}

// redact removes every token and password this server handed out from msg,
// including their basic-auth encodings.
func (s *Server) redact(msg string) string {
	s.mu.Lock()
	secrets := slices.Clone(s.secrets)
	s.mu.Unlock()
	for _, v := range secrets {
		if v == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, v, "[REDACTED]")
	}
	return msg
}

// Do sends one request to the API at URL+"/api/v1"+path as the holder of
// token (anonymous when empty), JSON-encoding in when it is not nil and
// decoding the answer into out when out is not nil (a *json.RawMessage keeps
// it verbatim). A non-2xx answer is an *APIError.
func (s *Server) Do(ctx context.Context, token, method, path string, in, out any) error {
	var auth func(*http.Request)
	if token != "" {
		auth = func(r *http.Request) { r.Header.Set("Authorization", "token "+token) }
	}
	return s.do(ctx, auth, method, path, in, out)
}

// API is Do for test code: it bounds the request by a deadline and fails
// the test on any error.
func (s *Server) API(t testing.TB, token, method, path string, in, out any) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	if err := s.Do(ctx, token, method, path, in, out); err != nil {
		t.Fatalf("giteatest: %v", err)
	}
}

func (s *Server) do(ctx context.Context, auth func(*http.Request), method, p string, in, out any) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, requestTimeout)
		defer cancel()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encoding %s %s: %w", method, p, err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, s.URL+"/api/v1"+p, body)
	if err != nil {
		return fmt.Errorf("building %s %s: %w", method, p, err)
	}
	req.Header.Set("Accept", "application/json")
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if auth != nil {
		auth(req)
	}
	resp, err := s.client.Do(req)
	if err != nil {
		// url.Error holds the URL, which never carries a token here.
		return fmt.Errorf("%s %s: %w", method, p, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("reading %s %s: %w", method, p, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return &APIError{Method: method, Path: p, Status: resp.StatusCode, Message: s.redact(errorMessage(b))}
	}
	if out == nil || len(b) == 0 {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("decoding %s %s: %w", method, p, err)
	}
	return nil
}

// errorMessage is Gitea's {"message": ...}, or the start of a body that is not.
func errorMessage(body []byte) string {
	var e struct {
		Message string   `json:"message"`
		Errors  []string `json:"errors"`
	}
	if json.Unmarshal(body, &e) == nil && e.Message != "" {
		if len(e.Errors) > 0 {
			return e.Message + " (" + strings.Join(e.Errors, "; ") + ")"
		}
		return e.Message
	}
	msg := strings.TrimSpace(string(body))
	if len(msg) > 200 {
		msg = msg[:200] + "…"
	}
	return msg
}

// createToken makes an access token of scope "all" with the user's password,
// the only way Gitea issues one over the API.
func (s *Server) createToken(ctx context.Context, name, password string) (string, error) {
	basic := func(r *http.Request) { r.SetBasicAuth(name, password) }
	var tok struct {
		SHA1 string `json:"sha1"`
	}
	in := map[string]any{"name": "giteatest-" + randomHex(4), "scopes": []string{"all"}}
	if err := s.do(ctx, basic, http.MethodPost, "/users/"+url.PathEscape(name)+"/tokens", in, &tok); err != nil {
		return "", fmt.Errorf("creating a token for %s: %w", name, err)
	}
	if tok.SHA1 == "" {
		return "", fmt.Errorf("creating a token for %s: answer has no sha1", name)
	}
	s.addSecret(tok.SHA1)
	s.addSecret(base64.StdEncoding.EncodeToString([]byte(name + ":" + tok.SHA1)))
	return tok.SHA1, nil
}

// Admin is the site administrator as a User, for CommitFiles and the like.
func (s *Server) Admin() User {
	return User{Name: s.AdminUser, Password: s.AdminPassword, Email: s.AdminUser + "@example.com", Token: s.AdminToken}
}

// CreateUser makes an ordinary user (no site admin) with a random password
// and an access token of scope "all".
func (s *Server) CreateUser(t testing.TB, name string) User {
	t.Helper()
	u := User{Name: name, Password: randomHex(16), Email: name + "@example.com"}
	s.addSecret(u.Password)
	s.API(t, s.AdminToken, http.MethodPost, "/admin/users", map[string]any{
		"username":             u.Name,
		"email":                u.Email,
		"password":             u.Password,
		"must_change_password": false,
	}, nil)
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	tok, err := s.createToken(ctx, u.Name, u.Password)
	if err != nil {
		t.Fatalf("giteatest: %v", err)
	}
	u.Token = tok
	return u
}

// CreateOrg makes a public organisation owned by the admin.
func (s *Server) CreateOrg(t testing.TB, name string) {
	t.Helper()
	s.API(t, s.AdminToken, http.MethodPost, "/orgs", map[string]any{
		"username":   name,
		"visibility": "public",
	}, nil)
}

// teamUnits are the repository units a team is given. Gitea 1.23 refuses a
// team without units (500 "units permission should not be empty"), and
// with units_map it takes the team's permission to be the lowest unit's,
// so the external tracker and wiki, read-only by nature, stay out.
var teamUnits = []string{
	"repo.code", "repo.issues", "repo.pulls", "repo.releases",
	"repo.wiki", "repo.projects", "repo.packages", "repo.actions",
}

// CreateTeam makes a team in org with permission "read" or "write" on every
// unit of all the org's repositories, adds members, and returns the team's
// id (team APIs address teams by id, not name).
func (s *Server) CreateTeam(t testing.TB, org, team, permission string, members ...string) int64 {
	t.Helper()
	units := make(map[string]string, len(teamUnits))
	for _, u := range teamUnits {
		units[u] = permission
	}
	var created struct {
		ID int64 `json:"id"`
	}
	s.API(t, s.AdminToken, http.MethodPost, "/orgs/"+url.PathEscape(org)+"/teams", map[string]any{
		"name":                      team,
		"permission":                permission,
		"units":                     teamUnits,
		"units_map":                 units,
		"includes_all_repositories": true,
	}, &created)
	for _, m := range members {
		s.API(t, s.AdminToken, http.MethodPut, fmt.Sprintf("/teams/%d/members/%s", created.ID, url.PathEscape(m)), nil, nil)
	}
	return created.ID
}

// CreateRepo makes a public repository owned by owner (a user or an
// organisation) with an initial commit on main.
func (s *Server) CreateRepo(t testing.TB, owner, name string) {
	t.Helper()
	// The admin route creates for any owner, org or user, without sudo.
	s.API(t, s.AdminToken, http.MethodPost, "/admin/users/"+url.PathEscape(owner)+"/repos", map[string]any{
		"name":           name,
		"auto_init":      true,
		"default_branch": "main",
		"readme":         "Default",
		"private":        false,
	}, nil)
}

// CommitFiles commits files (path to content) as author on branch and
// pushes it with real git over HTTP, authenticated by author's token. A
// branch that does not exist yet starts from base. It returns the new
// commit's SHA.
func (s *Server) CommitFiles(t testing.TB, owner, repo, branch, base string, files map[string]string, author User) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	sha, err := s.commitFiles(ctx, t.TempDir(), owner, repo, branch, base, files, author)
	if err != nil {
		t.Fatalf("giteatest: committing to %s/%s@%s: %v", owner, repo, branch, err)
	}
	return sha
}

// TryCommitFiles is CommitFiles for a push Gitea may refuse (a protected
// branch, a protected file): the refusal is returned with Gitea's
// message, not reported as a test failure.
func (s *Server) TryCommitFiles(t testing.TB, owner, repo, branch, base string, files map[string]string, author User) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), requestTimeout)
	defer cancel()
	return s.commitFiles(ctx, t.TempDir(), owner, repo, branch, base, files, author)
}

func (s *Server) commitFiles(ctx context.Context, dir, owner, repo, branch, base string, files map[string]string, author User) (string, error) {
	// The token travels as a header set through the environment, so it is
	// in neither the remote URL, .git/config nor the process arguments.
	header := "Authorization: Basic " + base64.StdEncoding.EncodeToString([]byte(author.Name+":"+author.Token))
	env := append(cleanEnv(),
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_CONFIG_GLOBAL="+os.DevNull,
		"GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME="+author.Name, "GIT_AUTHOR_EMAIL="+author.Email,
		"GIT_COMMITTER_NAME="+author.Name, "GIT_COMMITTER_EMAIL="+author.Email,
		"GIT_CONFIG_COUNT=2",
		"GIT_CONFIG_KEY_0=http.extraHeader", "GIT_CONFIG_VALUE_0="+header,
		"GIT_CONFIG_KEY_1=commit.gpgSign", "GIT_CONFIG_VALUE_1=false",
	)
	git := func(args ...string) (string, error) {
		cmd := exec.CommandContext(ctx, "git", args...)
		cmd.Dir = dir
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return "", fmt.Errorf("git %s: %w: %s", args[0], err, s.redact(strings.TrimSpace(stderr.String())))
		}
		return strings.TrimSpace(string(out)), nil
	}

	remote := s.URL + "/" + url.PathEscape(owner) + "/" + url.PathEscape(repo) + ".git"
	if _, err := git("clone", "--quiet", "--no-checkout", remote, "."); err != nil {
		return "", err
	}
	start := "origin/" + base
	if _, err := git("rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+branch); err == nil {
		start = "origin/" + branch
	}
	if _, err := git("checkout", "--quiet", "-B", branch, start); err != nil {
		return "", err
	}
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(path.Clean("/"+name)))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
		if err := os.WriteFile(p, []byte(files[name]), 0o644); err != nil {
			return "", fmt.Errorf("writing %s: %w", name, err)
		}
	}
	if _, err := git("add", "--all"); err != nil {
		return "", err
	}
	if _, err := git("commit", "--quiet", "--allow-empty", "-m", "Update "+strings.Join(names, ", ")); err != nil {
		return "", err
	}
	if _, err := git("push", "--quiet", "origin", "HEAD:refs/heads/"+branch); err != nil {
		return "", err
	}
	return git("rev-parse", "HEAD")
}

// CreatePullRequest opens a pull request from head to base in owner/repo as
// the given user and returns its number (its index in the API's paths).
func (s *Server) CreatePullRequest(t testing.TB, owner, repo, head, base, title string, as User) int {
	t.Helper()
	var pr struct {
		Number int `json:"number"`
	}
	s.API(t, as.Token, http.MethodPost, "/repos/"+url.PathEscape(owner)+"/"+url.PathEscape(repo)+"/pulls", map[string]any{
		"head":  head,
		"base":  base,
		"title": title,
	}, &pr)
	return pr.Number
}
