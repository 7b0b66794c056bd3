package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/sethvargo/go-githubactions"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/confidence"
	"github.com/nova-platform/nova/stages/policy/report"
	"github.com/nova-platform/nova/templates"
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
	// The action runs in a container with the workspace mounted at a path
	// later host steps do not have; a path relative to the workspace
	// means the same thing to both.
	gha.SetOutput("bundle-dir", r.workspacePath(v.BundleDir))
	gha.SetOutput("receipt", v.Receipt)
	if v.Confidence != nil {
		gha.SetOutput("confidence", fmt.Sprintf("%.3f", v.Confidence.Score))
	}
	if r.cfg.SummaryFile != "" {
		gha.AddStepSummary(summaryMarkdown(v))
	}
	r.annotate(v, st)
}

// annotate writes the run's findings and failing policy records as
// annotations on the contract, at the line of the field they are about
// when it is known. Their paths are relative to the repository root,
// where the runners resolve them, not to --dir.
func (r *reporter) annotate(v runView, st *runner.State) {
	file := r.workspacePath(filepath.Join(r.cfg.Dir, r.cfg.ContractPath))
	var locate report.Locator
	if data, err := os.ReadFile(filepath.Join(r.cfg.Dir, r.cfg.ContractPath)); err == nil {
		locate = report.ContractLocator(file, data)
	}
	for _, s := range v.Stages {
		level := "error"
		if s.Verdict == runner.Pass || s.Verdict == runner.AwaitingApproval {
			level = "notice"
		}
		for _, f := range s.Findings {
			a := report.Annotation{Level: level, Title: string(f.Reason) + " (" + s.Stage + ")", Message: f.Message}
			if name, line, col, ok := splitLocation(f.Location); ok {
				a.File, a.Line, a.Col = r.workspacePath(filepath.Join(r.cfg.Dir, name)), line, col
			} else if f.Field != "" && locate != nil {
				a.File, a.Line, _ = locate("contract:" + f.Field)
			}
			fmt.Fprintln(r.progress, a)
		}
	}
	_ = report.WriteAnnotations(r.progress, st.PCRs, locate)
}

// splitLocation splits a finding's file:line[:col].
func splitLocation(loc string) (file string, line, col int, ok bool) {
	if loc == "" {
		return "", 0, 0, false
	}
	parts := strings.Split(loc, ":")
	nums := []int{}
	for len(parts) > 1 && len(nums) < 2 {
		n, err := strconv.Atoi(parts[len(parts)-1])
		if err != nil {
			break
		}
		nums = append([]int{n}, nums...)
		parts = parts[:len(parts)-1]
	}
	file = strings.Join(parts, ":")
	switch len(nums) {
	case 1:
		line = nums[0]
	case 2:
		line, col = nums[0], nums[1]
	}
	return file, line, col, true
}

// workspacePath is p relative to the workspace (GITHUB_WORKSPACE, else
// the working directory), with forward slashes; a path outside it stays
// as it is.
func (r *reporter) workspacePath(p string) string {
	if p == "" {
		return ""
	}
	ws := firstNonEmpty(r.cfg.Workspace, r.cfg.WorkDir)
	if ws == "" || !filepath.IsAbs(p) {
		return filepath.ToSlash(p)
	}
	rel, err := filepath.Rel(ws, p)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return filepath.ToSlash(p)
	}
	return filepath.ToSlash(rel)
}

// summaryMarkdown is the job summary of a run. Every value from the change
// is escaped (templates.EscapeMarkdown).
func summaryMarkdown(v runView) string {
	esc := templates.EscapeMarkdown
	var b strings.Builder
	fmt.Fprintf(&b, "### nova %s: %s\n\n", v.Command, v.Verdict)
	if v.ContractID != "" {
		fmt.Fprintf(&b, "Contract <code>%s</code> · environment <code>%s</code>", esc(v.ContractID), esc(v.Environment))
		if v.PlanDigest != "" {
			fmt.Fprintf(&b, " · plan digest `%s`", v.PlanDigest)
		}
		b.WriteString("\n\n")
	}
	b.WriteString("| stage | verdict | duration | summary |\n|---|---|---|---|\n")
	for _, s := range v.Stages {
		fmt.Fprintf(&b, "| %s | %s | %dms | %s |\n", s.Stage, s.Verdict, s.DurationMs, esc(s.Summary))
	}
	for _, s := range v.Stages {
		for _, f := range s.Findings {
			fmt.Fprintf(&b, "\n- `%s` %s %s", f.Reason, esc(f.Location), esc(f.Message))
		}
	}
	b.WriteString("\n")
	if v.Confidence != nil {
		b.WriteString("\n" + confidence.Markdown(*v.Confidence))
	}
	return b.String()
}
