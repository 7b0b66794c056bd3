package terraform

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/terraform-exec/tfexec"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

// Workspace runs terraform in one root module directory, through one
// terraform-exec Terraform: its version is asked once, by the first
// command, and kept for the rest.
//
// A Workspace runs one command at a time: terraform-exec's Terraform
// holds where a command's output goes, and each command sets it.
type Workspace struct {
	mu      sync.Mutex
	tf      *tfexec.Terraform
	dir     string
	log     io.Writer // terraform's output; never nil
	opts    Options
	flavour flavour
}

// Options configures a Workspace. The zero value is usable except for
// ExecPath.
type Options struct {
	// ExecPath is the terraform binary.
	ExecPath string
	// Env is the environment terraform runs with (nil: none beyond what
	// Nova and terraform-exec set). action/ reads it once from the process
	// environment.
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
	// rather than go into the bundle and the evidence.
	MaxPlanJSON int64
	// Backend is the backend type, which decides what terraform's lock
	// errors can say about the lock's holder.
	Backend string
	// Engine is which engine ExecPath is (runner.EngineTerraform or
	// runner.EngineOpenTofu; "" is terraform): it names the commands in
	// messages, the oldest version Nova runs and the version label.
	Engine string
	// VersionConstraint, when set, is what the binary's version must
	// satisfy (the contract's engineVersion), or every command fails with
	// ENGINE_VERSION_UNSATISFIED before it runs.
	VersionConstraint string
	// keyProvider is OpenTofu's key provider block for the state's
	// encryption (TF_ENCRYPTION); set by Engine for a contract whose
	// backend encrypts.
	keyProvider string
}

// DefaultMaxPlanJSON is the largest plan JSON Nova accepts: far beyond any
// plan a contract should make (a thousand resources make a few MiB).
const DefaultMaxPlanJSON = 256 << 20

// interruptGrace is how long terraform may take to release its lock and
// exit after SIGINT before it is killed. terraform-exec sends the SIGINT
// when a command's context ends (exec.Cmd's Cancel) and kills after this
// delay (its WaitDelay); it also starts terraform in its own process
// group, killed if Nova dies.
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
	f, err := flavourOf(opts.Engine)
	if err != nil {
		return nil, err
	}
	tf, err := tfexec.NewTerraform(dir, opts.ExecPath)
	if err != nil {
		return nil, runner.Errorf(runner.TerraformNotFound, "preparing %s in %s: %w", f.program, dir, err)
	}
	env := Environment(opts.Env)
	if opts.keyProvider != "" {
		env[encryptionEnvVar] = opts.keyProvider
	}
	if err := tf.SetEnv(env); err != nil {
		return nil, runner.Errorf(runner.InternalError, "terraform's environment: %w", err)
	}
	if err := tf.SetWaitDelay(interruptGrace); err != nil {
		return nil, runner.Errorf(runner.InternalError, "terraform's interrupt grace: %w", err)
	}
	var log io.Writer = io.Discard
	if opts.Log != nil {
		// terraform-exec copies stdout and stderr in two goroutines.
		log = &syncWriter{w: opts.Log}
	}
	tf.SetStderr(log)
	return &Workspace{tf: tf, dir: dir, log: log, opts: opts, flavour: f}, nil
}

// Environment derives terraform's environment from the caller's. What
// terraform-exec refuses to be given (variables that would change a
// command behind the flags Nova passes, and TF_VAR_*, which would let the
// runner's environment change the plan behind the contract's back) is
// dropped; terraform-exec sets its own TF_IN_AUTOMATION and logging. A
// TF_CLI_CONFIG_FILE that points at a missing file is replaced by an
// empty config, since terraform would otherwise warn on every command.
func Environment(env map[string]string) map[string]string {
	out := tfexec.CleanEnv(maps.Clone(env))
	if out == nil {
		out = map[string]string{}
	}
	// The state's encryption is the contract's to declare and Nova's to
	// configure: one inherited from the runner's environment would encrypt
	// (or fail to decrypt) state behind the contract's back.
	delete(out, encryptionEnvVar)
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

// named is a command as the user would type it: "tofu plan".
func (w *Workspace) named(command string) string { return w.flavour.program + " " + command }

// command runs one terraform command: bounded by Options.Timeout, its
// stdout to stdout (nil: dropped), once the binary is known to be one Nova
// runs. run's error is terraform-exec's, for wrap to classify.
func (w *Workspace) command(ctx context.Context, reason runner.Reason, what string, stdout io.Writer, run func(context.Context) error) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	ctx, cancel := w.limit(ctx)
	defer cancel()
	if err := w.supported(ctx, reason, what); err != nil {
		return err
	}
	w.tf.SetStdout(stdout)
	// terraform-exec keeps the stdout of a -json command for the next.
	defer w.tf.SetStdout(nil)
	// Ending its context is how terraform is interrupted, so a command
	// that returns after its context ended never gave a verdict.
	err := run(ctx)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	if err != nil {
		return wrap(ctx, reason, what, err)
	}
	return nil
}

