package terraform

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strings"
	"time"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

// Workspace runs terraform in one root module directory. It starts the
// terraform processes itself: terraform-exec, which it used to go through,
// asks `terraform version` before the first command of every workspace
// and has no way to share the answer, so a process running many contracts
// paid one probe per contract (see version.go).
type Workspace struct {
	dir string
	// log receives terraform's output; never nil.
	log  io.Writer
	env  []string
	opts Options
}

// Options configures a Workspace. The zero value is usable except for
// ExecPath.
type Options struct {
	// ExecPath is the terraform binary.
	ExecPath string
	// Env is the environment terraform runs with (nil: none beyond what
	// Nova sets). action/ reads it once from the process environment.
	Env map[string]string
	// Log receives terraform's stdout and stderr.
	Log io.Writer
	// LockTimeout is how long plan and apply wait for a state lock held
	// by another run before failing with STATE_LOCKED (default 0s: fail
	// at once).
	LockTimeout time.Duration
	// Timeout bounds each terraform command (0: unbounded). A command that
	// runs longer is interrupted as a cancellation is — SIGINT, so it can
	// release its state lock — and fails with TERRAFORM_TIMEOUT.
	Timeout time.Duration
	// MaxPlanJSON bounds `terraform show -json` of a saved plan, in bytes
	// (0: DefaultMaxPlanJSON). A larger plan fails with PLAN_TOO_LARGE
	// rather than be held in memory.
	MaxPlanJSON int64
	// Backend is the backend type, which decides what terraform's lock
	// errors can say about the lock's holder.
	Backend string
}

// DefaultMaxPlanJSON is the largest plan JSON Nova reads: far beyond any
// plan a contract should make (a thousand resources make a few MiB), and
// small enough that reading it cannot exhaust a CI runner.
const DefaultMaxPlanJSON = 256 << 20

// interruptGrace is how long terraform may take to release its lock and
// exit after SIGINT before it is killed.
const interruptGrace = 60 * time.Second

// New returns a workspace for dir.
func New(dir string, opts Options) (*Workspace, error) {
	if opts.ExecPath == "" {
		return nil, runner.Errorf(runner.TerraformNotFound, "no terraform binary configured")
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, runner.Errorf(runner.TerraformNotFound, "preparing terraform in %s: %w", dir, err)
	}
	if opts.MaxPlanJSON <= 0 {
		opts.MaxPlanJSON = DefaultMaxPlanJSON
	}
	var log io.Writer = io.Discard
	if opts.Log != nil {
		log = &syncWriter{w: opts.Log}
	}
	return &Workspace{dir: dir, log: log, env: environ(Environment(opts.Env)), opts: opts}, nil
}

// managedEnv are the variables that would change what a command does
// behind the flags Nova passes it: extra arguments, prompts, another
// workspace, logging into Nova's output, providers Nova did not start or
// verify. TF_VAR_ and TF_CLI_ARGS_ prefixes are dropped as well.
var managedEnv = []string{
	"TF_CLI_ARGS", "TF_INPUT", "TF_IN_AUTOMATION", "TF_LOG", "TF_LOG_CORE", "TF_LOG_PATH", "TF_LOG_PROVIDER",
	"TF_REATTACH_PROVIDERS", "TF_APPEND_USER_AGENT", "TF_WORKSPACE", "TF_DISABLE_PLUGIN_TLS", "TF_SKIP_PROVIDER_VERIFY",
}

// Environment derives terraform's environment from the caller's. Variables
// that would change a command behind Nova's flags, and TF_VAR_* (which
// would let the runner's environment change the plan behind the contract's
// back), are dropped. A TF_CLI_CONFIG_FILE that points at a missing file
// is replaced by an empty config, since terraform would otherwise warn on
// every command.
func Environment(env map[string]string) map[string]string {
	out := make(map[string]string, len(env)+2)
	for k, v := range env {
		if slices.Contains(managedEnv, k) || strings.HasPrefix(k, "TF_VAR_") || strings.HasPrefix(k, "TF_CLI_ARGS_") {
			continue
		}
		out[k] = v
	}
	if p, ok := out["TF_CLI_CONFIG_FILE"]; ok {
		if _, err := os.Stat(p); err != nil {
			out["TF_CLI_CONFIG_FILE"] = os.DevNull
		}
	}
	// Terraform's update check calls out to the internet; Nova's runs must
	// not depend on it.
	out["CHECKPOINT_DISABLE"] = "1"
	// Terraform's output then stops suggesting commands to type next: no
	// one types them here.
	out["TF_IN_AUTOMATION"] = "1"
	return out
}

