package main

import (
	"context"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/stages/policy/report"
)

// maxSummaryBytes keeps a job summary under what GitHub accepts for one
// step (1 MiB); a thousand contracts' full reports would not fit.
const maxSummaryBytes = 900 << 10

// manyOutputs publishes a run over many contracts in the forge's runner:
// the step outputs once for the whole command (the worst verdict, as the
// exit code), one job summary with a line per contract and the report of
// each that did not pass, and every contract's failing records as
// annotations on its own file.
func manyOutputs(cfg Config, env Env, mv manyView, runs []*contractRun) {
	if cfg.Forge == NoForge || cfg.OutputFile == "" {
		return
	}
	progress := env.Stdout
	if cfg.Output == "json" {
		progress = env.Stderr
	}
	// As for one run (outputs.go): a broken runner must not cost the
	// verdict printed after this.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(progress, "nova: could not write step outputs: %v\n", p)
		}
	}()
	files := map[string]string{"GITHUB_OUTPUT": cfg.OutputFile, "GITHUB_STEP_SUMMARY": cfg.SummaryFile}
	gha := githubactions.New(githubactions.WithGetenv(func(k string) string { return files[k] }), githubactions.WithWriter(progress))
	gha.SetOutput("verdict", mv.Verdict)
	gha.SetOutput("exit-code", fmt.Sprint(mv.ExitCode))
	gha.SetOutput("reason", mv.Reason)
	gha.SetOutput("contracts", fmt.Sprint(len(mv.Contracts)))
	if cfg.SummaryFile != "" {
		gha.AddStepSummary(manySummaryMarkdown(mv))
	}
	for i, r := range runs {
		c := mv.Contracts[i]
		file := path.Join(c.Dir, c.Contract)
		var locate report.Locator
		if data, err := checkout.ReadFile(r.st.Dir, r.st.ContractPath, maxAnnotatedContract); err == nil {
			locate = report.ContractLocator(file, data)
		}
		_ = report.WriteAnnotations(progress, r.st.PCRs, locate)
	}
}

// maxAnnotatedContract bounds the contract read again to place
// annotations, as the schema stage bounds it.
const maxAnnotatedContract = 1 << 20

// manySummaryMarkdown is the job summary of many runs: the table of all,
// the deleted contracts, then each contract that did not pass in full
// while the summary has room.
func manySummaryMarkdown(mv manyView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### nova %s: %s — %d contract(s), %s\n\n", mv.Command, mv.Verdict, len(mv.Contracts), mv.Selection)
	b.WriteString("| contract | id | environment | verdict | exit | reason |\n|---|---|---|---|---|---|\n")
	for _, c := range mv.Contracts {
		fmt.Fprintf(&b, "| `%s` | `%s` | %s | %s | %d | %s |\n", mdCell(path.Join(c.Dir, c.Contract)), mdCell(c.ContractID), mdCell(c.Environment), c.Verdict, c.ExitCode, mdCell(c.Reason))
	}
	if len(mv.Deleted) > 0 {
		b.WriteString("\n**Deleted** (reported only; nothing is destroyed):\n\n")
		for _, d := range mv.Deleted {
			fmt.Fprintf(&b, "- `%s` %s\n", d.Reason, mdCell(d.Message))
		}
	}
	left := 0
	for _, c := range mv.Contracts {
		if c.Verdict == string(runner.Pass) {
			continue
		}
		section := fmt.Sprintf("\n#### `%s`\n\n%s", mdCell(path.Join(c.Dir, c.Contract)), summaryMarkdown(c.runView))
		if b.Len()+len(section) > maxSummaryBytes {
			left++
			continue
		}
		b.WriteString(section)
	}
	if left > 0 {
		fmt.Fprintf(&b, "\n*%d more contract report(s) left out to fit the summary; `--output json` has them all.*\n", left)
	}
	return b.String()
}

// reportDeleted tells the pull request about each deleted contract, in the
// comment that contract's runs kept there: a deletion is reported where
// its plans were, never acted on.
func reportDeleted(ctx context.Context, cfg Config, forge *forgeAdapters, deleted []monorepo.Contract, warn io.Writer) {
	if forge == nil || forge.commenter == nil {
		return
	}
	for _, d := range deleted {
		if d.ID == "" {
			continue
		}
		marker := commentMarker(d.ID, d.Environment)
		body := fmt.Sprintf("%s\n### ⚠️ nova: contract `%s` (%s) was deleted\n\n`%s` is gone in this change and no contract declares its id any more. Nova destroys nothing for a deleted contract: what it deployed, and its state, stay until someone removes them. (`%s`)\n",
			marker, mdText(d.ID), mdText(d.Environment), mdText(d.Path()), runner.ContractDeleted)
		if err := forge.commenter.UpsertComment(context.WithoutCancel(ctx), marker, body); err != nil {
			fmt.Fprintf(warn, "nova: could not report the deleted contract %s on the pull request: %v\n", d.ID, err)
		}
	}
}
