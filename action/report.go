package main

import (
	"encoding/json"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/confidence"
	"github.com/nova-platform/nova/stages/policy/report"
)

// reporter renders a run for people (text) or programs (json). It only
// formats results; it never decides anything.
type reporter struct {
	cfg Config
	// progress receives one line per stage as it finishes: stdout for
	// text, stderr for json so stdout stays one parseable document.
	progress io.Writer
	stdout   io.Writer
	// note is a last line of the report (check mode's).
	note string
	// source names what the run reads when it is not the contract in
	// st.Dir as checked out (a rollback's copy of an earlier commit).
	source string
}

func newReporter(cfg Config, env Env) *reporter {
	r := &reporter{cfg: cfg, progress: env.Stdout, stdout: env.Stdout}
	if cfg.Output == "json" {
		r.progress = env.Stderr
	}
	return r
}

func (r *reporter) start(st *runner.State) {
	check := ""
	if r.cfg.Check {
		check = " --check"
	}
	source := r.source
	if source == "" {
		source = r.rel(filepath.Join(st.Dir, st.ContractPath))
	}
	fmt.Fprintf(r.progress, "nova %s%s · %s · run %s\n", r.cfg.Command, check, source, st.RunID)
}

func (r *reporter) stage(res runner.Result) {
	fmt.Fprintf(r.progress, "  %-15s %-17s %7s  %s\n", res.Stage, res.Verdict, formatDuration(res.Duration), oneLine(res.Summary))
	if res.Verdict != runner.Pass {
		writeFindings(r.progress, res.Findings, nil)
	}
}

// writeFindings prints one line per finding under its stage line, at its
// file position, else at the contract field's line when locate knows it,
// else at the field.
func writeFindings(w io.Writer, findings []runner.Finding, locate report.Locator) {
	for _, f := range findings {
		loc := firstNonEmpty(f.Location, f.Field)
		if f.Location == "" && f.Field != "" && locate != nil {
			if file, line, ok := locate("contract:" + f.Field); ok {
				loc = fmt.Sprintf("%s:%d", file, line)
			}
		}
		if loc != "" {
			loc += ": "
		}
		fmt.Fprintf(w, "      %s %s%s\n", f.Reason, loc, oneLine(f.Message))
	}
}

// runView is the JSON shape of a finished run.
type runView struct {
	Command     string `json:"command"`
	RunID       string `json:"runId"`
	Verdict     string `json:"verdict"`
	ExitCode    int    `json:"exitCode"`
	Reason      string `json:"reason,omitempty"`
	ContractID  string `json:"contractId,omitempty"`
	Environment string `json:"environment,omitempty"`
	PlanDigest  string `json:"planDigest,omitempty"`
	// Changes and Resources are what the plan would change.
	Changes   *runner.ChangeSummary   `json:"changes,omitempty"`
	Resources []runner.ResourceChange `json:"resources,omitempty"`
	BundleDir string                  `json:"bundleDir,omitempty"`
	// Operation is "destroy" when the plan destroys the environment's
	// deployment (docs/destroy.md).
	Operation runner.Operation `json:"operation,omitempty"`
	// Receipt is the id of the event that applied this plan earlier, when
	// the run was a replay of it, or this change, when the environment
	// applied it last (nothing was planned).
	Receipt    string      `json:"receipt,omitempty"`
	EventsFile string      `json:"eventsFile,omitempty"`
	Stages     []stageView `json:"stages"`
	// PCRs are every policy record of the run; Confidence the last signal.
	PCRs       []runner.PCR       `json:"pcrs,omitempty"`
	Confidence *runner.Confidence `json:"confidence,omitempty"`
	// Ignored are the approvals and rejections the approvals stage did
	// not count, and why.
	Ignored []runner.IgnoredClaim `json:"ignored,omitempty"`
	// Check is true for a --check run: nothing was changed or recorded.
	Check bool `json:"check,omitempty"`
}

type stageView struct {
	Stage      string           `json:"stage"`
	Verdict    runner.Verdict   `json:"verdict"`
	Summary    string           `json:"summary"`
	DurationMs int64            `json:"durationMs"`
	Findings   []runner.Finding `json:"findings,omitempty"`
}