// Init runs terraform init with the given -backend-config entries.
func (w *Workspace) Init(ctx context.Context, backendConfig []string) error {
	opts := []tfexec.InitOption{tfexec.Backend(true), tfexec.Get(true), tfexec.Upgrade(false)}
	for _, bc := range backendConfig {
		opts = append(opts, tfexec.BackendConfig(bc))
	}
	return w.command(ctx, runner.TerraformInitFailed, w.named("init"), w.log, func(ctx context.Context) error {
		return w.tf.Init(ctx, opts...)
	})
}

// Plan writes a plan to planFile and reports whether it changes anything.
func (w *Workspace) Plan(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, w.named("plan"), tfexec.Out(planFile))
}

// PlanDestroy writes a plan that destroys everything in the state to
// planFile and reports whether it changes anything.
func (w *Workspace) PlanDestroy(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, w.named("plan -destroy"), tfexec.Out(planFile), tfexec.Destroy(true))
}

// CurrentState reads the backend's current state as JSON.
func (w *Workspace) CurrentState(ctx context.Context) (*tfjson.State, error) {
	var st *tfjson.State
	err := w.command(ctx, runner.TerraformShowFailed, w.named("show -json"), nil, func(ctx context.Context) (err error) {
		st, err = w.tf.Show(ctx, tfexec.JSONNumber(true))
		return err
	})
	return st, err
}

// RefreshPlan writes a refresh-only plan to planFile: what terraform finds
// changed outside it, proposing nothing. It reports whether the refresh
// changed anything (terraform's -detailed-exitcode).
func (w *Workspace) RefreshPlan(ctx context.Context, planFile string) (bool, error) {
	return w.plan(ctx, w.named("plan -refresh-only"), tfexec.Out(planFile), tfexec.RefreshOnly(true))
}

func (w *Workspace) plan(ctx context.Context, what string, opts ...tfexec.PlanOption) (bool, error) {
	opts = append(opts, tfexec.LockTimeout(w.opts.LockTimeout.String()))
	u := newUI(w.log)
	var changed bool
	err := w.command(ctx, runner.TerraformPlanFailed, what, nil, func(ctx context.Context) (err error) {
		// -detailed-exitcode: terraform-exec reads exit status 2 as a
		// plan that changes something, not as a failure.
		changed, err = w.tf.PlanJSON(ctx, u, opts...)
		return err
	})
	if err != nil {
		return false, w.explain(err, runner.TerraformPlanFailed, what, u)
	}
	return changed, nil
}

// ShowPlan reads a saved plan as JSON, refusing one larger than
// Options.MaxPlanJSON.
func (w *Workspace) ShowPlan(ctx context.Context, planFile string) (*tfjson.Plan, error) {
	what := w.named("show -json")
	size := &countingWriter{}
	var p *tfjson.Plan
	err := w.command(ctx, runner.TerraformShowFailed, what, size, func(ctx context.Context) (err error) {
		p, err = w.tf.ShowPlanFile(ctx, planFile, tfexec.JSONNumber(true))
		return err
	})
	if size.n > w.opts.MaxPlanJSON {
		return nil, runner.Errorf(runner.PlanTooLarge, "%s: the plan's JSON is larger than %d MiB. A plan that large needs splitting into several contracts", what, w.opts.MaxPlanJSON>>20)
	}
	if err != nil {
		return nil, err
	}
	return p, nil
}

