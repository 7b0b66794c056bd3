package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/signing"
	"github.com/nova-platform/nova/runner/infracost"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/runner/terraform"
	"github.com/nova-platform/nova/stages/apply"
	"github.com/nova-platform/nova/stages/confidence"
	"github.com/nova-platform/nova/stages/nfr"
	"github.com/nova-platform/nova/stages/plan"
	"github.com/nova-platform/nova/stages/policy"
	"github.com/nova-platform/nova/stages/schema"
)

// execute wires the stages for the command, runs them and reports the
// outcome; the error carries the verdict for the exit code.
func execute(ctx context.Context, cfg Config, env Env) error {
	rep := newReporter(cfg, env)
	runID := local.NewRunID(time.Now())
	st := &runner.State{
		RunID:        runID,
		Dir:          cfg.Dir,
		ContractPath: cfg.ContractPath,
		EnvOverride:  cfg.EnvOverride,
		Commit:       cfg.Commit,
		RunDir:       filepath.Join(local.RunsDir(cfg.Dir), runID),
		ForgeRun:     cfg.ForgeRun,
	}
	store, keys, err := openEvidenceStore(ctx, cfg.Evidence, env)
	if err != nil {
		return rep.abort(err)
	}
	defer store.Close()
	// Events an earlier run could not push go first, so this run's chain
	// continues from them; failing that, they wait in the outbox and the
	// run goes on (apply still refuses to start unless its authorization
	// is pushed).
	if err := store.Drain(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "nova: evidence repo not reachable, events stay in the outbox: %v\n", err)
	}
	w := wiring{cfg: cfg, env: env, evidence: store, keys: keys}
	w.forge, err = connectForge(ctx, cfg)
	var stages []runner.Stage
	if err == nil {
		stages, err = w.stages(ctx)
	}
	if err != nil {
		// Failing to set up is recorded like any failure, so the evidence
		// shows runs that never got going too.
		stages = []runner.Stage{setupFailed{err}}
		w.forge = &forgeAdapters{}
	}
	report := &forgeReport{cfg: cfg, forge: w.forge, warn: env.Stderr}
	events := local.NewEventLog(filepath.Join(st.RunDir, "events.jsonl"))
	p := runner.Pipeline{
		Stages: stages,
		Events: runner.NewEmitter(runner.Tee{events, store}, cfg.Source, runID, nil),
		OnResult: func(res runner.Result) {
			rep.stage(res)
			if res.Stage == "gate" && res.Verdict == runner.Pass {
				report.authorized(ctx, st)
			}
		},
	}
	rep.start(st)
	out := p.Run(ctx, st)
	if st.Contract != nil {
		backfillOutcomes(context.WithoutCancel(ctx), store, p.Events, st.Contract.ID, env)
	}
	if err := store.Drain(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(env.Stderr, "nova: %s: %d event(s) wait in the evidence outbox for the next run: %v\n", runner.EvidencePushFailed, pendingCount(store), err)
		// On an ephemeral runner the outbox dies with the job: a run whose
		// evidence did not reach the repo must not look like a clean pass.
		if out.Verdict == runner.Pass {
			out.Verdict, out.Reason = runner.Errored, runner.EvidencePushFailed
		}
	}
	v := rep.finish(out, st, events.Path())
	report.finished(context.WithoutCancel(ctx), v)
	return verdict(out.Verdict, out.Reason)
}

// setupFailed stands in for the pipeline when its stages could not be
// built (no terraform, a broken registry or policy config).
type setupFailed struct{ err error }

func (setupFailed) Name() string { return "setup" }
func (s setupFailed) Run(context.Context, *runner.State) (runner.Result, error) {
	return runner.Result{}, s.err
}

// backfillOutcomes records the outcomes of decisions that the contract's
// chain now settles (this run's apply, a rejection, a resolution). They are
// derived from the chain, so a failure here only leaves them for the next
// command to record: it is reported, and the command's verdict stands.
func backfillOutcomes(ctx context.Context, store *evidence.Store, em *runner.Emitter, contractID string, env Env) {
	if _, err := runner.RecordDecisionOutcomes(ctx, store, em, contractID); err != nil {
		fmt.Fprintf(env.Stderr, "nova: decision outcomes of contract %s left for the next run: %v\n", contractID, err)
	}
}

func pendingCount(store *evidence.Store) int {
	pending, err := store.Pending()
	if err != nil {
		return 0
	}
	return len(pending)
}

// wiring holds the adapters a run's stages are built with.
type wiring struct {
	cfg      Config
	env      Env
	evidence *evidence.Store
	keys     signing.Keys
	forge    *forgeAdapters
}