// environ is env as exec.Cmd takes it, in a stable order.
func environ(env map[string]string) []string {
	out := make([]string, 0, len(env))
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}

// Dir is the root module directory.
func (w *Workspace) Dir() string { return w.dir }

// Init runs terraform init with the given -backend-config entries.
func (w *Workspace) Init(ctx context.Context, backendConfig []string) error {
	args := []string{"init", "-no-color", "-input=false", "-backend=true", "-get=true", "-upgrade=false"}
	for _, bc := range backendConfig {
		args = append(args, "-backend-config="+bc)
	}
	ctx, cancel := w.limit(ctx)
	defer cancel()
	if err := w.run(ctx, w.log, args...); err != nil {
		return w.fail(ctx, runner.TerraformInitFailed, "terraform init", err)
	}
	return nil
}

// Plan writes a plan to planFile and reports whether it changes anything.
func (w *Workspace) Plan(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, "terraform plan", "-out="+planFile)
}

// RefreshPlan writes a refresh-only plan to planFile: what terraform finds
// changed outside it, proposing nothing. It reports whether the refresh
// changed anything (terraform's -detailed-exitcode).
func (w *Workspace) RefreshPlan(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, "terraform plan -refresh-only", "-out="+planFile, "-refresh-only")
}

func (w *Workspace) plan(ctx context.Context, what string, extra ...string) (bool, error) {
	args := append([]string{"plan", "-no-color", "-input=false", "-detailed-exitcode", "-lock-timeout=" + w.opts.LockTimeout.String()}, extra...)
	args = append(args, "-json")
	ctx, cancel := w.limit(ctx)
	defer cancel()
	u := newUI(w.log)
	err := w.run(ctx, u, args...)
	// -detailed-exitcode: 2 is a plan that changes something, not a failure.
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 2 && ctx.Err() == nil {
		return true, nil
	}
	if err != nil {
		return false, w.failUI(ctx, runner.TerraformPlanFailed, what, err, u)
	}
	return false, nil
}

// ShowPlan reads a saved plan as JSON, refusing one larger than
// Options.MaxPlanJSON.
func (w *Workspace) ShowPlan(ctx context.Context, planFile string) (*tfjson.Plan, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	var p tfjson.Plan
	p.UseJSONNumber(true)
	const what = "terraform show -json"
	if err := w.readJSON(ctx, &p, "show", "-json", "-no-color", planFile); err != nil {
		if errors.Is(err, errTooLarge) {
			return nil, runner.Errorf(runner.PlanTooLarge, "%s: the plan's JSON is larger than %d MiB; Nova stopped reading it. A plan that large needs splitting into several contracts", what, w.opts.MaxPlanJSON>>20)
		}
		return nil, w.fail(ctx, runner.TerraformShowFailed, what, err)
	}
	if err := w.checkPlanVersion(ctx, p.TerraformVersion); err != nil {
		return nil, runner.Errorf(runner.TerraformShowFailed, "%s: %w", what, err)
	}
	return &p, nil
}

// Apply applies exactly the saved plan in planFile.
func (w *Workspace) Apply(ctx context.Context, planFile string) error {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	u := newUI(w.log)
	err := w.run(ctx, u, "apply", "-no-color", "-auto-approve", "-input=false", "-lock-timeout="+w.opts.LockTimeout.String(), "-json", planFile)
	if err != nil {
		return w.failUI(ctx, runner.TerraformApplyFailed, "terraform apply", err, u)
	}
	return nil
}

// timedOut is the cause of a command's context when Options.Timeout ended
// it, so an interruption by timeout is told apart from a cancellation.
type timedOut struct{ after time.Duration }

func (t *timedOut) Error() string { return "timed out after " + t.after.String() }

