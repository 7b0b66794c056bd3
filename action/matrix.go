package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path"
	"path/filepath"

	"github.com/sethvargo/go-githubactions"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/templates"
)

// matrixEntry is one job of a workflow's strategy.matrix. Every entry
// carries Shard, the contracts the job runs: `nova <command> --dir .
// --shard <shard>`. When the selection fits in --max-jobs each entry is one
// contract, described as well by Dir, Contract, ID, Environment and
// Operation for workflows that run `nova <command> --dir <dir> --contract
// <contract>`; past it an entry is a shard of several contracts, and only
// Name, Shard, Contracts and Weight are set.
type matrixEntry struct {
	// Name is the job's name: the contract, or which shard.
	Name string `json:"name"`
	// Dir is the contract's directory relative to where nova matrix ran
	// (the checkout's top, in a workflow), so the fanned-out job can pass
	// it as --dir unchanged.
	Dir         string `json:"dir,omitempty"`
	Contract    string `json:"contract,omitempty"`
	ID          string `json:"id,omitempty"`
	Environment string `json:"environment,omitempty"`
	// Operation is "destroy" for a contract the change deleted: the job
	// plans (or runs) its destroy through the gate, from the trusted
	// base's copy of the contract (the action's input operation).
	Operation string `json:"operation,omitempty"`
	// Shard is the JSON list of the contracts the job runs, for --shard
	// (the action's input shard), paths relative to where nova matrix ran.
	Shard string `json:"shard"`
	// Contracts and Weight are how many contracts a shard holds and the
	// modules they resolve to, when entries are shards.
	Contracts int `json:"contracts,omitempty"`
	Weight    int `json:"weight,omitempty"`
	// Summary says the change is reported in one summary comment per
	// environment, posted by the fan-out's summary job: the job writes its
	// results (--results) and posts no comment. True for every entry when
	// the selection is sharded or crosses the summary threshold.
	Summary bool `json:"summary,omitempty"`
}

// matrix is a strategy.matrix: GitHub and Gitea expand each element of
// include into a job. It has no other key, since every top-level key of a
// matrix is a dimension.
type matrix struct {
	Include []matrixEntry `json:"include"`
}

// matrixCommand prints the selected contracts as a JSON matrix of at most
// --max-jobs jobs, so a workflow fans them out across the forge's runners:
// the runners are the distributed engine, nova schedules nothing. The
// contracts a change deleted are entries too, whose operation is their
// destroy (action/destroy.go); they are also reported on stderr and in the
// job summary.
func matrixCommand(ctx context.Context, cfg Config, env Env) error {
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	sel, err := selectContracts(ctx, cfg, reg)
	if err != nil {
		return manyAbort(cfg, env, err)
	}
	from := cfg.WorkDir
	if from == "" {
		if from, err = os.Getwd(); err != nil {
			return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "locating the working directory: %w", err))
		}
	}
	items := make([]weighted, 0, len(sel.Contracts)+len(sel.Deleted))
	for _, c := range sel.Contracts {
		items = append(items, matrixItem(cfg, from, reg, c.Contract, ""))
	}
	destroys := 0
	for _, d := range sel.Deleted {
		// A contract unreadable at the base has no id to destroy by: it
		// is reported, as `nova plan --changed` reports it.
		if d.ID != "" {
			items = append(items, matrixItem(cfg, from, reg, d, operationDestroy))
			destroys++
		}
	}
	entries, err := shardEntries(items, cfg.MaxJobs)
	if err != nil {
		return failed(env, cfg, err)
	}
	if summarize(len(items)) || len(entries) < len(items) {
		for i := range entries {
			entries[i].Summary = true
		}
	}
	m := matrix{Include: entries}
	doc, err := json.Marshal(m)
	if err != nil {
		return failed(env, cfg, runner.Errorf(runner.InternalError, "encoding the matrix: %w", err))
	}
	if cfg.SelectionFile != "" {
		if err := os.WriteFile(cfg.SelectionFile, doc, 0o644); err != nil {
			return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "writing the selection to %s: %w", cfg.SelectionFile, err))
		}
	}
	fmt.Fprintf(env.Stdout, "%s\n", doc)
	fmt.Fprintf(env.Stderr, "nova matrix: %d contract(s) selected, %d destroy(s) (%s), in %d job(s) of at most %d\n", len(sel.Contracts), destroys, selectionLine(cfg, sel), len(m.Include), cfg.MaxJobs)
	for _, d := range deletedViews(sel.Deleted) {
		fmt.Fprintf(env.Stderr, "nova matrix: %s %s\n", d.Reason, d.Message)
	}
	matrixOutputs(cfg, env, string(doc), deletedViews(sel.Deleted))
	return nil
}

// matrixItem is contract c as the matrix lists it, with its weight: the
// modules its stack resolves to, at least one (a stack the registry does
// not know still costs its run).
func matrixItem(cfg Config, from string, reg *registry.Registry, c monorepo.Contract, operation string) weighted {
	dir := filepath.Join(cfg.Dir, filepath.FromSlash(c.Dir))
	if rel, err := filepath.Rel(from, dir); err == nil {
		dir = rel
	}
	dir = filepath.ToSlash(dir)
	weight := 1
	if mods, ok := reg.StackModules(c.Stack); ok && len(mods) > weight {
		weight = len(mods)
	}
	p := path.Join(dir, c.File)
	name := p
	if operation != "" {
		name = operation + " " + p
	}
	return weighted{
		member: shardMember{Path: p, ID: c.ID, Operation: operation},
		entry:  matrixEntry{Name: name, Dir: dir, Contract: c.File, ID: c.ID, Environment: c.Environment, Operation: operation},
		weight: weight,
	}
}

// matrixOutputs writes the matrix as the step output `matrix` (for
// `fromJSON(needs.<job>.outputs.matrix)`), and the deleted contracts to the
// job summary.
func matrixOutputs(cfg Config, env Env, doc string, deleted []deletedView) {
	if cfg.Forge == NoForge || cfg.OutputFile == "" {
		return
	}
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(env.Stderr, "nova: could not write step outputs: %v\n", p)
		}
	}()
	files := map[string]string{"GITHUB_OUTPUT": cfg.OutputFile, "GITHUB_STEP_SUMMARY": cfg.SummaryFile}
	gha := githubactions.New(githubactions.WithGetenv(func(k string) string { return files[k] }), githubactions.WithWriter(env.Stderr))
	gha.SetOutput("matrix", doc)
	if cfg.SummaryFile != "" && len(deleted) > 0 {
		gha.AddStepSummary(matrixSummary(deleted))
	}
}

// matrixSummary is the job summary of the contracts a change deleted.
func matrixSummary(deleted []deletedView) string {
	s := "### nova matrix: deleted contracts (the matrix destroys each that has an id: operation destroy)\n\n"
	for _, d := range deleted {
		s += fmt.Sprintf("- `%s` %s\n", d.Reason, templates.EscapeMarkdown(d.Message))
	}
	return s
}
