package actrunner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	runnerv1 "code.gitea.io/actions-proto-go/runner/v1"
	"code.gitea.io/actions-proto-go/runner/v1/runnerv1connect"
	"connectrpc.com/connect"

	"github.com/nova-platform/nova/runner/gitea/giteatest"
)

// Version is what the runner tells Gitea it is; Gitea shows it in the
// runner list.
const Version = "nova-actrunner"

const (
	// pollInterval is how often an idle runner asks for a task. act_runner
	// asks every 2s; tests want their runs to start sooner.
	pollInterval = 200 * time.Millisecond
	// flushInterval is how often a running task's logs and step states go
	// to Gitea, as act_runner's reporter does every second.
	flushInterval = time.Second
	// rpcTimeout bounds one call to Gitea's runner service.
	rpcTimeout = 30 * time.Second
	// stopTimeout is how long the runner gets at the end of the test to
	// cancel a running task and report it.
	stopTimeout = time.Minute
	// defaultAwait is how long Await waits unless told otherwise.
	defaultAwait = 5 * time.Minute
)

// Runner is a registered runner taking tasks from one Gitea until the
// test ends. Its methods are safe for concurrent use.
type Runner struct {
	srv    *giteatest.Server
	client runnerv1connect.RunnerServiceClient
	name   string
	labels []string
	env    map[string]string
	root   string
	await  time.Duration

	mu        sync.Mutex
	logs      map[int64][]string // what each task sent Gitea, masked, for failure messages
	fetchErr  error              // the last failed FetchTask, cleared by a good one
	reportErr error              // the last task Gitea was not told the end of
	busy      bool
}

// Option changes a Runner before it registers.
type Option func(*Runner)

// WithAwait sets how long Await waits before it fails the test.
func WithAwait(d time.Duration) Option {
	return func(r *Runner) { r.await = d }
}

// Start registers a runner with srv through a registration token from the
// admin API, declares its labels and takes tasks until the test ends. The
// runner's home, workspaces and caches live in a temporary directory
// kept for the whole test, as a real runner's home is kept between jobs.
func Start(t testing.TB, srv *giteatest.Server, opts ...Option) *Runner {
	t.Helper()
	root := t.TempDir()
	home := filepath.Join(root, "home")
	r := &Runner{
		srv:    srv,
		name:   "actrunner-" + filepath.Base(root),
		labels: []string{"ubuntu-latest"}, // what Nova's workflows run on
		root:   root,
		await:  defaultAwait,
		logs:   map[int64][]string{},
		env:    hostEnv(home),
	}
	for _, o := range opts {
		o(r)
	}
	for _, dir := range []string{home, filepath.Join(root, "cache"), filepath.Join(root, "tasks")} {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatalf("actrunner: %v", err)
		}
	}

	var reg struct {
		Token string `json:"token"`
	}
	srv.API(t, srv.AdminToken, http.MethodGet, "/admin/runners/registration-token", nil, &reg)
	if reg.Token == "" {
		t.Fatal("actrunner: Gitea gave no runner registration token")
	}

	ctx, cancel := context.WithTimeout(t.Context(), rpcTimeout)
	defer cancel()
	anon := runnerv1connect.NewRunnerServiceClient(http.DefaultClient, srv.URL+"/api/actions")
	res, err := anon.Register(ctx, connect.NewRequest(&runnerv1.RegisterRequest{
		Name: r.name, Token: reg.Token, Version: Version, Labels: r.labels,
	}))
	if err != nil {
		t.Fatalf("actrunner: registering with %s: %v", srv.URL, err)
	}
	r.client = runnerv1connect.NewRunnerServiceClient(http.DefaultClient, srv.URL+"/api/actions",
		connect.WithInterceptors(authenticate(res.Msg.Runner.Uuid, res.Msg.Runner.Token)))
	// act_runner declares its version and labels at every start; Gitea
	// hands over the jobs whose runs-on are among the declared labels.
	if _, err := r.client.Declare(ctx, connect.NewRequest(&runnerv1.DeclareRequest{Version: Version, Labels: r.labels})); err != nil {
		t.Fatalf("actrunner: declaring labels: %v", err)
	}

	loopCtx, stop := context.WithCancel(context.WithoutCancel(t.Context()))
	done := make(chan struct{})
	go func() {
		defer close(done)
		r.loop(loopCtx)
	}()
	// Cleanups run last-in first-out, so the runner stops before the
	// server it talks to.
	t.Cleanup(func() {
		stop()
		timer := time.NewTimer(stopTimeout)
		defer timer.Stop()
		select {
		case <-done:
		case <-timer.C:
			t.Errorf("actrunner: the runner did not stop within %s of the end of the test", stopTimeout)
		}
	})
	return r
}