func (r *reporter) finish(out runner.Outcome, st *runner.State, eventsFile string) runView {
	code := exitCode(verdict(out.Verdict, out.Reason))
	v := runView{
		Command: r.cfg.Command, RunID: st.RunID, Verdict: string(out.Verdict), ExitCode: code,
		Reason: string(out.Reason), EventsFile: eventsFile, Stages: []stageView{}, Check: r.cfg.Check,
	}
	if st.Contract != nil {
		v.ContractID, v.Environment = st.Contract.ID, string(st.Contract.Environment)
	}
	if st.Plan != nil {
		v.PlanDigest, v.BundleDir, v.Operation = st.Plan.Digest, st.Plan.BundleDir, st.Plan.Operation
		if r.cfg.Check && r.cfg.Command != "apply" {
			// A check's own bundle is removed with its run directory.
			v.BundleDir = ""
		}
		changes := st.Plan.Changes
		v.Changes, v.Resources = &changes, st.Plan.Resources
	}
	if st.Receipt != nil {
		v.Receipt = st.Receipt.ID
	}
	for _, res := range out.Results {
		if r, ok := res.Data.(runner.ReceiptRecord); ok && res.Verdict == runner.Pass {
			v.Receipt = r.Receipt
		}
		if c, ok := res.Data.(runner.ApprovalCheck); ok {
			v.Ignored = append(v.Ignored, c.Ignored...)
		}
		v.Stages = append(v.Stages, stageView{res.Stage, res.Verdict, res.Summary, res.Duration.Milliseconds(), res.Findings})
	}
	v.PCRs, v.Confidence = st.PCRs, st.Confidence
	if r.cfg.Command == "validate" {
		r.warnUnpinned()
		r.warnExposed()
	}
	r.actionOutputs(v, st)
	if r.cfg.Output == "json" {
		enc := json.NewEncoder(r.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
		return v
	}
	r.details(st)
	fmt.Fprintf(r.stdout, "%s (exit %d)", verdictLine(out.Verdict), code)
	if v.PlanDigest != "" {
		fmt.Fprintf(r.stdout, " · plan %s", v.PlanDigest)
	}
	if eventsFile != "" {
		fmt.Fprintf(r.stdout, "\n  events: %s\n", r.rel(eventsFile))
	} else {
		fmt.Fprintln(r.stdout)
	}
	if r.note != "" {
		fmt.Fprintf(r.stdout, "  %s\n", r.note)
	}
	return v
}

// details prints what a reviewer needs below the stage lines: the policy
// records and the confidence explanation (explain prints only the latter).
func (r *reporter) details(st *runner.State) {
	if len(st.PCRs) > 0 && r.cfg.Command != "explain" {
		fmt.Fprintln(r.stdout, "\npolicy records:")
		_ = report.WriteText(r.stdout, st.PCRs)
	}
	if st.Confidence != nil {
		fmt.Fprintf(r.stdout, "\nconfidence (%s):\n", st.Confidence.Phase)
		fmt.Fprint(r.stdout, confidence.Table(*st.Confidence))
	}
	fmt.Fprintln(r.stdout)
}

// abort reports an error that happened before any stage ran.
func (r *reporter) abort(err error) error {
	reason := runner.ReasonOf(err)
	if r.cfg.Output == "json" {
		enc := json.NewEncoder(r.stdout)
		enc.SetIndent("", "  ")
		_ = enc.Encode(runView{Command: r.cfg.Command, Verdict: string(runner.Errored), ExitCode: exitCode(err), Reason: string(reason), Stages: []stageView{}})
	} else {
		fmt.Fprintf(r.progress, "nova %s: %s: %v\n", r.cfg.Command, reason, err)
	}
	return err
}

func verdictLine(v runner.Verdict) string {
	switch v {
	case runner.Pass:
		return "result: pass"
	case runner.AwaitingApproval:
		return "result: approval required"
	case runner.Fail:
		return "result: fail"
	}
	return "result: error"
}

// rel shortens a path under the working directory for display.
func (r *reporter) rel(p string) string {
	if wd := r.cfg.WorkDir; wd != "" {
		if rel, err := filepath.Rel(wd, p); err == nil && !strings.HasPrefix(rel, "..") {
			return rel
		}
	}
	return p
}

func formatDuration(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " …"
	}
	return s
}
