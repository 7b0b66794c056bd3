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
	"github.com/nova-platform/nova/runner/postgres"
	"github.com/nova-platform/nova/runner/terraform"
	"github.com/nova-platform/nova/stages/apply"
	"github.com/nova-platform/nova/stages/confidence"
	"github.com/nova-platform/nova/stages/drift"
	"github.com/nova-platform/nova/stages/nfr"
	"github.com/nova-platform/nova/stages/plan"
	"github.com/nova-platform/nova/stages/policy"
	"github.com/nova-platform/nova/stages/schema"
)

// execute wires the stages for the command, runs them and reports the
// outcome; the error carries the verdict for the exit code. With --all or
// --changed it runs many contracts (many.go), each the way one runs here.
func execute(ctx context.Context, cfg Config, env Env) error {
	if cfg.Select.Many() {
		return executeMany(ctx, cfg, env)
	}
	rep := newReporter(cfg, env)
	warnLocalEvidence(cfg, env)
	evidenceCfg, cleanup, err := checkedEvidence(cfg)
	if err != nil {
		return rep.abort(err)
	}
	defer cleanup()
	store, keys, err := openEvidenceStore(ctx, evidenceCfg, env)
	if err != nil {
		return rep.abort(err)
	}
	defer store.Close()
	if !cfg.Check {
		drainBefore(ctx, store, env)
	}
	w := wiring{cfg: cfg, env: env, evidence: recordInto(cfg, store), keys: keys}
	w.forge, w.setupErr = connectForge(ctx, cfg)
	if w.setupErr == nil && !cfg.MergeQueue {
		// A merge queue's check authorizes nothing, and its token may
		// not read the evidence branch's protection: the merged run,
		// which decides, guards it.
		w.setupErr = guardEvidence(ctx, cfg, env.Stderr)
	}
	if w.setupErr == nil && cfg.Command == "rollback" {
		return executeRollback(ctx, w, rep, store)
	}
	r := w.run(ctx, rep)
	defer r.cleanup(cfg)
	if !cfg.Check {
		drainAfter(ctx, store, env, &r.out)
	}
	r.finish(ctx)
	return verdict(r.out.Verdict, r.out.Reason)
}

// warnLocalEvidence says when a forge's run writes its events to a local
// repository: a runner's home lives as long as its job, so the events, and
// the keys made to sign them, would be gone before anyone checks them.
func warnLocalEvidence(cfg Config, env Env) {
	if cfg.Forge != NoForge && cfg.Evidence.Local {
		fmt.Fprintf(env.Stderr, "nova: no evidence-repo is set, so this run's events go to %s inside this job and are lost with it\n", cfg.Evidence.Repo)
	}
}

// drainBefore pushes events an earlier run could not push, so this run's
// chain continues from them; failing that, they wait in the outbox and the
// run goes on (apply still refuses to start unless its authorization is
// pushed).
func drainBefore(ctx context.Context, store *evidence.Store, env Env) {
	if err := store.Drain(ctx); err != nil {
		fmt.Fprintf(env.Stderr, "nova: evidence repo not reachable, events stay in the outbox: %v\n", err)
	}
}

// drainAfter pushes what the runs left in the outbox. On an ephemeral
// runner the outbox dies with the job: a run whose evidence did not reach
// the repo must not look like a clean pass.
func drainAfter(ctx context.Context, store *evidence.Store, env Env, outs ...*runner.Outcome) {
	err := store.Drain(context.WithoutCancel(ctx))
	if err == nil {
		return
	}
	fmt.Fprintf(env.Stderr, "nova: %s: %d event(s) wait in the evidence outbox for the next run: %v\n", runner.EvidencePushFailed, pendingCount(store), err)
	for _, out := range outs {
		if out.Verdict == runner.Pass {
			out.Verdict, out.Reason = runner.Errored, runner.EvidencePushFailed
		}
	}
}

// syncOutbox makes durable what the runs left in the outbox unsynced
// (evidence.Store.DeferOutboxSync) before any outcome is reported: an
// outcome whose events could be lost must not look like a clean pass.
func syncOutbox(store *evidence.Store, env Env, outs ...*runner.Outcome) {
	err := store.SyncOutbox()
	if err == nil {
		return
	}
	fmt.Fprintf(env.Stderr, "nova: %v\n", err)
	for _, out := range outs {
		if out.Verdict == runner.Pass {
			out.Verdict, out.Reason = runner.Errored, runner.ReasonOf(err)
		}
	}
}

// contractRun is one contract's run: its outcome and what reports it.
type contractRun struct {
	out    runner.Outcome
	st     *runner.State
	events string
	rep    *reporter
	report *forgeReport
}

