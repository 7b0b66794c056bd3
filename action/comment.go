package main

import (
	"bytes"
	"fmt"
	"net/url"
	"strings"
	"unicode/utf8"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/confidence"
	"github.com/nova-platform/nova/templates"
)

// maxComment is what a comment may hold on GitHub (Gitea takes more);
// nova stays a little under it.
const maxComment = 65536 - 512

// commentMarker finds nova's comment for one contract and environment on a
// pull request again, so each run updates it instead of adding another. It
// starts with runner.CommentPrefix, which the scaffolded workflows'
// conditions skip, so the comment starts no run.
func commentMarker(contractID string, env string) string {
	return fmt.Sprintf("%scomment contract=%s env=%s -->", runner.CommentPrefix, markerValue(contractID), markerValue(env))
}

// markerValue keeps a value inside the HTML comment of a marker:
// percent-encoding leaves no > to end it early, and leaves an id or an
// environment name as it is.
func markerValue(s string) string { return url.PathEscape(s) }

// commentData is what the PR comment template lays out. Every value from
// the change is escaped for Markdown here (templates.EscapeMarkdown); the
// template adds structure only.
type commentData struct {
	Marker, Icon, Command, ContractID, Environment, Verdict string
	Reason, ReasonText                                      string
	Approve                                                 *approveHint
	Stages                                                  []commentStage
	PlanDigest                                              string
	// Destroy says the plan destroys the environment's deployment.
	Destroy    bool
	Changes    *runner.ChangeSummary
	Resources  []commentResource
	Failing    []commentPCR
	Ignored    []commentIgnored
	Confidence string
	Truncated  string
	SummaryURL string
}

// approveHint says how to approve: Env is a valid environment, shown in a
// code block as it is.
type approveHint struct{ Group, Env, Prefix string }

type commentStage struct{ Stage, Verdict, Summary string }

type commentResource struct{ Address, Actions string }

type commentPCR struct{ Severity, RuleID, Where, Message string }

// commentIgnored is a decision the approvals stage did not count: who,
// through which source, the reason code and why.
type commentIgnored struct{ Approver, Source, Reason, Why string }

// maxIgnoredRows is how many uncounted decisions a shortened comment
// still lists.
const maxIgnoredRows = 20

// renderComment renders the comment for a finished run, shortened to fit a
// comment when the plan or the findings are long: first the list of
// planned changes goes, then the findings beyond the first fifty, each time
// saying so and pointing at the job summary, which has everything.
func renderComment(v runView, group, summaryURL string) (string, error) {
	esc := templates.EscapeMarkdown
	d := commentData{
		Marker: commentMarker(v.ContractID, v.Environment), Icon: verdictIcon(v.Verdict), Command: v.Command,
		ContractID: esc(v.ContractID), Environment: esc(v.Environment), Verdict: strings.ReplaceAll(v.Verdict, "_", " "),
		Reason: v.Reason, PlanDigest: v.PlanDigest, SummaryURL: summaryURL, Destroy: v.Operation.IsDestroy(),
	}
	for _, s := range v.Stages {
		d.Stages = append(d.Stages, commentStage{s.Stage, string(s.Verdict), esc(oneLine(s.Summary))})
		if s.Verdict != runner.Pass && len(s.Findings) > 0 && d.ReasonText == "" {
			d.ReasonText = esc(oneLine(s.Findings[0].Message))
		}
	}
	if waitsForApproval(v) && len(v.PlanDigest) >= runner.MinDigestPrefix && group != "" && runner.Environment(v.Environment).Valid() {
		// The whole digest: a prefix short enough to type is short enough
		// to grind a second plan for.
		d.Approve = &approveHint{Group: esc(group), Env: v.Environment, Prefix: v.PlanDigest}
	}
	if v.Changes != nil {
		d.Changes = v.Changes
	}
	for _, r := range v.Resources {
		d.Resources = append(d.Resources, commentResource{esc(r.Address), esc(strings.Join(r.Actions, ", "))})
	}
	for _, p := range v.PCRs {
		if p.Result != runner.PCRFail && p.Result != runner.PCRError {
			continue
		}
		d.Failing = append(d.Failing, commentPCR{esc(string(p.Severity)), esc(p.RuleID), esc(p.ResourceRef), esc(oneLine(p.Message))})
	}
	for _, c := range v.Ignored {
		d.Ignored = append(d.Ignored, commentIgnored{esc(c.Approver), esc(c.Source), esc(string(c.Reason)), esc(oneLine(c.Why))})
	}
	if v.Confidence != nil {
		d.Confidence = confidence.Markdown(*v.Confidence)
	}
	body, err := executeComment(d)
	if err != nil || utf8.RuneCountInString(body) <= maxComment {
		return body, err
	}
	d.Resources, d.Truncated = nil, fmt.Sprintf("the %d planned changes are left out", len(v.Resources))
	if body, err = executeComment(d); err != nil || utf8.RuneCountInString(body) <= maxComment {
		return body, err
	}
	if len(d.Failing) > 50 {
		d.Truncated += fmt.Sprintf(", and %d of %d failing checks", len(d.Failing)-50, len(d.Failing))
		d.Failing = d.Failing[:50]
	}
	if len(d.Ignored) > maxIgnoredRows {
		d.Truncated += fmt.Sprintf(", and %d of %d decisions not counted", len(d.Ignored)-maxIgnoredRows, len(d.Ignored))
		d.Ignored = d.Ignored[:maxIgnoredRows]
	}
	d.Confidence = ""
	body, err = executeComment(d)
	if err == nil && utf8.RuneCountInString(body) > maxComment {
		// Fifty findings of megabyte messages: cut the text itself.
		body = string([]rune(body)[:maxComment-200]) + "\n\n*… cut to fit; the full report is in the job summary.*\n\n" + d.Marker + "\n"
	}
	return body, err
}

func executeComment(d commentData) (string, error) {
	var b bytes.Buffer
	if err := templates.PRComment().Execute(&b, d); err != nil {
		return "", fmt.Errorf("rendering the pull request comment: %w", err)
	}
	return b.String(), nil
}

// waitsForApproval reports whether the run leaves a plan that only an
// approval lets apply: a gate that waits, or a plan of a guarded
// environment that the environment has not applied, whose apply job
// comes next (and on GitHub may be held for the environment's reviewers
// before nova runs again).
func waitsForApproval(v runView) bool {
	if v.Verdict == string(runner.AwaitingApproval) {
		return true
	}
	return notApplied(v) && !runner.Environment(v.Environment).Autonomous()
}

// notApplied reports whether a run planned a change that its environment
// does not run yet: a passing plan without a receipt.
func notApplied(v runView) bool {
	return v.Command == "plan" && v.Verdict == string(runner.Pass) && v.Receipt == ""
}

func verdictIcon(v string) string {
	switch runner.Verdict(v) {
	case runner.Pass:
		return "✅"
	case runner.AwaitingApproval:
		return "⏳"
	case runner.Fail:
		return "❌"
	}
	return "⚠️"
}
