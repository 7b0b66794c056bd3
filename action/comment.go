package main

import (
	"bytes"
	"fmt"
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
// pull request again, so each run updates it instead of adding another.
func commentMarker(contractID string, env string) string {
	return fmt.Sprintf("<!-- nova:comment contract=%s env=%s -->", contractID, env)
}

// commentData is what the PR comment template lays out. Every value is
// escaped for Markdown here; the template adds structure only.
type commentData struct {
	Marker, Icon, Command, ContractID, Environment, Verdict string
	Reason, ReasonText                                      string
	Approve                                                 *approveHint
	Stages                                                  []commentStage
	PlanDigest                                              string
	Changes                                                 *runner.ChangeSummary
	Resources                                               []commentResource
	Failing                                                 []commentPCR
	Confidence                                              string
	Truncated                                               string
	SummaryURL                                              string
}

type approveHint struct{ Group, Prefix string }

type commentStage struct{ Stage, Verdict, Summary string }

type commentResource struct{ Address, Actions string }

type commentPCR struct{ Severity, RuleID, Where, Message string }

// renderComment renders the comment for a finished run, shortened to fit a
// comment when the plan or the findings are long: first the list of
// planned changes goes, then the findings beyond the first fifty, each time
// saying so and pointing at the job summary, which has everything.
func renderComment(v runView, group, summaryURL string) (string, error) {
	d := commentData{
		Marker: commentMarker(v.ContractID, v.Environment), Icon: verdictIcon(v.Verdict), Command: v.Command,
		ContractID: mdText(v.ContractID), Environment: mdText(v.Environment), Verdict: strings.ReplaceAll(v.Verdict, "_", " "),
		Reason: v.Reason, PlanDigest: v.PlanDigest, SummaryURL: summaryURL,
	}
	for _, s := range v.Stages {
		d.Stages = append(d.Stages, commentStage{s.Stage, string(s.Verdict), mdCell(oneLine(s.Summary))})
		if s.Verdict != runner.Pass && len(s.Findings) > 0 && d.ReasonText == "" {
			d.ReasonText = mdText(oneLine(s.Findings[0].Message))
		}
	}
	if v.Verdict == string(runner.AwaitingApproval) && len(v.PlanDigest) >= runner.MinDigestPrefix && group != "" {
		// The whole digest: a prefix short enough to type is short enough
		// to grind a second plan for.
		d.Approve = &approveHint{Group: mdText(group), Prefix: v.PlanDigest}
	}
	if v.Changes != nil {
		d.Changes = v.Changes
	}
	for _, r := range v.Resources {
		d.Resources = append(d.Resources, commentResource{mdCell(r.Address), mdCell(strings.Join(r.Actions, ", "))})
	}
	for _, p := range v.PCRs {
		if p.Result != runner.PCRFail && p.Result != runner.PCRError {
			continue
		}
		d.Failing = append(d.Failing, commentPCR{string(p.Severity), mdCell(p.RuleID), mdCell(p.ResourceRef), mdCell(oneLine(p.Message))})
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

// mdText keeps a value from being read as Markdown structure or HTML.
func mdText(s string) string {
	r := strings.NewReplacer("<", "&lt;", ">", "&gt;", "`", "'", "\n", " ")
	return r.Replace(s)
}
