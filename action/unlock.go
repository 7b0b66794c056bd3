package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/schema"
)

// UnlockFlags are `nova unlock`'s flags.
type UnlockFlags struct {
	// Contract is the contract's id; empty means the contract in --dir.
	Contract string
	Env      runner.Environment
	Reason   string
}

// unlockFlags registers `nova unlock`'s flags; --evidence-repo is the
// evidence commands' own.
func (cfg *Config) unlockFlags(fs *flag.FlagSet, f *rawFlags) {
	fs.StringVar(&cfg.Dir, "dir", ".", "the checkout whose contract (.nova/contract.yml) is meant when --contract is not given")
	fs.StringVar(&cfg.Unlock.Contract, "contract", "", "contract id (default: the id of --dir's .nova/contract.yml)")
	fs.StringVar(&f.env, "env", "", "the environment to release (dev)")
	fs.StringVar(&cfg.Unlock.Reason, "reason", "", "why the pull request's hold is released (required)")
	fs.StringVar(&f.branch, "branch", "", "evidence branch (default: $NOVA_EVIDENCE_BRANCH or main)")
	fs.StringVar(&cfg.Actor, "as", "", "who releases (default: $GITHUB_ACTOR or $USER)")
}

// checkUnlock refuses what cannot be released: an environment no pull
// request holds by rule, or a release nobody explains.
func (cfg *Config) checkUnlock() error {
	u := &cfg.Unlock
	u.Env = cfg.EnvOverride
	u.Reason = strings.TrimSpace(u.Reason)
	switch {
	case u.Env == "":
		return runner.Errorf(runner.ConfigInvalid, "--env is required: the environment a pull request holds (dev)")
	case !u.Env.LockedPerPullRequest():
		return runner.Errorf(runner.ConfigInvalid, "--env %s: pull requests do not hold %s; only dev is locked per pull request", u.Env, u.Env)
	case u.Reason == "":
		return runner.Errorf(runner.ConfigInvalid, "--reason is required: say why the pull request's hold is released")
	}
	var err error
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "--dir: %w", err)
	}
	return nil
}

// unlockCommand runs `nova unlock`: it records nova.lock.released for the
// hold the evidence names now, with who released it and why, so the next
// pull request to apply takes the environment. The forge is not asked:
// the operator releases a hold whatever state its pull request is in (an
// abandoned one left open, typically). What holds is read from the
// evidence repo as it is after delivering the outbox, and the release is
// in the repo before the command says it is done.
func unlockCommand(ctx context.Context, cfg Config, env Env) error {
	u := cfg.Unlock
	id, err := unlockContract(cfg)
	if err != nil {
		return failed(env, cfg, err)
	}
	store, done, err := openEvidenceToDecide(ctx, cfg, env)
	if err != nil {
		return failed(env, cfg, err)
	}
	defer done()
	sum, err := runner.ReadGateSummary(ctx, store, id)
	if err != nil {
		return failed(env, cfg, err)
	}
	hold := sum.Env(u.Env).Hold
	if hold == nil {
		return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "no pull request holds %s of contract %s: nothing to release", u.Env, id))
	}
	rec := recordInto(cfg, store)
	em := runner.NewEmitter(rec, cfg.Source, local.NewRunID(time.Now()), nil)
	e, err := em.Emit(ctx, runner.EventLockReleased, id, u.Env, runner.LockRelease{
		Environment: u.Env, PullRequest: hold.PullRequest, Hold: hold.Event, Reason: u.Reason, ReleasedBy: cfg.Actor,
	})
	if err != nil {
		return failed(env, cfg, err)
	}
	if cfg.Check {
		fmt.Fprintf(env.Stdout, "would record %s: %s of contract %s, held by pull request #%d since %s, would be released by %s\n  %s\n",
			runner.EventLockReleased, u.Env, id, hold.PullRequest, hold.Event, cfg.Actor, checkNote(cfg, wouldRecord(rec, id)))
		return nil
	}
	if err := store.Drain(ctx); err != nil {
		return failed(env, cfg, err)
	}
	fmt.Fprintf(env.Stdout, "recorded %s %s: %s of contract %s, held by pull request #%d since %s, is released by %s\n",
		runner.EventLockReleased, e.ID, u.Env, id, hold.PullRequest, hold.Event, cfg.Actor)
	return nil
}

// unlockContract is --contract, else the id of the contract in --dir.
func unlockContract(cfg Config) (string, error) {
	if id := cfg.Unlock.Contract; id != "" {
		return id, nil
	}
	path := schema.DefaultContractPath
	data, err := checkout.ReadFile(cfg.Dir, path, schema.MaxContractBytes)
	if err != nil {
		return "", runner.Errorf(runner.ReasonOf(err), "no --contract, and reading %s in %s: %w", path, cfg.Dir, err)
	}
	contract, findings := schema.Parse(data, path, "")
	if len(findings) > 0 || contract == nil || contract.ID == "" {
		return "", runner.Errorf(runner.ConfigInvalid, "no --contract, and %s in %s does not validate (run `nova validate`); name the contract with --contract", path, cfg.Dir)
	}
	return contract.ID, nil
}
