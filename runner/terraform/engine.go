package terraform

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
)

// Engine implements runner.Engine with Terraform or OpenTofu, whichever
// the contract names: it renders root modules from the registry's modules
// and runs the engine's binary over them.
type Engine struct {
	// Registry holds the modules a target stack's instances name.
	Registry *registry.Registry
	// Terraform is how the engine runs (terraform's binary, environment,
	// extra log, timeouts); a contract on OpenTofu runs the same way with
	// the OpenTofu binary.
	Terraform Options
	// OpenTofu is the tofu binary ("": none, and a contract on OpenTofu
	// fails with TERRAFORM_NOT_FOUND).
	OpenTofu string
	// StatePassphrase is the secret OpenTofu's pbkdf2 key provider derives
	// the state's key from, for contracts whose backend encrypts. It goes
	// to tofu's environment only: never into the rendered root, a log or
	// an event.
	StatePassphrase string
	// StateDir roots the default local state: each contract and
	// environment gets StateDir/<contractId>/<env>/terraform.tfstate.
	StateDir string
	// BackendType and BackendConfig come from flags and override the
	// contract's backend.
	BackendType   string
	BackendConfig []string
	// Locks returns the run locks a workspace of the given backend takes,
	// in order, before terraform first touches its state; the workspace
	// holds them until it is closed, which is when the run ends. nil: none.
	Locks func(backendType string, backendConfig []string) ([]runner.StateLock, error)
	// Holder is who this run is, for the locks to name.
	Holder runner.LockHolder
	// Notify, when set, receives a line when the run waits for a lock.
	Notify io.Writer
}

// pgCreationWait is the least terraform waits for the pg backend's lock.
const pgCreationWait = 2 * time.Minute

// initSerializer is a lock that must also keep terraform inits of its
// backend apart (see postgres.Lock.SerializeInit).
type initSerializer interface {
	SerializeInit(ctx context.Context, init func() error) error
}

var _ runner.Engine = (*Engine)(nil)

// Render implements runner.Engine: main.tf with the contract's backend,
// and a copy of every registry module the stack uses.
func (e *Engine) Render(dir string, c *runner.Contract, target *runner.TargetStack) error {
	backendType, _, err := e.backend(c)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return runner.Errorf(runner.RenderFailed, "clearing %s: %w", dir, err)
	}
	if c.Encrypted() && c.EngineName() != runner.EngineOpenTofu {
		return runner.Errorf(runner.StateEncryptionUnsupported, "the contract's backend encrypts its state (backend.encryption), which %s cannot do: use engine: opentofu", c.EngineName())
	}
	src, err := RenderRoot(target, backendType, c.Encrypted())
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return runner.Errorf(runner.RenderFailed, "creating %s: %w", dir, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), src, 0o644); err != nil {
		return runner.Errorf(runner.RenderFailed, "writing root module: %w", err)
	}
	copied := map[string]bool{}
	for _, inst := range target.Instances {
		rel := ModuleDir(inst.Module, inst.Version)
		if copied[rel] {
			continue
		}
		copied[rel] = true
		// The exact version the target names, or nothing: a registry
		// updated since resolution must not change what is deployed.
		m, ok := e.Registry.Module(inst.Module)
		if !ok || m.Version != inst.Version {
			return runner.Errorf(runner.ModuleUnknown, "module %s@%s is not in the registry", inst.Module, inst.Version)
		}
		mfs, err := e.Registry.TerraformFS(m)
		if err != nil {
			return runner.Errorf(runner.RenderFailed, "%w", err)
		}
		if err := os.CopyFS(filepath.Join(dir, filepath.FromSlash(rel)), mfs); err != nil {
			return runner.Errorf(runner.RenderFailed, "copying module %s: %w", m.Name, err)
		}
	}
	return nil
}

