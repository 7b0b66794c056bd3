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
	"strings"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

// Workspace runs terraform in one root module directory.
type Workspace struct {
	tf          *tfexec.Terraform
	dir         string
	log         io.Writer
	lockTimeout string
	opts        Options
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
	tf, err := tfexec.NewTerraform(dir, opts.ExecPath)
	if err != nil {
		return nil, runner.Errorf(runner.TerraformNotFound, "preparing terraform in %s: %w", dir, err)
	}
	if err := tf.SetEnv(Environment(opts.Env)); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "terraform environment: %w", err)
	}
	if opts.Log != nil {
		tf.SetStdout(opts.Log)
		tf.SetStderr(opts.Log)
	}
	if err := tf.SetWaitDelay(interruptGrace); err != nil {
		return nil, runner.Errorf(runner.InternalError, "configuring terraform interrupt grace: %w", err)
	}
	if opts.MaxPlanJSON <= 0 {
		opts.MaxPlanJSON = DefaultMaxPlanJSON
	}
	return &Workspace{tf: tf, dir: dir, log: opts.Log, lockTimeout: opts.LockTimeout.String(), opts: opts}, nil
}

// Environment derives terraform's environment from the caller's. Variables
// terraform-exec manages itself, and TF_VAR_* (which would let the runner's
// environment change the plan behind the contract's back), are dropped. A
// TF_CLI_CONFIG_FILE that points at a missing file is replaced by an empty
// config, since terraform would otherwise warn on every command.
func Environment(env map[string]string) map[string]string {
	out := tfexec.CleanEnv(maps.Clone(env))
	if out == nil {
		out = map[string]string{}
	}
	if p, ok := out["TF_CLI_CONFIG_FILE"]; ok {
		if _, err := os.Stat(p); err != nil {
			out["TF_CLI_CONFIG_FILE"] = os.DevNull
		}
	}
	// Terraform's update check calls out to the internet; Nova's runs must
	// not depend on it.
	out["CHECKPOINT_DISABLE"] = "1"
	return out
}

// Dir is the root module directory.
func (w *Workspace) Dir() string { return w.dir }

// Init runs terraform init with the given -backend-config entries.
func (w *Workspace) Init(ctx context.Context, backendConfig []string) error {
	opts := []tfexec.InitOption{tfexec.Upgrade(false)}
	for _, bc := range backendConfig {
		opts = append(opts, tfexec.BackendConfig(bc))
	}
	ctx, cancel := w.limit(ctx)
	defer cancel()
	if err := w.tf.Init(ctx, opts...); err != nil {
		return wrap(ctx, runner.TerraformInitFailed, "terraform init", err)
	}
	return nil
}

// Plan writes a plan to planFile and reports whether it changes anything.
func (w *Workspace) Plan(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, "terraform plan", tfexec.Out(planFile), tfexec.LockTimeout(w.lockTimeout))
}

// RefreshPlan writes a refresh-only plan to planFile: what terraform finds
// changed outside it, proposing nothing. It reports whether the refresh
// changed anything (terraform's -detailed-exitcode).
func (w *Workspace) RefreshPlan(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, "terraform plan -refresh-only", tfexec.Out(planFile), tfexec.RefreshOnly(true), tfexec.LockTimeout(w.lockTimeout))
}

func (w *Workspace) plan(ctx context.Context, what string, opts ...tfexec.PlanOption) (bool, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	u := newUI(w.log)
	changed, err := w.tf.PlanJSON(ctx, u, opts...)
	w.restore()
	if err != nil {
		return false, wrapUI(ctx, runner.TerraformPlanFailed, what, err, u, w.opts.Backend)
	}
	return changed, nil
}

// ShowPlan reads a saved plan as JSON, refusing one larger than
// Options.MaxPlanJSON.
func (w *Workspace) ShowPlan(ctx context.Context, planFile string) (*tfjson.Plan, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	var p tfjson.Plan
	p.UseJSONNumber(true)
	if err := w.showJSON(ctx, planFile, &p); err != nil {
		return nil, err
	}
	return &p, nil
}

