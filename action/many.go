package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"sync"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/monorepo"
)

// SelectFlags choose many contracts under --dir instead of the one
// --contract names, and how many run at once.
type SelectFlags struct {
	// All selects every contract; Changed those the change between the
	// base (--base, else the pull request's) and Head touches.
	All, Changed bool
	// Head is the change's head: --head, else the pull request's, else
	// HEAD of --dir.
	Head string
	// Parallel is how many contracts run at once (default: the CPUs).
	Parallel int
	// ShardList is --shard: the JSON list of contracts one job of a
	// sharded fan-out runs (a matrix entry's shard), read into Shard.
	ShardList string
	Shard     []shardMember
	// Job is --job: the fan-out job (from 1) of the matrix in --selection
	// whose shard this process runs, on a forge that cannot expand a
	// matrix from a job's output (Gitea): its workflow has a fixed number
	// of jobs, and each finds its own shard. Idle is a job past the
	// matrix's last, which runs nothing; Deferred the entry's summary.
	Job      int
	Idle     bool
	Deferred bool
}

// Many reports whether the command runs the contracts a selection finds.
func (s SelectFlags) Many() bool { return s.All || s.Changed || s.ShardList != "" || s.Idle }

// pickJob sets the shard of --job from the matrix in file.
func (s *SelectFlags) pickJob(file string) error {
	switch {
	case file == "":
		return runner.Errorf(runner.ConfigInvalid, "--job %d names a job of the matrix --selection holds: give --selection", s.Job)
	case s.All || s.Changed || s.ShardList != "":
		return runner.Errorf(runner.ConfigInvalid, "--job runs the shard of one entry of --selection: not with --all, --changed or --shard")
	case s.Job < 1:
		return runner.Errorf(runner.ConfigInvalid, "--job %d: want 1 or more", s.Job)
	}
	m, err := readMatrixFile(file)
	if err != nil {
		return err
	}
	if s.Job > len(m.Include) {
		s.Idle = true
		return nil
	}
	e := m.Include[s.Job-1]
	s.ShardList, s.Deferred = e.Shard, e.Summary
	return nil
}

// check refuses selections that cannot mean anything, and reads --shard.
func (s *SelectFlags) check(command string) error {
	switch {
	case s.All && s.Changed:
		return runner.Errorf(runner.ConfigInvalid, "--all and --changed exclude each other")
	case s.ShardList != "" && (s.All || s.Changed):
		return runner.Errorf(runner.ConfigInvalid, "--shard runs the contracts it lists: not with --all or --changed, which select again")
	case command == "matrix" && !(s.All || s.Changed):
		return runner.Errorf(runner.ConfigInvalid, "nova matrix needs --all or --changed")
	case s.Many() && s.Parallel < 1:
		return runner.Errorf(runner.ConfigInvalid, "--parallel %d: want at least 1", s.Parallel)
	}
	if s.ShardList != "" {
		members, err := parseShard(s.ShardList)
		if err != nil {
			return err
		}
		s.Shard = members
	}
	return nil
}

// name is how the selection is shown.
func (s SelectFlags) name() string {
	switch {
	case s.Changed:
		return "changed"
	case s.ShardList != "":
		return "shard"
	}
	return "all"
}

// selectContracts finds the contracts under --dir and keeps those the
// selection asks for; a job of a sharded fan-out takes those its shard
// lists.
func selectContracts(ctx context.Context, cfg Config, reg *registry.Registry) (monorepo.Selection, error) {
	if cfg.Select.ShardList != "" {
		return shardSelection(cfg.Dir, cfg.Select.Shard)
	}
	found, err := monorepo.Discover(cfg.Dir)
	if err != nil {
		return monorepo.Selection{}, err
	}
	if !cfg.Select.Changed {
		return monorepo.All(found), nil
	}
	return monorepo.Changed(ctx, monorepo.Change{
		Root:        cfg.Dir,
		Contracts:   found,
		Base:        cfg.Base,
		Head:        firstNonEmpty(cfg.Select.Head, cfg.ForgeAPI.HeadSHA, "HEAD"),
		RegistryDir: cfg.RegistryDir,
		Registry:    reg,
	})
}