// authenticate adds the runner's identity to every call, as Gitea's
// runner service expects after Register.
func authenticate(uuid, token string) connect.Interceptor {
	return connect.UnaryInterceptorFunc(func(next connect.UnaryFunc) connect.UnaryFunc {
		return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
			req.Header().Set("x-runner-uuid", uuid)
			req.Header().Set("x-runner-token", token)
			return next(ctx, req)
		}
	})
}

// hostEnv keeps a host-mode job off the developer's home and git
// configuration: act gives a job every variable of this process that the
// job does not set itself.
func hostEnv(home string) map[string]string {
	env := map[string]string{
		"HOME":                home,
		"XDG_CONFIG_HOME":     filepath.Join(home, ".config"),
		"XDG_CACHE_HOME":      filepath.Join(home, ".cache"),
		"XDG_DATA_HOME":       filepath.Join(home, ".local", "share"),
		"XDG_STATE_HOME":      filepath.Join(home, ".local", "state"),
		"GIT_CONFIG_NOSYSTEM": "1",
		"GIT_TERMINAL_PROMPT": "0",
	}
	// A test run inside a workflow, or with Nova's variables set, must not
	// hand them to the jobs it starts; act cannot unset a variable, so they
	// are set empty. GIT_* are left alone: an empty GIT_DIR breaks git
	// where an inherited one would be the developer's mistake.
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		for _, p := range []string{"GITHUB_", "GITEA_", "ACTIONS_", "RUNNER_", "NOVA_", "INPUT_"} {
			if _, set := env[name]; !set && strings.HasPrefix(name, p) {
				env[name] = ""
			}
		}
	}
	return env
}

// loop asks for tasks until ctx ends, running each to completion before
// asking again.
func (r *Runner) loop(ctx context.Context) {
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	var version int64
	for {
		task, latest, err := r.fetch(ctx, version)
		r.mu.Lock()
		r.fetchErr = err
		r.mu.Unlock()
		if err == nil {
			version = latest
		}
		if task != nil {
			// Gitea bumps its tasks version when it queues a job; asking
			// with version 0 next makes it look again rather than trust
			// that nothing changed.
			version = 0
			r.setBusy(true)
			r.execute(ctx, task)
			r.setBusy(false)
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

func (r *Runner) fetch(ctx context.Context, version int64) (*runnerv1.Task, int64, error) {
	ctx, cancel := context.WithTimeout(ctx, rpcTimeout)
	defer cancel()
	res, err := r.client.FetchTask(ctx, connect.NewRequest(&runnerv1.FetchTaskRequest{TasksVersion: version}))
	if err != nil {
		if errors.Is(ctx.Err(), context.Canceled) {
			return nil, version, nil
		}
		return nil, version, fmt.Errorf("fetching a task: %w", err)
	}
	return res.Msg.Task, res.Msg.TasksVersion, nil
}

func (r *Runner) setBusy(b bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.busy = b
}

// TaskLog is the log the runner sent Gitea for a task (secrets masked),
// for failure messages when Gitea's own copy cannot be read.
func (r *Runner) TaskLog(id int64) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.logs[id], "\n")
}

func (r *Runner) appendLog(id int64, lines ...string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.logs[id] = append(r.logs[id], lines...)
}

// state says what the runner is doing, for failure messages.
func (r *Runner) state() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := "idle"
	if r.busy {
		s = "running a task"
	}
	if r.fetchErr != nil {
		s += "; last FetchTask failed: " + r.fetchErr.Error()
	}
	if r.reportErr != nil {
		s += "; reporting a finished task failed: " + r.reportErr.Error()
	}
	return s
}
