package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/confidence"
	"github.com/nova-platform/nova/stages/policy/report"
)

// actionOutputs publishes the verdict as step outputs and a job summary when
// running inside GitHub or Gitea Actions, so a workflow can branch on the
// verdict without parsing logs (conftest#387).
func (r *reporter) actionOutputs(v runView, st *runner.State) {
	if r.cfg.Forge == NoForge || r.cfg.OutputFile == "" {
		return
	}
	// go-githubactions panics when the runner's files cannot be written;
	// that is a broken runner, not a reason to lose the verdict printed
	// below, so it becomes a message.
	defer func() {
		if p := recover(); p != nil {
			fmt.Fprintf(r.progress, "nova: could not write step outputs: %v\n", p)
		}
	}()
	files := map[string]string{"GITHUB_OUTPUT": r.cfg.OutputFile, "GITHUB_STEP_SUMMARY": r.cfg.SummaryFile}
	gha := githubactions.New(githubactions.WithGetenv(func(k string) string { return files[k] }), githubactions.WithWriter(r.progress))
	gha.SetOutput("verdict", v.Verdict)
	gha.SetOutput("exit-code", fmt.Sprint(v.ExitCode))
	gha.SetOutput("reason", v.Reason)
	gha.SetOutput("run-id", v.RunID)
	gha.SetOutput("plan-digest", v.PlanDigest)
	gha.SetOutput("bundle-dir", v.BundleDir)
	if v.Confidence != nil {
		gha.SetOutput("confidence", fmt.Sprintf("%.3f", v.Confidence.Score))
	}
	if r.cfg.SummaryFile != "" {
		gha.AddStepSummary(summaryMarkdown(v))
	}
	// Failing records become annotations on the contract, at the line of
	// the field they are about when it is known.
	file := filepath.ToSlash(r.cfg.ContractPath)
	var locate report.Locator
	if data, err := os.ReadFile(filepath.Join(r.cfg.Dir, r.cfg.ContractPath)); err == nil {
		locate = report.ContractLocator(file, data)
	}
	_ = report.WriteAnnotations(r.progress, st.PCRs, locate)
}

func summaryMarkdown(v runView) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### nova %s: %s\n\n", v.Command, v.Verdict)
	if v.ContractID != "" {
		fmt.Fprintf(&b, "Contract `%s` · environment `%s`", v.ContractID, v.Environment)
		if v.PlanDigest != "" {
			fmt.Fprintf(&b, " · plan digest `%s`", v.PlanDigest)
		}
		b.WriteString("\n\n")
	}
	b.WriteString("| stage | verdict | duration | summary |\n|---|---|---|---|\n")
	for _, s := range v.Stages {
		fmt.Fprintf(&b, "| %s | %s | %dms | %s |\n", s.Stage, s.Verdict, s.DurationMs, mdCell(s.Summary))
	}
	for _, s := range v.Stages {
		for _, f := range s.Findings {
			fmt.Fprintf(&b, "\n- `%s` %s %s", f.Reason, mdCell(f.Location), mdCell(f.Message))
		}
	}
	b.WriteString("\n")
	if v.Confidence != nil {
		b.WriteString("\n" + confidence.Markdown(*v.Confidence))
	}
	return b.String()
}

// mdCell keeps a value inside one Markdown table cell.
func mdCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
