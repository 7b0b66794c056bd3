package main

import (
	"cmp"
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/stages/apply"
	"github.com/nova-platform/nova/stages/plan"
	"github.com/nova-platform/nova/stages/schema"
)

// destroyStages are the stages of `nova plan --destroy` and `nova run
// --destroy`: the contract validated (it says what to render and which
// state to destroy), what the environment runs read from the evidence,
// the destroy planned, and for run the gate and the apply. Policy, NFRs
// and confidence judge what a change would deploy; a destroy deploys
// nothing, so its approvers judge it. `nova apply` of a destroy bundle
// needs nothing of its own: the bundle says it is a destroy.
func (w wiring) destroyStages(ctx context.Context, reg *registry.Registry) ([]runner.Stage, error) {
	// A broken approver config stops the destroy before it plans, as it
	// stops a change's run.
	if _, err := w.approversCheck().Check(ctx); err != nil {
		return nil, err
	}
	engine, err := w.terraformEngine(reg)
	if err != nil {
		return nil, err
	}
	planned := slices.Concat([]runner.Stage{schema.New(reg), w.change(reg, engine)}, w.lock(), []runner.Stage{plan.New(engine)})
	if w.cfg.Command == "plan" {
		return planned, nil
	}
	return slices.Concat(planned, w.gate(), []runner.Stage{apply.New(engine)}), nil
}

// deletedContract is the contract as the trusted base holds it, when the
// checkout no longer has it and the command may destroy: `plan|run
// --destroy`, and `apply` (whose bundle must then be a destroy). nil when
// the checkout has it, or the base has none either; the schema stage then
// reads the checkout and says what is wrong.
func (w wiring) deletedContract(ctx context.Context) []byte {
	cfg := w.cfg
	if !cfg.Destroy && cfg.Command != "apply" {
		return nil
	}
	path := cmp.Or(cfg.ContractPath, schema.DefaultContractPath)
	if _, err := os.Lstat(filepath.Join(cfg.Dir, path)); !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	data, err := baseContract(ctx, cfg, w.forge)
	if err != nil {
		return nil
	}
	return data
}

// baseContract reads cfg's contract from the trusted base: through the
// forge, as the approver config is read, when nova runs in one (a job's
// checkout may not hold the base at all); else from the checkout's git
// history.
func baseContract(ctx context.Context, cfg Config, forge *forgeAdapters) ([]byte, error) {
	path := cmp.Or(cfg.ContractPath, schema.DefaultContractPath)
	if forge == nil || forge.trusted == nil {
		return local.TrustedContract{Dir: cfg.Dir, Base: cfg.Base, Path: path, Limit: schema.MaxContractBytes}.Read(ctx)
	}
	repoPath, err := local.RepoPath(cfg.Dir, path)
	if err != nil {
		return nil, runner.Errorf(runner.ContractNotFound, "naming %s in the repository: %w", path, err)
	}
	data, where, err := forge.trusted.TrustedFile(ctx, repoPath)
	if err != nil {
		return nil, runner.Errorf(runner.ContractNotFound, "reading %s from the trusted base: %w", repoPath, err)
	}
	if len(data) > schema.MaxContractBytes {
		return nil, runner.Errorf(runner.ContractTooLarge, "%s at %s is larger than %d bytes", repoPath, where, schema.MaxContractBytes)
	}
	return data, nil
}

// destroyDeleted turns the contracts a change deleted into runs of their
// destroy, for `nova plan|run --changed`: they join sel.Contracts, and
// leave sel.Deleted, which lists what nothing acts on. Each destroys the
// environment --env names, else the most guarded one the evidence shows
// running it — the next the order dr → prod → qa → dev allows — else its
// declared one, where the destroy finds nothing applied and says so. It
// returns the environment of each such run, by its index in
// sel.Contracts.
func destroyDeleted(ctx context.Context, cfg Config, ev runner.EvidenceReader, sel *monorepo.Selection) map[int]runner.Environment {
	if cfg.Command != "plan" && cfg.Command != "run" {
		return nil
	}
	out := map[int]runner.Environment{}
	var kept []monorepo.Contract
	for _, d := range sel.Deleted {
		if d.ID == "" {
			kept = append(kept, d)
			continue
		}
		env := cfg.EnvOverride
		if env == "" {
			env = runningIn(ctx, ev, d.ID)
		}
		out[len(sel.Contracts)] = env
		sel.Contracts = append(sel.Contracts, monorepo.Selected{Contract: d, Why: []string{"deleted: its destroy"}})
	}
	sel.Deleted = kept
	return out
}

// runningIn is the most guarded environment the evidence shows running
// contract id (or with an apply of unknown outcome, which the gate then
// names), or "" when none does or the evidence cannot tell: the run then
// keeps the contract's declared environment.
func runningIn(ctx context.Context, ev runner.EvidenceReader, id string) runner.Environment {
	sum, err := runner.ReadGateSummary(ctx, ev, id)
	if err != nil {
		return ""
	}
	for _, env := range slices.Backward(runner.Environments) {
		if es := sum.Env(env); es.LastApplied != nil || es.Open != nil {
			return env
		}
	}
	return ""
}
