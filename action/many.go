package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"sync"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
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
}

// Many reports whether the command runs the contracts a selection finds.
func (s SelectFlags) Many() bool { return s.All || s.Changed }

// check refuses selections that cannot mean anything.
func (s SelectFlags) check(command string) error {
	switch {
	case s.All && s.Changed:
		return runner.Errorf(runner.ConfigInvalid, "--all and --changed exclude each other")
	case command == "matrix" && !s.Many():
		return runner.Errorf(runner.ConfigInvalid, "nova matrix needs --all or --changed")
	case s.Many() && s.Parallel < 1:
		return runner.Errorf(runner.ConfigInvalid, "--parallel %d: want at least 1", s.Parallel)
	}
	return nil
}

// name is how the selection is shown.
func (s SelectFlags) name() string {
	if s.Changed {
		return "changed"
	}
	return "all"
}

// selectContracts finds the contracts under --dir and keeps those the
// selection asks for.
func selectContracts(ctx context.Context, cfg Config, reg *registry.Registry) (monorepo.Selection, error) {
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
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	sel, err := selectContracts(ctx, cfg, reg)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	store, keys, err := openEvidenceStore(ctx, cfg.Evidence, env)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	defer store.Close()
	progress := env.Stdout
	if cfg.Output == "json" {
		progress = env.Stderr
	}
	fmt.Fprintf(progress, "nova %s · %s · %d contract(s) selected (%s) · %d at a time\n", cfg.Command, cfg.Dir, len(sel.Contracts), selectionLine(cfg, sel), cfg.Select.Parallel)
	keysVerifier, err := commitVerifier(cfg)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	verifier := &onceVerifier{inner: keysVerifier, known: map[string]runner.CommitSignature{}}
	drainBefore(ctx, store, env)
	forge, forgeErr := connectForge(ctx, cfg)
	runs := make([]*contractRun, len(sel.Contracts))
	parallel(len(runs), cfg.Select.Parallel, func(i int) {
		c := sel.Contracts[i].Contract
		var buf bytes.Buffer
		ccfg := cfg.forContract(c)
		rep := &reporter{cfg: ccfg, progress: &buf, stdout: io.Discard}
		w := wiring{cfg: ccfg, env: env, evidence: store, keys: keys, forge: forge, setupErr: forgeErr, reg: reg, verifier: verifier}
		runs[i] = runContract(ctx, w, rep)
		// Each contract's lines go out together, as it finishes.
		_, _ = progress.Write(buf.Bytes())
	})
	outs := make([]*runner.Outcome, len(runs))
	for i, r := range runs {
		outs[i] = &r.out
	}
	drainAfter(ctx, store, env, outs...)
	views := make([]runView, len(runs))
	parallel(len(runs), cfg.Select.Parallel, func(i int) { views[i] = runs[i].finish(ctx) })
	reportDeleted(ctx, cfg, forge, sel.Deleted, env.Stderr)
	return manyReport(cfg, env, sel, runs, views)
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

// manyAbort reports an error that stopped the command before any contract
// ran. A reason that is a verdict on the repository (two contracts with
// one id) exits as a failed verdict; anything else as "could not decide".
func manyAbort(cfg Config, env Env, err error) error {
	reason := runner.ReasonOf(err)
	out := err
	if info, ok := runner.Lookup(reason); ok && info.Kind == runner.KindVerdict {
		out = verdict(runner.Fail, reason)
	}
	if cfg.Output == "json" && cfg.Command != "matrix" {
		writeJSON(env.Stdout, manyView{
			Command: cfg.Command, Selection: cfg.Select.name(), Verdict: string(verdictOf(exitCode(out))), ExitCode: exitCode(out),
			Reason: string(reason), Message: err.Error(), Contracts: []contractView{},
		})
	}
	fmt.Fprintf(env.Stderr, "nova %s: %s: %v\n", cfg.displayName(), reason, err)
	return out
}

// selectionLine says what was selected from.
func selectionLine(cfg Config, sel monorepo.Selection) string {
	if !cfg.Select.Changed {
		return "all"
	}
	return fmt.Sprintf("changed %s..%s", shortHash(sel.Base), shortHash(sel.Head))
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// manyView is the JSON document of a run over many contracts.
type manyView struct {
	Command   string `json:"command"`
	Selection string `json:"selection"`
	Base      string `json:"base,omitempty"`
	Head      string `json:"head,omitempty"`
	Verdict   string `json:"verdict"`
	ExitCode  int    `json:"exitCode"`
	// Reason is the reason of the first contract (by path) whose exit code
	// is the command's.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Counts are the contracts by verdict.
	Counts    map[string]int `json:"counts,omitempty"`
	Contracts []contractView `json:"contracts"`
	Deleted   []deletedView  `json:"deleted,omitempty"`
}

// contractView is one contract's run: where it is, why it was selected,
// and its run as `nova <command> --output json` reports it alone.
type contractView struct {
	Dir      string   `json:"dir"`
	Contract string   `json:"contract"`
	Why      []string `json:"why,omitempty"`
	runView
}

// deletedView is a contract the change deleted.
type deletedView struct {
	Dir         string `json:"dir"`
	Contract    string `json:"contract"`
	ID          string `json:"id"`
	Environment string `json:"environment,omitempty"`
	Reason      string `json:"reason"`
	Message     string `json:"message"`
}

func deletedViews(deleted []monorepo.Contract) []deletedView {
	out := make([]deletedView, 0, len(deleted))
	for _, d := range deleted {
		out = append(out, deletedView{Dir: d.Dir, Contract: d.File, ID: d.ID, Environment: d.Environment,
			Reason: string(runner.ContractDeleted), Message: deletedMessage(d)})
	}
	return out
}

func deletedMessage(d monorepo.Contract) string {
	who := "a contract"
	if d.ID != "" {
		who = "contract " + d.ID
		if d.Environment != "" {
			who += " (" + d.Environment + ")"
		}
	}
	return fmt.Sprintf("%s: %s is no longer declared at the head; Nova destroys nothing for it — what it deployed, and its state, stay until someone removes them", d.Path(), who)
}

// manyReport prints the summary of every run and returns the worst
// outcome for the exit code.
func manyReport(cfg Config, env Env, sel monorepo.Selection, runs []*contractRun, views []runView) error {
	mv := manyView{
		Command: cfg.Command, Selection: cfg.Select.name(), Base: sel.Base, Head: sel.Head,
		Counts: map[string]int{}, Contracts: make([]contractView, 0, len(runs)), Deleted: deletedViews(sel.Deleted),
	}
	codes := make([]int, len(views))
	for i, v := range views {
		codes[i] = v.ExitCode
		mv.Counts[v.Verdict]++
		c := sel.Contracts[i]
		mv.Contracts = append(mv.Contracts, contractView{Dir: c.Dir, Contract: c.File, Why: c.Why, runView: v})
	}
	mv.ExitCode = worstExit(codes...)
	mv.Verdict = string(verdictOf(mv.ExitCode))
	for _, v := range views {
		if v.ExitCode == mv.ExitCode && v.Reason != "" {
			mv.Reason = v.Reason
			break
		}
	}
	manyOutputs(cfg, env, mv, runs)
	if cfg.Output == "json" {
		writeJSON(env.Stdout, mv)
	} else {
		manyText(env.Stdout, cfg, mv)
	}
	return verdict(verdictOf(mv.ExitCode), runner.Reason(mv.Reason))
}

// manyText is the summary for people: a line per contract, then the
// deleted ones, then the one result.
func manyText(w io.Writer, cfg Config, mv manyView) {
	fmt.Fprintf(w, "\nsummary: %d contract(s)", len(mv.Contracts))
	for _, v := range []runner.Verdict{runner.Pass, runner.Fail, runner.Errored, runner.AwaitingApproval} {
		if n := mv.Counts[string(v)]; n > 0 {
			fmt.Fprintf(w, " · %d %s", n, v)
		}
	}
	fmt.Fprintln(w)
	for _, c := range mv.Contracts {
		detail := c.Reason
		if c.PlanDigest != "" {
			detail = "plan " + shortHash(c.PlanDigest) + " " + detail
		}
		fmt.Fprintf(w, "  %-17s exit %d  %-40s %-36s %-4s %s\n", c.Verdict, c.ExitCode, path.Join(c.Dir, c.Contract), c.ContractID, c.Environment, detail)
	}
	if len(mv.Contracts) == 0 {
		fmt.Fprintln(w, "  no contract selected")
	}
	if len(mv.Deleted) > 0 {
		fmt.Fprintln(w, "deleted (reported only; nothing is destroyed):")
		for _, d := range mv.Deleted {
			fmt.Fprintf(w, "  %s %s\n", d.Reason, d.Message)
		}
	}
	fmt.Fprintf(w, "%s (exit %d)\n", verdictLine(runner.Verdict(mv.Verdict)), mv.ExitCode)
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
