package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/apply"
)

// Check mode (--check) is one mechanism for every mutating command: the
// command runs as it would, against the real evidence, state and approver
// config, up to the point where it would change something, and says what
// it would do and what the gate would decide there. Its events go to a
// runner.CheckEvidence, which keeps them in memory in front of the real
// evidence, so every stage reads what the real run would have read;
// nothing is delivered, drained or flushed, terraform only plans, the
// forge is not written to, and a lock is neither taken nor released. The
// exit code is the one the real command would end with.

// checkCommands have --check.
var checkCommands = []string{"apply", "run", "approve", "reject", "resolve", "unlock", "rollback", "break-glass"}

// evidenceStore is the evidence a command's runs read and record into:
// the store, or in check mode an overlay of it.
type evidenceStore interface {
	runner.Recorder
	runner.EvidenceReader
}

// recordInto is where cfg's command records: the store itself, or, with
// --check, an overlay that records nothing.
func recordInto(cfg Config, store *evidence.Store) evidenceStore {
	if cfg.Check {
		return &runner.CheckEvidence{Real: store}
	}
	return store
}

// checkedEvidence is the evidence configuration a command opens. Local
// mode creates its repo and keys on first use; a check before that first
// use works on an empty repo and keys of its own instead, in a temporary
// directory that the returned function removes, so it leaves no repo
// behind and decides as the real command would on no evidence.
func checkedEvidence(cfg Config) (EvidenceConfig, func(), error) {
	s := cfg.Evidence
	if cfg.MergeQueue && !s.Local && s.Keys.SigningKeyPEM == "" && s.Keys.SigningKeyFile == "" {
		// A merge queue's job holds no key (its workflow is the queue
		// branch's): it reads the evidence with the public keys
		// (NOVA_EVIDENCE_PUBLIC_KEY, NOVA_COMMIT_PUBLIC_KEY) and signs
		// nothing, so keys of its own, made for the run, stand in.
		tmp, err := os.MkdirTemp("", "nova-queue-keys-")
		if err != nil {
			return s, func() {}, runner.Errorf(runner.EvidenceKeyInvalid, "making the merge queue check's stand-in keys: %w", err)
		}
		s.Keys.LocalDir = tmp
		return s, func() { _ = os.RemoveAll(tmp) }, nil
	}
	if !cfg.Check || !s.Local {
		return s, func() {}, nil
	}
	if _, err := os.Stat(s.Repo); err == nil {
		return s, func() {}, nil
	}
	tmp, err := os.MkdirTemp("", "nova-check-evidence-")
	if err != nil {
		return s, func() {}, runner.Errorf(runner.EvidenceRepoUnavailable, "making a stand-in for the evidence repo %s, which does not exist yet: %w", s.Repo, err)
	}
	s.Repo = filepath.Join(tmp, "evidence.git")
	s.Paths = evidence.LocalPaths{ConfigDir: filepath.Join(tmp, "config"), Repo: s.Repo, StateBase: filepath.Join(tmp, "state")}
	s.Keys.LocalDir = s.Paths.ConfigDir
	return s, func() { _ = os.RemoveAll(tmp) }, nil
}

// openEvidenceToDecide opens the evidence a command that decides on it
// (approve, reject, resolve, unlock) reads: as it is after delivering the
// outbox, so the decision is about what everyone will see. In check mode
// the outbox is read, not delivered: its events are part of the chain the
// store answers with, and delivering them would change the repo.
func openEvidenceToDecide(ctx context.Context, cfg Config, env Env) (*evidence.Store, func(), error) {
	if !cfg.Check {
		store, err := openCurrentEvidence(ctx, cfg, env)
		if err != nil {
			return nil, nil, err
		}
		return store, func() { _ = store.Close() }, nil
	}
	s, cleanup, err := checkedEvidence(cfg)
	if err != nil {
		return nil, nil, err
	}
	store, _, err := openEvidenceStore(ctx, s, env)
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	done := func() {
		_ = store.Close()
		cleanup()
	}
	if err := store.Sync(ctx); err != nil {
		done()
		return nil, nil, err
	}
	return store, done, nil
}