// Apply applies exactly the saved plan in planFile.
func (w *Workspace) Apply(ctx context.Context, planFile string) error {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	u := newUI(w.log)
	err := w.tf.ApplyJSON(ctx, u, tfexec.DirOrPlan(planFile), tfexec.LockTimeout(w.lockTimeout))
	w.restore()
	if err != nil {
		return wrapUI(ctx, runner.TerraformApplyFailed, "terraform apply", err, u, w.opts.Backend)
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

// restore gives terraform's stdout back to the log after a -json command,
// which terraform-exec points at the UI reader.
func (w *Workspace) restore() {
	if w.log != nil {
		w.tf.SetStdout(w.log)
	} else {
		w.tf.SetStdout(io.Discard)
	}
}

// wrapUI is wrap with terraform's own diagnostic: its summary and detail
// explain a failure, and classify it when Nova knows the kind.
func wrapUI(ctx context.Context, reason runner.Reason, what string, err error, u *ui, backend string) error {
	wrapped := wrap(ctx, reason, what, err)
	if runner.ReasonOf(wrapped) != reason {
		return wrapped // interrupted: no verdict, whatever was printed
	}
	specific, msg, ok := u.classified(backend)
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
	if err := w.tf.Destroy(ctx); err != nil {
		return wrap(ctx, runner.TerraformApplyFailed, "terraform destroy", err)
	}
	return nil
}

// ShowState reads a state file as JSON.
func (w *Workspace) ShowState(ctx context.Context, statePath string) (*tfjson.State, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	defer w.quiet()()
	st, err := w.tf.ShowStateFile(ctx, statePath, tfexec.JSONNumber(true))
	if err != nil {
		return nil, wrap(ctx, runner.TerraformShowFailed, "terraform show -json state", err)
	}
	return st, nil
}

// Outputs returns the root module's outputs after an apply.
func (w *Workspace) Outputs(ctx context.Context) (map[string]tfexec.OutputMeta, error) {
	ctx, cancel := w.limit(ctx)
	defer cancel()
	defer w.quiet()()
	out, err := w.tf.Output(ctx)
	if err != nil {
		return nil, wrap(ctx, runner.TerraformShowFailed, "terraform output", err)
	}
	return out, nil
}

// quiet keeps machine-readable output (plan JSON, output values) out of
// the log, where it would only repeat plan.json and may hold values that
// belong in state, not in logs. It returns the function that restores it.
func (w *Workspace) quiet() func() {
	if w.log == nil {
		return func() {}
	}
	w.tf.SetStdout(io.Discard)
	return func() { w.tf.SetStdout(w.log) }
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

// showJSON runs `terraform show -json planFile` and decodes its output into
// v, reading at most Options.MaxPlanJSON bytes. terraform-exec would read
// the whole output (one line) into memory first, however large it is.
func (w *Workspace) showJSON(ctx context.Context, planFile string, v any) error {
	const what = "terraform show -json"
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	cmd := exec.CommandContext(ctx, w.opts.ExecPath, "show", "-json", "-no-color", planFile)
	cmd.Dir = w.dir
	env := Environment(w.opts.Env)
	cmd.Env = make([]string, 0, len(env))
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	// As terraform-exec does: SIGINT on cancellation so terraform can
	// clean up, killed if it has not exited within the grace.
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = interruptGrace
	cmd.SysProcAttr = sysProcAttr()
	var stderr strings.Builder
	cmd.Stderr = &limitedBuilder{b: &stderr, max: 64 << 10}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return runner.Errorf(runner.TerraformShowFailed, "%s: %w", what, err)
	}
	if err := cmd.Start(); err != nil {
		return wrap(ctx, runner.TerraformShowFailed, what, err)
	}
	counted := &countingReader{r: stdout, max: w.opts.MaxPlanJSON}
	decErr := json.NewDecoder(counted).Decode(v)
	if counted.exceeded {
		cancel()
		_ = cmd.Wait()
		return runner.Errorf(runner.PlanTooLarge, "%s: the plan's JSON is larger than %d MiB; Nova stopped reading it. A plan that large needs splitting into several contracts", what, w.opts.MaxPlanJSON>>20)
	}
	_, _ = io.Copy(io.Discard, stdout)
	if err := cmd.Wait(); err != nil {
		return wrap(ctx, runner.TerraformShowFailed, what, fmt.Errorf("%w\n%s", err, stderr.String()))
	}
	if decErr != nil {
		return runner.Errorf(runner.TerraformShowFailed, "%s: reading its JSON: %w", what, decErr)
	}
	return nil
}

// countingReader stops a reader after max bytes, noting that it did.
type countingReader struct {
	r        io.Reader
	n, max   int64
	exceeded bool
}

func (c *countingReader) Read(p []byte) (int, error) {
	if c.n >= c.max {
		c.exceeded = true
		return 0, io.ErrUnexpectedEOF
	}
	if rest := c.max - c.n; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}

// limitedBuilder keeps the first max bytes of what is written to it.
type limitedBuilder struct {
	b   *strings.Builder
	max int
}

func (l *limitedBuilder) Write(p []byte) (int, error) {
	if rest := l.max - l.b.Len(); rest > 0 {
		l.b.Write(p[:min(len(p), rest)])
	}
	return len(p), nil
}