// forContract is the configuration of one selected contract's run: its
// directory is its checkout. Step outputs and the job summary are the
// whole command's, written once from every run (manyOutputs), so no run
// writes its own.
func (cfg Config) forContract(c monorepo.Contract) Config {
	cfg.Dir = filepath.Join(cfg.Dir, filepath.FromSlash(c.Dir))
	cfg.ContractPath = filepath.FromSlash(c.File)
	cfg.OutputFile, cfg.SummaryFile = "", ""
	return cfg
}

// executeMany runs the selected contracts concurrently in this process,
// at most --parallel at a time, and reports them together: one summary,
// one exit code (the worst, see worstExit), and each contract's own
// report on the forge. Runs share what is safe to share — the evidence
// store, the registry, the forge's clients, the compiled platform rules —
// and each has its own State, Emitter, event log, run directory and
// Terraform workspace. One contract failing, erroring or even panicking
// does not stop or hide the others.
func executeMany(ctx context.Context, cfg Config, env Env) error {
	env = env.serialized()
	if cfg.Select.Idle {
		fmt.Fprintf(env.Stdout, "nova %s: job %d of the fan-out has no contracts: the selection has fewer jobs\n", cfg.Command, cfg.Select.Job)
		return nil
	}
	defer lessFrequentGC()()
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	sel, err := selectContracts(ctx, cfg, reg)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	warnLocalEvidence(cfg, env)
	evidenceCfg, cleanup, err := checkedEvidence(cfg)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	defer cleanup()
	store, keys, err := openEvidenceStore(ctx, evidenceCfg, env)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	defer store.Close()
	destroys := destroyDeleted(ctx, cfg, store, &sel)
	progress := env.Stdout
	if cfg.Output == "json" {
		progress = env.Stderr
	}
	fmt.Fprintf(progress, "nova %s · %s · %d contract(s) selected (%s) · %d at a time\n", cfg.Command, cfg.Dir, len(sel.Contracts), selectionLine(cfg, sel), cfg.Select.Parallel)
	if !cfg.Check {
		drainBefore(ctx, store, env)
	}
	if cfg.Command == "validate" {
		// No stage of validate acts outside the process: its events are
		// acted on at the end, pushed and then reported, so the outbox is
		// synced once there rather than once per event (see
		// evidence.Store.DeferOutboxSync).
		store.DeferOutboxSync()
	}
	rec := recordInto(cfg, store)
	forge, forgeErr := connectForge(ctx, cfg)
	if forgeErr == nil {
		forgeErr = guardEvidence(ctx, cfg, env.Stderr)
	}
	keysVerifier, err := commitVerifier(cfg, forge)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	verifier := &onceVerifier{inner: keysVerifier, known: map[string]runner.CommitSignature{}}
	runs := make([]*contractRun, len(sel.Contracts))
	runRange := func(from int) {
		parallel(len(runs)-from, cfg.Select.Parallel, func(j int) {
			i := from + j
			c := sel.Contracts[i].Contract
			var buf bytes.Buffer
			ccfg := cfg.forContract(c)
			if env, ok := destroys[i]; ok {
				ccfg.Destroy, ccfg.EnvOverride = true, env
			}
			rep := &reporter{cfg: ccfg, progress: &buf, stdout: io.Discard}
			w := wiring{cfg: ccfg, env: env, evidence: rec, keys: keys, forge: forge, setupErr: forgeErr, reg: reg, verifier: verifier}
			runs[i] = runContract(ctx, w, rep)
			// Each contract's lines go out together, as it finishes.
			_, _ = progress.Write(buf.Bytes())
		})
	}
	runRange(0)
	// A destroy that completed goes on down the order in this run, as the
	// per-contract workflows' destroy jobs do: nothing else would run the
	// next environment's (dev's needs no approval to come).
	for from := 0; from < len(runs); {
		next := nextDestroys(ctx, cfg, store, env, &sel, destroys, runs[from:], from)
		if next == 0 {
			break
		}
		from = len(runs)
		runs = append(runs, make([]*contractRun, next)...)
		runRange(from)
	}
	outs := make([]*runner.Outcome, len(runs))
	for i, r := range runs {
		outs[i] = &r.out
	}
	if !cfg.Check {
		drainAfter(ctx, store, env, outs...)
	}
	syncOutbox(store, env, outs...)
	// A job writing its results for the fan-out's summary job posts no
	// comment: the summary job posts one summary for every shard.
	deferred := (cfg.ResultsFile != "" || cfg.Select.Deferred) && !cfg.Check
	summary := (deferred || cfg.SummaryComments || summarize(len(runs))) && forge != nil && forge.thread != nil && !cfg.Check
	if summary {
		// Many statuses to set: one listing of those the commit has
		// already costs less than the writes it saves on a re-run. Not
		// for a shard of a fan-out: its few contracts share the commit
		// with every other shard's, so the listing is pages of theirs.
		if forge.statuses != nil && forge.statusLister != nil && !deferred {
			forge.statuses = &runner.KeptStatuses{Set: forge.statuses, List: forge.statusLister}
		}
		for _, r := range runs {
			r.report.summarized = true
		}
	}
	views := make([]runView, len(runs))
	parallel(len(runs), cfg.Select.Parallel, func(i int) { views[i] = runs[i].finish(ctx) })
	var jobErr error
	switch {
	case deferred && cfg.ResultsFile == "":
		// The summary job reads the statuses (nova summary --statuses).
	case deferred:
		if err := writeResults(cfg, cfg.ResultsFile, views, contractPaths(sel, views), approverGroups(ctx, forge, views)); err != nil {
			// The statuses and check runs stand, but the summary job
			// would have no row for these contracts: the job fails, so
			// that the run says why.
			jobErr = runner.Errorf(runner.FanoutResultsUnwritten, "%v", err)
			fmt.Fprintf(env.Stderr, "nova: %s: %v\n", runner.FanoutResultsUnwritten, err)
		}
	case summary && cfg.Command != "drift":
		publishSummaries(context.WithoutCancel(ctx), cfg, forge, views, contractPaths(sel, views), "", nil, env.Stderr)
	}
	for _, r := range runs {
		r.cleanup(cfg)
	}
	if !cfg.Check {
		reportDeleted(ctx, cfg, forge, sel.Deleted, env.Stderr)
	}
	return manyReport(cfg, env, sel, runs, views, jobErr)
}

