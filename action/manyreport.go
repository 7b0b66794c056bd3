package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"path"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/stages/policy/report"
	"github.com/nova-platform/nova/templates"
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
	esc := templates.EscapeMarkdown
	var b strings.Builder
	fmt.Fprintf(&b, "### nova %s: %s — %d contract(s), %s\n\n", mv.Command, mv.Verdict, len(mv.Contracts), mv.Selection)
	b.WriteString("| contract | id | environment | verdict | exit | reason |\n|---|---|---|---|---|---|\n")
	for _, c := range mv.Contracts {
		fmt.Fprintf(&b, "| <code>%s</code> | <code>%s</code> | %s | %s | %d | %s |\n", esc(path.Join(c.Dir, c.Contract)), esc(c.ContractID), esc(c.Environment), c.Verdict, c.ExitCode, esc(c.Reason))
	}
	if len(mv.Deleted) > 0 {
		b.WriteString("\n**Deleted** (reported only; nothing is destroyed):\n\n")
		for _, d := range mv.Deleted {
			fmt.Fprintf(&b, "- `%s` %s\n", d.Reason, esc(d.Message))
		}
	}
	left := 0
	for _, c := range mv.Contracts {
		if c.Verdict == string(runner.Pass) {
			continue
		}
		section := fmt.Sprintf("\n#### <code>%s</code>\n\n%s", esc(path.Join(c.Dir, c.Contract)), summaryMarkdown(c.runView))
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
		if err := forge.commenter.UpsertComment(context.WithoutCancel(ctx), marker, deletedComment(d)); err != nil {
			fmt.Fprintf(warn, "nova: could not report the deleted contract %s on the pull request: %v\n", d.ID, err)
		}
	}
}

// deletedComment is the pull request comment about a deleted contract.
func deletedComment(d monorepo.Contract) string {
	esc := templates.EscapeMarkdown
	return fmt.Sprintf("%s\n### ⚠️ nova: contract <code>%s</code> (%s) was deleted\n\n<code>%s</code> is gone in this change and no contract declares its id any more. Nova destroys nothing on its own: `nova plan --changed` and `nova run --changed` plan its destroy through the gate, dr → prod → qa → dev, each approved like any plan (docs/destroy.md). (`%s`)\n",
		commentMarker(d.ID, d.Environment), esc(d.ID), esc(d.Environment), esc(d.Path()), runner.ContractDeleted)
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
	if cfg.Select.ShardList != "" {
		return fmt.Sprintf("a shard of %d", len(cfg.Select.Shard))
	}
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
	// Check is true for a --check run: nothing was changed or recorded.
	Check bool `json:"check,omitempty"`
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
	return fmt.Sprintf("%s: %s is no longer declared at the head; nothing is destroyed unless `nova plan|run --changed` plans its destroy (docs/destroy.md)", d.Path(), who)
}

// manyReport prints the summary of every run and returns the worst
// outcome for the exit code.
func manyReport(cfg Config, env Env, sel monorepo.Selection, runs []*contractRun, views []runView, jobErr error) error {
	mv := manyView{
		Command: cfg.Command, Selection: cfg.Select.name(), Base: sel.Base, Head: sel.Head,
		Counts: map[string]int{}, Contracts: make([]contractView, 0, len(runs)), Deleted: deletedViews(sel.Deleted),
		Check: cfg.Check,
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
	if jobErr != nil {
		// What the job itself failed to do outweighs its contracts'
		// verdicts: the outputs and the exit code say so.
		mv.ExitCode, mv.Verdict, mv.Reason = ExitError, string(runner.Errored), string(runner.ReasonOf(jobErr))
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
		fmt.Fprintln(w, "deleted (reported only; plan or run --changed plans their destroy):")
		for _, d := range mv.Deleted {
			fmt.Fprintf(w, "  %s %s\n", d.Reason, d.Message)
		}
	}
	fmt.Fprintf(w, "%s (exit %d)\n", verdictLine(runner.Verdict(mv.Verdict)), mv.ExitCode)
	if cfg.Check {
		fmt.Fprintln(w, "  check mode: nothing was changed or recorded")
	}
}

func writeJSON(w io.Writer, v any) {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}