// run wires the command's stages for w's contract and runs them.
func (w wiring) run(ctx context.Context, rep *reporter) *contractRun {
	cfg := w.cfg
	runID := local.NewRunID(time.Now())
	st := &runner.State{
		RunID:          runID,
		Dir:            cfg.Dir,
		ContractPath:   cfg.ContractPath,
		EnvOverride:    cfg.EnvOverride,
		EngineOverride: cfg.EngineOverride,
		Commit:         cfg.Commit,
		RunDir:         w.runDir(runID),
		ForgeRun:       cfg.ForgeRun,
		PullRequest:    cfg.ForgeAPI.PullRequest,
	}
	if cfg.Destroy {
		st.Operation = runner.OperationDestroy
	}
	st.UntilMerge = cfg.UntilMerge
	st.DeletedContract = w.deletedContract(ctx)
	w.runID = runID
	err := w.setupErr
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
	report := &forgeReport{cfg: cfg, forge: w.forge, warn: w.env.Stderr}
	events := local.NewEventLog(filepath.Join(st.RunDir, "events.jsonl"))
	em := runner.NewEmitter(runner.Tee{events, w.evidence}, cfg.Source, runID, w.env.Now)
	if cfg.Check {
		em = runner.NewEmitter(w.evidence, cfg.Source, runID, w.env.Now)
	}
	p := runner.Pipeline{
		Stages: stages,
		Events: em,
		OnResult: func(res runner.Result) {
			rep.stage(res)
			if res.Stage == "gate" && res.Verdict == runner.Pass {
				report.authorized(ctx, st)
				report.breakGlass(ctx, st)
			}
		},
		Finally: func(ctx context.Context, st *runner.State) {
			if st.Contract != nil {
				backfillOutcomes(ctx, w.evidence, em, st.Contract.ID, w.env)
			}
		},
	}
	rep.start(st)
	out := p.Run(ctx, st)
	if err := events.Close(); err != nil {
		fmt.Fprintf(w.env.Stderr, "nova: the run's event log %s: %v\n", events.Path(), err)
	}
	eventsPath := events.Path()
	if cfg.Check {
		eventsPath = ""
		if st.Contract != nil {
			rep.note = checkNote(cfg, wouldRecord(w.evidence, st.Contract.ID))
		}
	}
	return &contractRun{out: out, st: st, events: eventsPath, rep: rep, report: report}
}