// Apply applies exactly the saved plan in planFile.
func (w *Workspace) Apply(ctx context.Context, planFile string) error {
	what := w.named("apply")
	u := newUI(w.log)
	err := w.command(ctx, runner.TerraformApplyFailed, what, nil, func(ctx context.Context) error {
		return w.tf.ApplyJSON(ctx, u, tfexec.DirOrPlan(planFile), tfexec.LockTimeout(w.opts.LockTimeout.String()))
	})
	if err != nil {
		return w.explain(err, runner.TerraformApplyFailed, what, u)
	}
	return nil
}

// Destroy destroys everything in the workspace's state.
func (w *Workspace) Destroy(ctx context.Context) error {
	return w.command(ctx, runner.TerraformApplyFailed, w.named("destroy"), w.log, func(ctx context.Context) error {
		return w.tf.Destroy(ctx, tfexec.LockTimeout(w.opts.LockTimeout.String()))
	})
}

// ShowState reads a state file as JSON.
func (w *Workspace) ShowState(ctx context.Context, statePath string) (*tfjson.State, error) {
	var st *tfjson.State
	err := w.command(ctx, runner.TerraformShowFailed, w.named("show -json state"), nil, func(ctx context.Context) (err error) {
		st, err = w.tf.ShowStateFile(ctx, statePath, tfexec.JSONNumber(true))
		return err
	})
	return st, err
}

// Outputs returns the root module's outputs after an apply. Their values
// are read into Nova's memory only, never into the log, where they would
// only repeat the state and may be credentials a module returns.
func (w *Workspace) Outputs(ctx context.Context) (map[string]runner.OutputValue, error) {
	var out map[string]tfexec.OutputMeta
	err := w.command(ctx, runner.TerraformShowFailed, w.named("output"), nil, func(ctx context.Context) (err error) {
		out, err = w.tf.Output(ctx)
		return err
	})
	if err != nil {
		return nil, err
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

// explain replaces a failure's message with terraform's own diagnostic,
// when u holds one: its summary and detail explain a failure, and
// classify it when Nova knows the kind. An interruption keeps its reason
// whatever was printed: it is no verdict.
func (w *Workspace) explain(err error, reason runner.Reason, what string, u *ui) error {
	if runner.ReasonOf(err) != reason {
		return err
	}
	specific, msg, ok := u.classified(w.opts.Backend, w.flavour.program)
	if !ok {
		return err
	}
	return runner.Errorf(cmp.Or(specific, reason), "%s: %s", what, msg)
}

// wrap attaches a reason code, telling an interruption apart from a
// failure so nobody mistakes a cancelled apply for a broken configuration.
// Only terraform exiting with a status is its verdict; terraform killed by
// a signal (an OOM kill, an operator's kill -9) never reported one, whatever
// it managed to do first, and neither did one whose context ended.
func wrap(ctx context.Context, reason runner.Reason, what string, err error) error {
	var t *timedOut
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &t) {
		return runner.Errorf(runner.TerraformTimeout, "%s %s (--terraform-timeout) and was interrupted so it could release its state lock", what, t)
	}
	if ctx.Err() != nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return runner.Errorf(runner.TerraformInterrupted, "%s interrupted: %s", what, tail(errorText(err), 20))
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) && !exit.Exited() {
		return runner.Errorf(runner.TerraformInterrupted, "%s ended without a verdict (%s): %s", what, exit.ProcessState, tail(errorText(err), 20))
	}
	return runner.Errorf(reason, "%s: %s", what, tail(errorText(err), 20))
}

// errorText is err's message. terraform-exec's error for a command whose
// context ended just as it started, or as it exited cleanly, wraps a nil
// error, and its Error method panics on it; the command was interrupted
// all the same, and says so without the message.
func errorText(err error) (text string) {
	defer func() {
		if recover() != nil {
			text = "terraform said nothing"
		}
	}()
	return err.Error()
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

// countingWriter counts what is written to it, and keeps none of it.
type countingWriter struct{ n int64 }

func (c *countingWriter) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return len(p), nil
}

// syncWriter serialises writes to the log: terraform's stdout and stderr
// are copied to it by two goroutines at once.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
