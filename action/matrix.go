package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/sethvargo/go-githubactions"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// matrixEntry is one contract in a workflow's strategy.matrix: a job runs
// `nova <command> --dir <dir> --contract <contract>`.
type matrixEntry struct {
	// Dir is the contract's directory relative to where nova matrix ran
	// (the checkout's top, in a workflow), so the fanned-out job can pass
	// it as --dir unchanged.
	Dir         string `json:"dir"`
	Contract    string `json:"contract"`
	ID          string `json:"id"`
	Environment string `json:"environment"`
}

// matrix is a strategy.matrix: GitHub and Gitea expand each element of
// include into a job. It has no other key, since every top-level key of a
// matrix is a dimension.
type matrix struct {
	Include []matrixEntry `json:"include"`
}

// matrixCommand prints the selected contracts as a JSON matrix, so a
// workflow fans them out across the forge's runners: the runners are the
// distributed engine, nova schedules nothing. Deleted contracts are
// reported on stderr and in the job summary, never put in the matrix.
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
	m := matrix{Include: []matrixEntry{}}
	for _, c := range sel.Contracts {
		dir := filepath.Join(cfg.Dir, filepath.FromSlash(c.Dir))
		if rel, err := filepath.Rel(from, dir); err == nil {
			dir = rel
		}
		m.Include = append(m.Include, matrixEntry{Dir: filepath.ToSlash(dir), Contract: c.File, ID: c.ID, Environment: c.Environment})
	}
	doc, err := json.Marshal(m)
	if err != nil {
		return failed(env, cfg, runner.Errorf(runner.InternalError, "encoding the matrix: %w", err))
	}
	fmt.Fprintf(env.Stdout, "%s\n", doc)
	fmt.Fprintf(env.Stderr, "nova matrix: %d contract(s) selected (%s)\n", len(m.Include), selectionLine(cfg, sel))
	for _, d := range deletedViews(sel.Deleted) {
		fmt.Fprintf(env.Stderr, "nova matrix: %s %s\n", d.Reason, d.Message)
	}
	matrixOutputs(cfg, env, string(doc), deletedViews(sel.Deleted))
	return nil
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
	s := "### nova matrix: deleted contracts (reported only; nothing is destroyed)\n\n"
	for _, d := range deleted {
		s += fmt.Sprintf("- `%s` %s\n", d.Reason, templates.EscapeMarkdown(d.Message))
	}
	return s
}