// runDir is where a run keeps its bundle, logs and local event log: under
// the checkout's runs directory, or for a check a temporary one that
// cleanup removes, so a later `nova apply` never takes a check's bundle
// for the newest plan.
func (w wiring) runDir(runID string) string {
	if w.cfg.Check {
		return filepath.Join(os.TempDir(), "nova-check-"+runID)
	}
	return filepath.Join(firstNonEmpty(w.runsDir, local.RunsDir(w.cfg.Dir)), runID)
}

// cleanup removes what a check left on disk.
func (r *contractRun) cleanup(cfg Config) {
	if cfg.Check && r.st != nil && r.st.RunDir != "" {
		_ = os.RemoveAll(r.st.RunDir)
	}
}

// applyStage is the stage that applies the authorized plan, or in check
// mode the one that says what it would apply.
func (w wiring) applyStage(engine runner.Engine) runner.Stage {
	if w.cfg.Check {
		return checkApply{}
	}
	return apply.New(engine)
}

// checkApply stands where apply would: the gate authorized the plan, and
// a check stops there.
type checkApply struct{}

func (checkApply) Name() string { return "check" }

func (checkApply) Run(_ context.Context, st *runner.State) (runner.Result, error) {
	if st.Plan == nil || st.Authorization == nil || st.Contract == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "check reached without an authorized plan")
	}
	c := st.Plan.Changes
	what := fmt.Sprintf("+%d ~%d -%d ±%d", c.Add, c.Change, c.Destroy, c.Replace)
	if !st.Plan.HasChanges {
		what = "which changes nothing"
	}
	return runner.Result{Verdict: runner.Pass, Summary: fmt.Sprintf("would apply plan %s in %s (%s), authorized by %s; check mode: nothing applied or recorded",
		runner.ShortDigest(st.Plan.Digest), st.Contract.Environment, what, st.Authorization.Approver)}, nil
}

// checkNote is the line a check adds to a command's report.
func checkNote(cfg Config, would int) string {
	if !cfg.Check {
		return ""
	}
	return fmt.Sprintf("check mode: nothing was changed or recorded (%d event(s) would have been)", would)
}

// wouldRecord counts the events a check kept for contractID.
func wouldRecord(rec evidenceStore, contractID string) int {
	if c, ok := rec.(*runner.CheckEvidence); ok {
		return len(c.Would(contractID))
	}
	return 0
}

// gateWouldSay is what the gate would decide about the plan with digest
// once a checked decision is recorded: the gate's own rules, run on the
// check's evidence, which holds the decision. It is a sentence for the
// check's report; it authorizes nothing (no attestation is signed, no
// event recorded).
func gateWouldSay(ctx context.Context, rec evidenceStore, forge *forgeAdapters, contract *runner.Contract, events []runner.Event, digest string) string {
	st := &runner.State{Contract: contract, Plan: &runner.Plan{Digest: digest}}
	for _, e := range events {
		var p runner.PlanRecord
		if e.Type == runner.EventPlanCreated && e.Environment == string(contract.Environment) && runner.DecodeEventData(e, &p) == nil && p.Digest == digest {
			st.Change, st.PullRequest = &runner.ChangeRecord{ID: p.Change}, p.PullRequest
		}
	}
	res, err := runner.Gate{Evidence: rec, Approvers: forge.approvers, Membership: forge.membership}.Run(ctx, st)
	switch {
	case err != nil:
		return fmt.Sprintf("the gate could not decide: %s: %v", runner.ReasonOf(err), err)
	case res.Verdict == runner.Pass:
		return "the gate would then authorize it: " + res.Summary
	case len(res.Findings) > 0:
		return fmt.Sprintf("the gate would then say %s: %s", res.Verdict, res.Findings[0].Reason)
	}
	return fmt.Sprintf("the gate would then say %s: %s", res.Verdict, res.Summary)
}