// limit bounds one command by Options.Timeout.
func (w *Workspace) limit(ctx context.Context) (context.Context, context.CancelFunc) {
	if w.opts.Timeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, w.opts.Timeout, &timedOut{w.opts.Timeout})
}

// fail is wrap for a command of this workspace. When terraform's verdict
// is a failure, the binary is asked its version: a terraform too old for
// the flags Nova passes fails on them, and the error then says so first,
// with what terraform said after it.
func (w *Workspace) fail(ctx context.Context, reason runner.Reason, what string, err error) error {
	return w.failUI(ctx, reason, what, err, nil)
}

// failUI is fail with terraform's own diagnostic, when u holds it: its
// summary and detail explain a failure, and classify it when Nova knows
// the kind.
func (w *Workspace) failUI(ctx context.Context, reason runner.Reason, what string, err error, u *ui) error {
	wrapped := wrap(ctx, reason, what, err)
	if runner.ReasonOf(wrapped) != reason {
		return wrapped // interrupted: no verdict, whatever was printed
	}
	if verr := w.unsupported(ctx); verr != nil {
		return runner.Errorf(reason, "%s: %v\n%s", what, verr, tail(err.Error(), 20))
	}
	if u == nil {
		return wrapped
	}
	specific, msg, ok := u.classified(w.opts.Backend)
	if !ok {
		return wrapped
	}
	if specific != "" {
		reason = specific
	}
	return runner.Errorf(reason, "%s: %s", what, msg)
}

// Destroy destroys everything in the workspace's state.
func (w *Workspace) Destroy(ctx context.Context) error {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	if err := w.run(ctx, w.log, "destroy", "-no-color", "-auto-approve", "-input=false", "-lock-timeout="+w.opts.LockTimeout.String()); err != nil {
		return w.fail(ctx, runner.TerraformApplyFailed, "terraform destroy", err)
	}
	return nil
}

// ShowState reads a state file as JSON.
func (w *Workspace) ShowState(ctx context.Context, statePath string) (*tfjson.State, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	var st tfjson.State
	st.UseJSONNumber(true)
	if err := w.readJSON(ctx, &st, "show", "-json", "-no-color", statePath); err != nil {
		return nil, w.fail(ctx, runner.TerraformShowFailed, "terraform show -json state", err)
	}
	return &st, nil
}

// Outputs returns the root module's outputs after an apply. Their values
// are read into Nova's memory only, never into the log, where they would
// only repeat the state and may be credentials a module returns.
func (w *Workspace) Outputs(ctx context.Context) (map[string]runner.OutputValue, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	var out map[string]struct {
		Sensitive bool            `json:"sensitive"`
		Value     json.RawMessage `json:"value"`
	}
	if err := w.readJSON(ctx, &out, "output", "-no-color", "-json"); err != nil {
		return nil, w.fail(ctx, runner.TerraformShowFailed, "terraform output", err)
	}
	values := make(map[string]runner.OutputValue, len(out))
	for name, o := range out {
		var v any
		if err := jsonNumberDecode(o.Value, &v); err != nil {
			return nil, runner.Errorf(runner.TerraformShowFailed, "reading output %s: %w", name, err)
		}
		values[name] = runner.OutputValue{Value: v, Sensitive: o.Sensitive}
	}
	return values, nil
}

// wrap attaches a reason code, telling an interruption apart from a
// failure so nobody mistakes a cancelled apply for a broken configuration.
// Only terraform exiting with a status is its verdict; terraform killed by
// a signal (an OOM kill, an operator's kill -9) never reported one, whatever
// it managed to do first.
func wrap(ctx context.Context, reason runner.Reason, what string, err error) error {
	var t *timedOut
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &t) {
		return runner.Errorf(runner.TerraformTimeout, "%s %s (--terraform-timeout) and was interrupted so it could release its state lock", what, t)
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return runner.Errorf(runner.TerraformInterrupted, "%s interrupted: %w", what, err)
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		return runner.Errorf(runner.TerraformInterrupted, "%s ended without a verdict (%s): %s", what, exit.ProcessState, tail(err.Error(), 20))
	}
	return runner.Errorf(reason, "%s: %s", what, tail(err.Error(), 20))
}

// tail keeps the last n lines of terraform's error output: the diagnostic
// is at the end, the preamble is noise.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("… %d lines omitted", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
