package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/schema"
)

// RollbackFlags are `nova rollback`'s own flags.
type RollbackFlags struct {
	// To is the change to return to: its id or a prefix of it.
	To string
}

// checkRollback refuses a rollback that names no environment or change.
func (cfg *Config) checkRollback() error {
	switch {
	case cfg.EnvOverride == "":
		return runner.Errorf(runner.ConfigInvalid, "--env is required: the environment to roll back")
	case strings.TrimSpace(cfg.Rollback.To) == "":
		return runner.Errorf(runner.ConfigInvalid, "--to is required: the change to return to (its id, or its first hex digits)")
	}
	return nil
}

// executeRollback runs `nova rollback --env E --to C`: it finds change C
// among those E applied, reads the contract as it was at a commit C was
// planned from, and runs that like `nova run` does — plan, gate, apply —
// with the rollback on record (nova.rollback.requested, and the
// authorization's rollback field). Run again after the approval, it plans
// again and applies the approved plan, as `nova run` does.
func executeRollback(ctx context.Context, w wiring, rep *reporter, store *evidence.Store) error {
	cfg, env := w.cfg, w.env
	id, err := headContractID(cfg)
	if err != nil {
		return rep.abort(err)
	}
	contract := &runner.Contract{ID: id, Environment: cfg.EnvOverride}
	events, err := w.evidence.Chain(ctx, contract.ID)
	if err != nil {
		return rep.abort(err)
	}
	rec, err := runner.FindRollbackTarget(events, contract.Environment, cfg.Rollback.To)
	var src string
	cleanup := func() {}
	if err == nil {
		rec.RequestedBy = cfg.Actor
		src, cleanup, err = checkoutCommit(cfg.Dir, rec.Commit)
	}
	defer cleanup()
	if err != nil {
		return refuseRollback(ctx, w, rep, store, contract, err)
	}
	at := w
	at.cfg.Dir, at.cfg.Commit = src, rec.Commit
	at.runsDir = local.RunsDir(cfg.Dir)
	at.rollback = &rec
	// The commit is verified where its history is: the copy has none.
	verifier, err := commitVerifier(cfg, w.forge)
	if err != nil {
		return rep.abort(err)
	}
	at.verifier = historyVerifier{inner: verifier, dir: cfg.Dir}
	rep.source = fmt.Sprintf("%s at commit %s", rep.rel(filepath.Join(cfg.Dir, cfg.ContractPath)), rec.Commit)
	r := at.run(ctx, rep)
	defer r.cleanup(cfg)
	if !cfg.Check {
		drainAfter(ctx, store, env, &r.out)
	}
	r.finish(ctx)
	return verdict(r.out.Verdict, r.out.Reason)
}

// headContractID is the id of the contract in --dir, whose evidence names
// the changes it can return to. A contract that no longer validates is
// what a rollback is for: its id is read all the same, and the run
// validates the target's own contract.
func headContractID(cfg Config) (string, error) {
	data, err := checkout.ReadFile(cfg.Dir, cfg.ContractPath, schema.MaxContractBytes)
	if err != nil {
		return "", runner.Errorf(runner.ReasonOf(err), "reading the contract: %w", err)
	}
	if contract, findings := schema.Parse(data, cfg.ContractPath, cfg.EnvOverride); len(findings) == 0 && contract != nil {
		return contract.ID, nil
	}
	var named struct {
		ID string `yaml:"id"`
	}
	if err := yaml.Unmarshal(data, &named); err != nil || strings.TrimSpace(named.ID) == "" {
		return "", runner.Errorf(runner.ContractSchemaViolation, "%s names no contract id to roll back (run `nova validate`)", cfg.ContractPath)
	}
	return named.ID, nil
}

// refuseRollback records and reports a rollback refused before anything
// was planned, as any run's failure is.
func refuseRollback(ctx context.Context, w wiring, rep *reporter, store *evidence.Store, contract *runner.Contract, cause error) error {
	st := &runner.State{RunID: local.NewRunID(time.Now()), Dir: w.cfg.Dir, ContractPath: w.cfg.ContractPath, Contract: contract, Commit: w.cfg.Commit}
	p := runner.Pipeline{Stages: []runner.Stage{refusal{cause}}, Events: runner.NewEmitter(w.evidence, w.cfg.Source, st.RunID, nil), OnResult: rep.stage}
	rep.start(st)
	out := p.Run(ctx, st)
	if !w.cfg.Check {
		drainAfter(ctx, store, w.env, &out)
	} else {
		rep.note = checkNote(w.cfg, wouldRecord(w.evidence, contract.ID))
	}
	rep.finish(out, st, "")
	return verdict(out.Verdict, out.Reason)
}

// refusal is a rollback's only stage when it is refused: a verdict for a
// refusal about the change (never applied there), an error for a request
// that could not be understood.
type refusal struct{ err error }

func (refusal) Name() string { return "rollback" }