// nextDestroys adds to sel and destroys the destroy of the next
// environment of each contract whose destroy in runs (sel's from
// onwards) completed: the most guarded environment the evidence now shows
// running it, which must be less guarded than the one just destroyed (the
// order dr → prod → qa → dev; anything else ends the chain rather than
// loop). Only `nova run` applies, and only where no --env fixes the
// environment. The evidence is pushed first, so the next gate reads the
// completed destroy. It returns how many it added.
func nextDestroys(ctx context.Context, cfg Config, store *evidence.Store, env Env, sel *monorepo.Selection, destroys map[int]runner.Environment, runs []*contractRun, from int) int {
	if cfg.Command != "run" || cfg.Check || cfg.EnvOverride != "" {
		return 0
	}
	var done []int
	for j, r := range runs {
		if _, ok := destroys[from+j]; ok && r.out.Verdict == runner.Pass && slices.ContainsFunc(r.out.Results, func(res runner.Result) bool {
			return res.Stage == "apply" && res.Verdict == runner.Pass
		}) {
			done = append(done, from+j)
		}
	}
	if len(done) == 0 {
		return 0
	}
	if err := store.Drain(context.WithoutCancel(ctx)); err != nil {
		fmt.Fprintf(env.Stderr, "nova: the next environments' destroys wait for the next run: the evidence of these could not be pushed: %v\n", err)
		return 0
	}
	added := 0
	for _, i := range done {
		c, was := sel.Contracts[i], runs[i-from].st
		if was == nil || was.Contract == nil {
			continue
		}
		next := runningIn(ctx, store, c.ID)
		if next == "" || !lessGuarded(next, was.Contract.Environment) {
			continue
		}
		destroys[len(sel.Contracts)] = next
		sel.Contracts = append(sel.Contracts, monorepo.Selected{Contract: c.Contract, Why: []string{"deleted: its destroy, after " + string(was.Contract.Environment) + "'s"}})
		added++
	}
	return added
}