// stages lists the command's stages, each given its adapters.
func (w wiring) stages(ctx context.Context) ([]runner.Stage, error) {
	cfg, env := w.cfg, w.env
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return nil, err
	}
	validate := schema.New(reg)
	if cfg.Command == "validate" {
		return []runner.Stage{validate}, nil
	}
	if cfg.Command == "apply" {
		// The apply job trusts the plan job's evaluation: it re-validates
		// the contract, proves the bundle is the one planned for it, and
		// applies only what the gate authorizes.
		engine, err := terraformEngine(cfg, env, reg)
		if err != nil {
			return nil, err
		}
		bundle := &apply.Bundle{Dir: cfg.Bundle, RunsDir: local.RunsDir(cfg.Dir), Evidence: w.evidence, Engine: engine}
		return slices.Concat([]runner.Stage{validate, bundle}, w.gate(), []runner.Stage{apply.New(engine)}), nil
	}
	policyCfg, err := policy.LoadConfig(cfg.Dir)
	if err != nil {
		return nil, err
	}
	// Rego is compiled here, once per run, and shared by the pre-plan and
	// plan-level stages.
	engines, err := policy.Engines(ctx, cfg.Dir, policyCfg, env.Environ)
	if err != nil {
		return nil, err
	}
	verifier, err := commitVerifier(cfg)
	if err != nil {
		return nil, err
	}
	evaluate := []runner.Stage{
		validate,
		policy.New(engines, runner.PrePlan),
		nfr.New(reg, nfr.WithCost(&infracost.Estimator{Bin: policyCfg.InfracostPath, APIKey: cfg.InfracostKey, Env: env.Environ, Engine: renderer(reg)})),
		confidence.New(runner.PrePlan, verifier),
	}
	if cfg.Command == "explain" {
		return evaluate, nil
	}
	engine, err := terraformEngine(cfg, env, reg)
	if err != nil {
		return nil, err
	}
	planned := slices.Concat(evaluate, []runner.Stage{
		plan.New(engine),
		policy.New(engines, runner.PostPlan),
		confidence.New(runner.PostPlan, verifier),
	})
	if cfg.Command == "plan" {
		return planned, nil
	}
	return slices.Concat(planned, w.gate(), []runner.Stage{apply.New(engine)}), nil
}

// gate is the approvals stage and the gate: approvals are imported into
// the evidence first, then the gate decides from the evidence alone, and
// signs an attestation of what it authorized.
func (w wiring) gate() []runner.Stage {
	approvers := local.TrustedApprovers{Dir: w.cfg.Dir, Base: w.cfg.Base}
	return []runner.Stage{
		&runner.ImportApprovals{
			Sources: w.forge.sources, Approvers: approvers, Membership: w.forge.membership,
			Change: w.forge.change, Claims: w.claims(approvers), Evidence: w.evidence,
		},
		runner.Gate{Evidence: w.evidence, Approvers: approvers, Attest: w.keys.Events},
	}
}

// claims verifies local approval claims: with the keys the trusted approver
// config registers, and outside a forge also with the keys `nova approve`
// made on first use on this machine.
func (w wiring) claims(approvers runner.ApproversReader) runner.ClaimVerifier {
	k := local.ClaimKeys{Approvers: approvers}
	if w.cfg.Forge == NoForge {
		k.Dir = approverKeyDir(w.cfg)
	}
	return k
}

// approverKeyDir is where local approvers' keys are made on first use.
func approverKeyDir(cfg Config) string {
	return filepath.Join(cfg.Evidence.Paths.ConfigDir, "approvers")
}

// terraformEngine is the Terraform the plan and apply stages share, so both
// initialise the same backend.
func terraformEngine(cfg Config, env Env, reg *registry.Registry) (*terraform.Engine, error) {
	tfPath, err := cfg.terraformPath()
	if err != nil {
		return nil, err
	}
	var tfLog io.Writer
	if cfg.Verbose {
		tfLog = env.Stderr
	}
	return &terraform.Engine{
		Registry:      reg,
		Terraform:     terraform.Options{ExecPath: tfPath, Env: cfg.TerraformEnv, Log: tfLog},
		StateDir:      cfg.StateDir,
		BackendType:   cfg.BackendType,
		BackendConfig: cfg.BackendConfig,
	}, nil
}

// renderer renders root modules (for a cost estimate before any plan) and
// runs no terraform, so commands without terraform can use it.
func renderer(reg *registry.Registry) *terraform.Engine { return &terraform.Engine{Registry: reg} }

// commitVerifier checks commit signatures against the trusted keys file
// (--trusted-keys, $NOVA_TRUSTED_KEYS), when one is given.
func commitVerifier(cfg Config) (local.CommitVerifier, error) {
	if cfg.TrustedKeysFile == "" {
		return local.CommitVerifier{}, nil
	}
	keys, err := os.ReadFile(cfg.TrustedKeysFile)
	if err != nil {
		return local.CommitVerifier{}, runner.Errorf(runner.ConfigInvalid, "--trusted-keys: %w", err)
	}
	return local.CommitVerifier{TrustedKeys: string(keys)}, nil
}

func loadRegistry(dir string) (*registry.Registry, error) {
	if dir == "" {
		return registry.Load(registry.Embedded())
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "--registry: %w", err)
	}
	return registry.Load(os.DirFS(dir))
}