// Open implements runner.Engine: init of dir by the contract's engine with
// the contract's backend, the engine's output appended to
// runDir/terraform.log.
//
// Before anything touches the state it takes the run locks of the
// contract and environment (Locks), waiting up to the lock timeout; the
// workspace holds them until Close, so the whole run from plan to
// recorded outcome is one turn.
func (e *Engine) Open(ctx context.Context, dir, runDir string, c *runner.Contract) (runner.Workspace, error) {
	backendType, backendConfig, err := e.Backend(c)
	if err != nil {
		return nil, err
	}
	opts, err := e.options(c)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(runDir, 0o755); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "creating run directory: %w", err)
	}
	ws := &workspace{backend: backendType}
	if backendType == "local" {
		for _, entry := range backendConfig {
			if k, v, _ := strings.Cut(entry, "="); k == "path" {
				ws.statePath = v
			}
		}
	}
	ok := false
	defer func() {
		if !ok {
			_ = ws.Close()
		}
	}()
	locks, err := e.lock(ctx, ws, c, backendType, backendConfig)
	if err != nil {
		return nil, err
	}
	ws.log, err = os.OpenFile(filepath.Join(runDir, "terraform.log"), os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "opening terraform log: %w", err)
	}
	opts.Backend = backendType
	if backendType == "pg" {
		// Nova's run lock has already kept other Nova runs of this
		// contract out; what terraform's pg lock still meets is its
		// database-wide lock for creating a workspace, which every
		// contract's first run takes for a moment. Failing on that at once
		// would turn the first parallel runs into STATE_LOCKED.
		opts.LockTimeout = max(opts.LockTimeout, pgCreationWait)
	}
	if opts.Log != nil {
		opts.Log = io.MultiWriter(opts.Log, ws.log)
	} else {
		opts.Log = ws.log
	}
	if ws.tf, err = New(dir, opts); err != nil {
		return nil, err
	}
	init := func() error { return ws.tf.Init(ctx, backendConfig) }
	for _, l := range locks {
		if s, is := l.(initSerializer); is {
			inner := init
			init = func() error { return s.SerializeInit(ctx, inner) }
		}
	}
	if err := init(); err != nil {
		return nil, err
	}
	ok = true
	return ws, nil
}

// lock takes the run locks of c's contract and environment into ws.
func (e *Engine) lock(ctx context.Context, ws *workspace, c *runner.Contract, backendType string, backendConfig []string) ([]runner.StateLock, error) {
	if e.Locks == nil {
		return nil, nil
	}
	locks, err := e.Locks(backendType, backendConfig)
	if err != nil {
		return nil, err
	}
	key := c.ID + "/" + string(c.Environment)
	wait := e.Terraform.LockTimeout
	for _, l := range locks {
		release, err := l.Lock(ctx, runner.LockRequest{
			Key: key, Holder: e.Holder, Wait: wait,
			Waiting: func(holder string) {
				if e.Notify != nil {
					fmt.Fprintf(e.Notify, "nova: %s is locked by %s; waiting up to %s (--lock-timeout)\n", key, holder, wait)
				}
			},
		})
		if err != nil {
			return nil, err
		}
		ws.releases = append(ws.releases, release)
	}
	return locks, nil
}

// Backend decides the backend type and its -backend-config entries: flags
// win over the contract, and without either the state goes to a local file
// per contract and environment, so two contracts never share state.
func (e *Engine) Backend(contract *runner.Contract) (string, []string, error) {
	typ, entries, err := e.backend(contract)
	if err != nil {
		return "", nil, err
	}
	set := func(key string) bool {
		return slices.ContainsFunc(entries, func(e string) bool { return strings.HasPrefix(e, key+"=") })
	}
	switch {
	case typ == "local" && !set("path"):
		if e.StateDir == "" {
			return "", nil, runner.Errorf(runner.ConfigInvalid, "no state directory configured for the local backend")
		}
		entries = append(entries, "path="+filepath.Join(e.StateDir, contract.ID, string(contract.Environment), "terraform.tfstate"))
	case typ == "pg" && !set("schema_name"):
		// The pg backend keys state by workspace ("default") within one
		// schema: without a schema of their own, every contract using the
		// database would share one state.
		entries = append(entries, "schema_name="+PgSchema(contract))
	}
	return typ, entries, nil
}

// PgSchema is the schema a contract and environment keep their state in
// with the pg backend, unless configured otherwise: an unquoted
// PostgreSQL identifier (lowercase, no hyphens, at most 63 bytes).
func PgSchema(c *runner.Contract) string {
	id := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= '0' && r <= '9':
			return r
		case r >= 'A' && r <= 'Z':
			return r + 'a' - 'A'
		}
		return -1
	}, c.ID)
	return fmt.Sprintf("nova_%.40s_%s", id, c.Environment)
}