// lessGuarded reports whether a comes before b in the promotion order.
func lessGuarded(a, b runner.Environment) bool {
	return slices.Index(runner.Environments, a) < slices.Index(runner.Environments, b)
}

// runContract runs one contract of many. A panic in it is that contract's
// error, not the end of the others: the process carries on and reports it.
func runContract(ctx context.Context, w wiring, rep *reporter) (r *contractRun) {
	st := &runner.State{Dir: w.cfg.Dir, ContractPath: w.cfg.ContractPath}
	if err := ctx.Err(); err != nil {
		// Interrupted before this contract started: nothing ran, nothing
		// is recorded, and the summary says so.
		return abandoned(st, rep, w, runner.Errorf(runner.RunCancelled, "not started: %w", err))
	}
	defer func() {
		if p := recover(); p != nil {
			r = abandoned(st, rep, w, runner.Errorf(runner.InternalError, "the run of %s panicked: %v", filepath.Join(w.cfg.Dir, w.cfg.ContractPath), p))
		}
	}()
	return w.run(ctx, rep)
}

// abandoned is the outcome of a contract whose run did not complete.
func abandoned(st *runner.State, rep *reporter, w wiring, err error) *contractRun {
	res := runner.Result{Stage: "setup", Verdict: runner.Errored, Summary: err.Error(), Findings: []runner.Finding{{Reason: runner.ReasonOf(err), Message: err.Error()}}}
	rep.stage(res)
	return &contractRun{
		out: runner.Outcome{Results: []runner.Result{res}, Verdict: runner.Errored, Reason: runner.ReasonOf(err)},
		st:  st, rep: rep, report: &forgeReport{cfg: w.cfg, forge: &forgeAdapters{}, warn: w.env.Stderr},
	}
}

// onceVerifier checks each commit's signature once per process: the
// contracts of one repository are all at one commit. A commit's id fixes
// its content, signature included, so one answer serves every contract;
// except "unknown", which means the commit is not in that contract's
// repository, and is asked again.
type onceVerifier struct {
	inner runner.CommitVerifier
	mu    sync.Mutex
	known map[string]runner.CommitSignature
}

var _ runner.CommitVerifier = (*onceVerifier)(nil)

func (v *onceVerifier) VerifyCommit(ctx context.Context, dir, commit string) (runner.CommitSignature, error) {
	v.mu.Lock()
	sig, ok := v.known[commit]
	v.mu.Unlock()
	if ok {
		return sig, nil
	}
	// Two contracts may both verify the commit the first time; either
	// answer is the same, and holding the lock across git reads would
	// serialise every run behind the first.
	sig, err := v.inner.VerifyCommit(ctx, dir, commit)
	if err == nil && sig != runner.CommitUnknown {
		v.mu.Lock()
		v.known[commit] = sig
		v.mu.Unlock()
	}
	return sig, err
}

// parallel calls do(0..n-1) on at most limit goroutines and returns when
// all have returned.
func parallel(n, limit int, do func(i int)) {
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(n, limit) {
		wg.Go(func() {
			for i := range next {
				do(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// serialized returns env with its output streams safe for the concurrent
// runs to share: each write goes out whole.
func (env Env) serialized() Env {
	env.Stdout, env.Stderr = &lockedWriter{w: env.Stdout}, &lockedWriter{w: env.Stderr}
	return env
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// manyGCPercent is the garbage collector's target while many contracts
// run. Their runs allocate tens of times what stays live (validating
// 10 000 contracts: about 75 MB live, gigabytes allocated, mostly
// encodings that live for one event), so the default, a collection each
// time the heap doubles, marked the same live heap some hundred times: a
// sixth of the command's CPU. Collecting at five times the live heap
// instead holds a few hundred MB at most at that size.
const manyGCPercent = 400

// lessFrequentGC sets manyGCPercent unless GOGC says otherwise, and
// returns what puts the previous setting back.
func lessFrequentGC() (restore func()) {
	if _, set := os.LookupEnv("GOGC"); set {
		return func() {}
	}
	old := debug.SetGCPercent(manyGCPercent)
	return func() { debug.SetGCPercent(old) }
}