// finish reports the run: to the user, and on the forge.
func (r *contractRun) finish(ctx context.Context) runView {
	v := r.rep.finish(r.out, r.st, r.events)
	r.report.finished(context.WithoutCancel(ctx), v)
	r.report.drift(context.WithoutCancel(ctx), r.st, v)
	return v
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
func backfillOutcomes(ctx context.Context, store runner.EvidenceReader, em *runner.Emitter, contractID string, env Env) {
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
	evidence evidenceStore
	keys     signing.Keys
	forge    *forgeAdapters
	runID    string
	// setupErr is why the forge could not be reached; the run records it
	// as its only stage.
	setupErr error
	// reg and verifier are what runs share when many run in one process;
	// nil loads the registry cfg names and makes a verifier of its keys.
	reg      *registry.Registry
	verifier runner.CommitVerifier
	// runsDir is where runs keep their directories; empty is the
	// checkout's (a rollback plans a copy of an earlier commit, and keeps
	// its runs with the checkout's).
	runsDir string
	// rollback is what `nova rollback` returns the environment to.
	rollback *runner.RollbackRecord
}

// stages lists the command's stages, each given its adapters.
func (w wiring) stages(ctx context.Context) ([]runner.Stage, error) {
	cfg, env := w.cfg, w.env
	reg := w.reg
	if reg == nil {
		var err error
		if reg, err = loadRegistry(cfg.RegistryDir); err != nil {
			return nil, err
		}
	}
	validate := schema.New(reg)
	merged, err := w.mergedAlready(ctx)
	if err != nil {
		return nil, err
	}
	if cfg.Command == "validate" {
		return []runner.Stage{validate, w.approversCheck()}, nil
	}
	if cfg.Command == "apply" {
		// The apply job trusts the plan job's evaluation: it re-validates
		// the contract, proves the bundle is the one planned for it, and
		// applies only what the gate authorizes.
		engine, err := w.terraformEngine(reg)
		if err != nil {
			return nil, err
		}
		bundle := &apply.Bundle{Dir: cfg.Bundle, ExpectDigest: cfg.ExpectDigest, RunsDir: local.RunsDir(cfg.Dir), Evidence: w.evidence, Engine: engine, Merged: cfg.Merged}
		// A bundle applied before answers first, running nothing.
		return slices.Concat([]runner.Stage{validate}, merged, []runner.Stage{bundle, w.change(reg, engine)}, w.mergeStage(), w.lock(), w.gate(), []runner.Stage{w.applyStage(engine)}), nil
	}
	if cfg.Command == "drift" {
		// Drift looks at what runs, not at the change: no evaluation, no
		// gate, nothing applied.
		engine, err := w.terraformEngine(reg)
		if err != nil {
			return nil, err
		}
		return []runner.Stage{validate, drift.New(engine, w.evidence)}, nil
	}
	if cfg.MergeQueue {
		// The queue's commit against the approved change: nothing is
		// evaluated or planned (that needs the state and its secrets),
		// the merged run does it all again.
		engine, err := w.terraformEngine(reg)
		if err != nil {
			return nil, err
		}
		return []runner.Stage{validate, w.change(reg, engine), &runner.QueueCheck{Evidence: w.evidence}}, nil
	}
	if cfg.Destroy {
		return w.destroyStages(ctx, reg)
	}
	if cfg.Command == "plan" || cfg.Command == "run" || cfg.Command == "rollback" {
		// Before anything is evaluated, and without an event of its own
		// (validate shows it as a stage): a broken approver config
		// stops dev's run, not first qa's approval.
		if _, err := w.approversCheck().Check(ctx); err != nil {
			return nil, err
		}
	}
	policyCfg, err := policy.LoadConfig(cfg.Dir)
	if err != nil {
		return nil, err
	}
	// The consumer's Rego is compiled here, once per run (the platform
	// rules once per process), and shared by the pre-plan and plan-level
	// stages.
	engines, err := policy.Engines(ctx, cfg.Dir, policyCfg, env.Environ)
	if err != nil {
		return nil, err
	}
	verifier := w.verifier
	if verifier == nil {
		if verifier, err = commitVerifier(cfg, w.forge); err != nil {
			return nil, err
		}
	}
	evaluate := []runner.Stage{
		validate,
		policy.New(engines, runner.PrePlan),
		nfr.New(reg, nfr.WithCost(&infracost.Estimator{Bin: policyCfg.InfracostPath, APIKey: cfg.InfracostKey, Env: env.Environ, Engine: renderer(reg)})),
		confidence.New(runner.PrePlan, verifier, confidence.WithBreakGlass(w.grants())),
	}
	if cfg.Command == "explain" {
		return evaluate, nil
	}
	engine, err := w.terraformEngine(reg)
	if err != nil {
		return nil, err
	}
	// The change is named before anything is evaluated: an environment
	// that applied it answers with its receipt and runs nothing else.
	evaluate = slices.Insert(evaluate, 1, slices.Concat(merged, []runner.Stage{w.change(reg, engine)}, w.rollbackStage(), w.mergeStage(), w.lock())...)
	planned := slices.Concat(evaluate, []runner.Stage{
		plan.New(engine),
		policy.New(engines, runner.PostPlan),
		confidence.New(runner.PostPlan, verifier, confidence.WithBreakGlass(w.grants())),
	})
	if cfg.Command == "plan" {
		return planned, nil
	}
	return slices.Concat(planned, w.gate(), []runner.Stage{w.applyStage(engine)}), nil
}

// mergedAlready is the stage that ends a pull request's run
// (--until-merge) when the forge says the pull request is merged; none
// while it is open.
func (w wiring) mergedAlready(ctx context.Context) ([]runner.Stage, error) {
	pr := w.cfg.ForgeAPI.PullRequest
	if !w.cfg.UntilMerge || pr <= 0 || w.forge == nil || w.forge.pullStates == nil {
		return nil, nil
	}
	state, err := w.forge.pullStates.PullRequestState(ctx, pr)
	if err != nil || state != runner.PullRequestMerged {
		return nil, err
	}
	return []runner.Stage{runner.MergedPullRequest{PullRequest: pr}}, nil
}

// mergeStage compares the merged commit's change with the plan approved
// before the merge (--merged).
func (w wiring) mergeStage() []runner.Stage {
	if !w.cfg.Merged {
		return nil
	}
	return []runner.Stage{&runner.MergeCheck{Evidence: w.evidence, History: local.History{Dir: w.cfg.Dir}}}
}

// approversCheck checks the approver config of the trusted base and the
// checkout's own copy, when the checkout has one.
func (w wiring) approversCheck() runner.CheckApprovers {
	var trusted runner.ApproversReader
	if w.forge != nil {
		trusted = w.forge.approvers
	}
	if trusted == nil {
		trusted = w.cfg.localApprovers()
	}
	return runner.CheckApprovers{
		Proposed: local.CheckoutApprovers{Dir: w.cfg.Dir, Path: w.cfg.ApproversPath},
		Trusted:  trusted, Keys: local.ClaimKeys{},
	}
}

// change names the run's change, and ends the run with a receipt when the
// environment applied it last.
func (w wiring) change(reg *registry.Registry, engine *terraform.Engine) *runner.IdentifyChange {
	return &runner.IdentifyChange{Content: reg, Engine: engine, Evidence: w.evidence}
}

// gate is the approvals stage and the gate: approvals are imported into
// the evidence first, then the gate decides from the evidence alone, and
// signs an attestation of what it authorized.
func (w wiring) gate() []runner.Stage {
	approvers := w.forge.approvers
	return []runner.Stage{
		&runner.ImportApprovals{
			Sources: w.forge.sources, Approvers: approvers, Membership: w.forge.membership,
			Change: w.changeReader(), Claims: claimKeys(w.cfg, approvers), Evidence: w.evidence,
		},
		runner.Gate{Evidence: w.evidence, Approvers: approvers, Membership: w.forge.membership, Attest: w.keys.Attestor(), Now: w.env.Now},
	}
}

// grants are the break-glass grants the confidence stages read, at the
// gate's clock.
func (w wiring) grants() runner.BreakGlassGrants {
	return runner.BreakGlassGrants{Evidence: w.evidence, Now: w.env.Now}
}

// claimKeys verifies local approval claims: with the keys the trusted
// approver config registers, and outside a forge also with the keys `nova
// approve` made on first use on this machine.
func claimKeys(cfg Config, approvers runner.ApproversReader) local.ClaimKeys {
	k := local.ClaimKeys{Approvers: approvers}
	if cfg.Forge == NoForge {
		k.Dir = approverKeyDir(cfg)
	}
	return k
}

// approverKeyDir is where local approvers' keys are made on first use.
func approverKeyDir(cfg Config) string {
	return filepath.Join(cfg.Evidence.Paths.ConfigDir, "approvers")
}

// terraformEngine is the engine adapter the plan and apply stages share,
// so both initialise the same backend and hold the same run locks; it runs
// terraform or tofu, as each contract says.
func (w wiring) terraformEngine(reg *registry.Registry) (*terraform.Engine, error) {
	cfg, env := w.cfg, w.env
	tfPath, tofuPath, err := cfg.enginePaths()
	if err != nil {
		return nil, err
	}
	var tfLog io.Writer
	if cfg.Verbose {
		tfLog = env.Stderr
	}
	host, _ := os.Hostname()
	return &terraform.Engine{
		Registry: reg,
		Terraform: terraform.Options{ExecPath: tfPath, Env: cfg.TerraformEnv, Log: tfLog,
			LockTimeout: cfg.LockTimeout, Timeout: cfg.TerraformTimeout},
		OpenTofu:        tofuPath,
		StatePassphrase: cfg.StatePassphrase,
		StateDir:        cfg.StateDir,
		BackendType:     cfg.BackendType,
		BackendConfig:   cfg.BackendConfig,
		Locks:           runLocks(cfg),
		Holder:          runner.LockHolder{RunID: w.runID, PID: os.Getpid(), Host: host, Since: time.Now().UTC()},
		Notify:          env.Stderr,
	}, nil
}

// runLocks are the locks a run holds from plan to outcome: always the
// machine's own (a file per contract and environment under the state
// dir), and where the state is shared through PostgreSQL, an advisory
// lock in its database that every runner sees. Other remote backends have
// only terraform's lock, which covers one command at a time.
func runLocks(cfg Config) func(string, []string) ([]runner.StateLock, error) {
	return func(backendType string, backendConfig []string) ([]runner.StateLock, error) {
		locks := []runner.StateLock{local.StateLock{Dir: filepath.Join(cfg.StateDir, "locks")}}
		if backendType == "pg" {
			pg, err := postgres.BackendLock(backendConfig, cfg.TerraformEnv)
			if err != nil {
				return nil, err
			}
			locks = append(locks, pg)
		}
		return locks, nil
	}
}

// renderer renders root modules (for a cost estimate before any plan) and
// runs no terraform, so commands without terraform can use it.
func renderer(reg *registry.Registry) *terraform.Engine { return &terraform.Engine{Registry: reg} }

// commitVerifier checks commit signatures against the trusted keys file
// (--trusted-keys, $NOVA_TRUSTED_KEYS) when one is given: the operator's
// keys then decide. Without one, on a forge, the forge's own verification
// decides: a commit the forge shows as verified was signed by a key its
// signer registered with the forge, which is what a reviewer sees.
func commitVerifier(cfg Config, forge *forgeAdapters) (runner.CommitVerifier, error) {
	if cfg.TrustedKeysFile == "" {
		if forge != nil && forge.verifier != nil {
			return forge.verifier, nil
		}
		return local.CommitVerifier{}, nil
	}
	keys, err := os.ReadFile(cfg.TrustedKeysFile)
	if err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "--trusted-keys: %w", err)
	}
	return local.CommitVerifier{TrustedKeys: string(keys)}, nil
}

func loadRegistry(dir string) (*registry.Registry, error) {
	if dir == "" {
		return registry.LoadEmbedded()
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "--registry: %w", err)
	}
	return registry.Load(os.DirFS(dir))
}