// backend is Backend without the default local state path: rendering
// needs only the type, and a root rendered for a cost estimate has no
// state.
func (e *Engine) backend(contract *runner.Contract) (string, []string, error) {
	typ := "local"
	var entries []string
	if contract.Backend != nil {
		typ = contract.Backend.Type
		// For the local backend Nova owns the state's location, which is
		// what keeps each contract and environment apart: a contract must
		// not point its dev runs at another environment's state.
		if typ == "local" {
			for _, k := range []string{"path", "workspace_dir"} {
				if _, set := contract.Backend.Config[k]; set {
					return "", nil, runner.Errorf(runner.BackendConfigInvalid, "the contract may not set the local backend's %s; Nova keeps state per contract and environment (operators can pass --backend-config)", k)
				}
			}
		}
		keys := make([]string, 0, len(contract.Backend.Config))
		for k := range contract.Backend.Config {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			entries = append(entries, k+"="+contract.Backend.Config[k])
		}
	}
	if e.BackendType != "" {
		typ = e.BackendType
	}
	for _, entry := range e.BackendConfig {
		if k, _, ok := strings.Cut(entry, "="); !ok || k == "" {
			return "", nil, runner.Errorf(runner.BackendConfigInvalid, "backend config %q is not key=value", redact(entry))
		}
		entries = append(entries, entry)
	}
	return typ, entries, nil
}

// redact keeps a malformed backend entry recognisable without echoing what
// may be a credential.
func redact(e string) string {
	if len(e) > 4 {
		return e[:4] + "…"
	}
	return e
}

// workspace implements runner.Workspace over an initialised root module.
type workspace struct {
	tf  *Workspace
	log *os.File
	// releases give back the run locks, in the order they were taken.
	releases []func() error
	// backend is the backend's type; statePath the local backend's state
	// file, which a completed destroy removes.
	backend, statePath string
}

func (w *workspace) Plan(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	changed, err := w.tf.Plan(ctx, planFile)
	return w.saved(ctx, planFile, changed, err)
}

// saved reads the plan terraform just saved to planFile. terraform's
// detailed exit code (changed) and the saved plan must agree on "nothing
// to do"; if either sees a change, it is one.
func (w *workspace) saved(ctx context.Context, planFile string, changed bool, err error) (*runner.SavedPlan, error) {
	if err != nil {
		return nil, err
	}
	sp, err := w.Show(ctx, planFile)
	if err != nil {
		return nil, err
	}
	sp.HasChanges = sp.HasChanges || changed
	return sp, nil
}

// Show reads the saved plan and vouches for the file it read: hashed
// before terraform reads it and again after, the two must agree, so a
// digest derived from Content holds for the file with that hash, and an
// apply in this process may trust the file by its hash alone.
func (w *workspace) Show(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	before, err := runner.HashFile(planFile)
	if err != nil {
		return nil, runner.Errorf(runner.TerraformShowFailed, "hashing the saved plan: %w", err)
	}
	p, err := w.tf.ShowPlan(ctx, planFile)
	if err != nil {
		return nil, err
	}
	after, err := runner.HashFile(planFile)
	if err != nil {
		return nil, runner.Errorf(runner.TerraformShowFailed, "hashing the saved plan: %w", err)
	}
	if after != before {
		return nil, runner.Errorf(runner.TerraformShowFailed, "the saved plan %s changed while terraform read it", planFile)
	}
	sp, err := savedPlan(p)
	if err != nil {
		return nil, err
	}
	// The engine that reads the plan is the one that would apply it: the
	// digest binds it, so an approval of one engine's plan never
	// authorises another's apply.
	if sp.Engine, err = w.tf.Engine(ctx); err != nil {
		return nil, err
	}
	sp.FileSHA256 = before
	return sp, nil
}

func (w *workspace) Apply(ctx context.Context, planFile string) error {
	return w.tf.Apply(ctx, planFile)
}

func (w *workspace) Outputs(ctx context.Context) (map[string]runner.OutputValue, error) {
	return w.tf.Outputs(ctx)
}

// RefreshPlan implements runner.DriftWorkspace.
func (w *workspace) RefreshPlan(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	if _, err := w.tf.RefreshPlan(ctx, planFile); err != nil {
		return nil, err
	}
	return w.Show(ctx, planFile)
}

// Close releases the run locks last taken first, once terraform is done.
func (w *workspace) Close() error {
	var errs []error
	if w.log != nil {
		errs = append(errs, w.log.Close())
	}
	for i := len(w.releases) - 1; i >= 0; i-- {
		errs = append(errs, w.releases[i]())
	}
	w.releases = nil
	return errors.Join(errs...)
}