func (r refusal) Run(context.Context, *runner.State) (runner.Result, error) {
	reason := runner.ReasonOf(r.err)
	if info, ok := runner.Lookup(reason); !ok || info.Kind != runner.KindVerdict {
		return runner.Result{}, r.err
	}
	return runner.Result{Verdict: runner.Fail, Summary: r.err.Error(), Findings: []runner.Finding{{Reason: reason, Message: r.err.Error()}}}, nil
}

// rollbackStage is the stage that checks a rollback plans its target.
func (w wiring) rollbackStage() []runner.Stage {
	if w.rollback == nil {
		return nil
	}
	return []runner.Stage{&runner.RollbackCheck{Record: *w.rollback}}
}

// changeReader names who may not approve the run's change: its authors,
// and for a rollback who asked for it.
func (w wiring) changeReader() runner.ChangeReader {
	if w.rollback == nil {
		return w.forge.change
	}
	return withRequester{inner: w.forge.change, requester: w.rollback.RequestedBy}
}

// withRequester names a rollback's requester beside the change's authors.
type withRequester struct {
	inner     runner.ChangeReader
	requester string
}

func (r withRequester) Change(ctx context.Context) (runner.Change, error) {
	var ch runner.Change
	if r.inner != nil {
		var err error
		if ch, err = r.inner.Change(ctx); err != nil {
			return ch, err
		}
	}
	ch.Requester = runner.LoginOf(r.requester)
	return ch, nil
}

// historyVerifier verifies commits in the checkout that has their
// history, wherever the run's copy is.
type historyVerifier struct {
	inner runner.CommitVerifier
	dir   string
}

func (v historyVerifier) VerifyCommit(ctx context.Context, _, commit string) (runner.CommitSignature, error) {
	return v.inner.VerifyCommit(ctx, v.dir, commit)
}

// checkoutCommit writes dir's part of the repository as it was at commit
// into a temporary directory, and returns the copy of dir and what
// removes it. Only dir's subtree is written: a run reads nothing outside
// its checkout. The repository is only read, with go-git, so the
// consumer's checkout, its index and HEAD stay as they are.
func checkoutCommit(dir, commit string) (string, func(), error) {
	nothing := func() {}
	missing := func(format string, a ...any) (string, func(), error) {
		return "", nothing, runner.Errorf(runner.RollbackSourceMissing, format, a...)
	}
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return missing("%s is not a git checkout, so commit %s cannot be read: %v", dir, commit, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return missing("reading the worktree of %s: %v", dir, err)
	}
	// Through symbolic links on both sides (a temporary directory often
	// is one), or the path between them would climb out and back.
	root, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err == nil {
		dir, err = filepath.EvalSymlinks(dir)
	}
	var rel string
	if err == nil {
		rel, err = filepath.Rel(root, dir)
	}
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return missing("placing %s in its repository %s: %v", dir, wt.Filesystem.Root(), err)
	}
	if !plumbing.IsHash(commit) {
		return missing("%q is not a commit id", commit)
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return missing("commit %s is not in the checkout of %s: fetch the full history (actions/checkout with fetch-depth: 0)", commit, dir)
	}
	if err != nil {
		return missing("reading commit %s: %v", commit, err)
	}
	tree, err := c.Tree()
	if err != nil {
		return missing("reading the tree of commit %s: %v", commit, err)
	}
	if rel = filepath.ToSlash(rel); rel != "." {
		if tree, err = tree.Tree(rel); err != nil {
			return missing("%s is not a directory at commit %s: %v", rel, commit, err)
		}
	}
	tmp, err := os.MkdirTemp("", "nova-rollback-")
	if err != nil {
		return "", nothing, runner.Errorf(runner.InternalError, "making a directory for commit %s: %w", commit, err)
	}
	remove := func() { _ = os.RemoveAll(tmp) }
	if err := writeTree(tree, tmp); err != nil {
		remove()
		return "", nothing, runner.Errorf(runner.InternalError, "writing commit %s of %s: %w", commit, dir, err)
	}
	return tmp, remove, nil
}

// writeTree writes the files of tree under root: regular and executable
// files, and symbolic links as links (the run's reads refuse one that
// leads outside, as in any checkout). Submodules are not part of it.
func writeTree(tree *object.Tree, root string) error {
	return tree.Files().ForEach(func(f *object.File) error {
		if !filepath.IsLocal(filepath.FromSlash(f.Name)) {
			return fmt.Errorf("path %q leaves the tree", f.Name)
		}
		dst := filepath.Join(root, filepath.FromSlash(f.Name))
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if f.Mode == filemode.Symlink {
			target, err := f.Contents()
			if err != nil {
				return err
			}
			return os.Symlink(target, dst)
		}
		perm := os.FileMode(0o644)
		if f.Mode == filemode.Executable {
			perm = 0o755
		}
		r, err := f.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
		if err != nil {
			return err
		}
		if _, err := io.Copy(out, r); err != nil {
			_ = out.Close()
			return err
		}
		return out.Close()
	})
}
