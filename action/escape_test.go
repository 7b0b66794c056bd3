package main

import (
	"path"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/monorepo"
	"github.com/nova-platform/nova/templates/markdowntest"
)

// Text from the change under review is shown as text wherever Nova writes
// Markdown: each test below renders a real document with every field that
// can hold such text set to each hostile value, tagged by field, and reads
// the rendered page (markdowntest.Check): the value is shown whole in its
// field, and adds no heading, link, image, mention, HTML or table cell.

// hostileView is a run whose every field from the change holds h, tagged
// with where it is.
func hostileView(h string, verdict runner.Verdict, env string) runView {
	conf := &runner.Confidence{Phase: runner.PostPlan, Score: 0.5, Band: runner.BandPass, Threshold: 0.1,
		PerInput: map[string]runner.ConfidenceInput{"tests": {Value: 0.5, Weight: 0.15, Contribution: 0.075, Explanation: "X1 " + h}}}
	return runView{
		Command: "run", Verdict: string(verdict), Reason: string(runner.PolicyCriticalFail), ContractID: "C1 " + h, Environment: env,
		PlanDigest: strings.Repeat("d", 64), Changes: &runner.ChangeSummary{Add: 1},
		Resources: []runner.ResourceChange{{Address: "A1 " + h, Actions: []string{"create"}}},
		Stages: []stageView{{Stage: "policy", Verdict: runner.Fail, Summary: "S1 " + h,
			Findings: []runner.Finding{{Reason: runner.PolicyCriticalFail, Location: "L1 " + h, Message: "M1 " + h}}}},
		PCRs: []runner.PCR{{Engine: "rego", RuleID: "R1 " + h, Severity: runner.Severity("V1 " + h), Result: runner.PCRFail,
			ResourceRef: "W1 " + h, Message: "P1 " + h}},
		Confidence: conf,
		Ignored: []runner.IgnoredClaim{{Approver: "I1 " + h, Source: runner.SourceGiteaComment, SourceRef: "17", Reason: runner.ApprovalClaimInvalid,
			Why: "Y1 " + h}},
	}
}

func checkMarkdown(t *testing.T, doc string, allow markdowntest.Allow, texts ...string) {
	t.Helper()
	if problems := markdowntest.Check(doc, allow, texts...); len(problems) > 0 {
		t.Errorf("%s\n--- markdown:\n%s", strings.Join(problems, "\n"), doc)
	}
}

func TestCommentShowsChangeTextAsText(t *testing.T) {
	const summaryURL = "https://github.com/org/repo/actions/runs/42"
	for _, h := range markdowntest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			// Awaiting approval in prod: the approval hint, with the
			// group from approvers.yml.
			v := hostileView(h.Value, runner.AwaitingApproval, "prod")
			body, err := renderComment(v, "G1 "+h.Value, summaryURL)
			if err != nil {
				t.Fatal(err)
			}
			// The marker is the one HTML comment, and ends where it should.
			if !strings.HasPrefix(body, commentMarker(v.ContractID, v.Environment)+"\n") || strings.Count(body, "-->") != 1 {
				t.Errorf("the marker does not stand alone:\n%s", body)
			}
			allow := markdowntest.Allow{Comments: []string{"nova:comment "}, Links: []string{summaryURL}, Headings: 1}
			checkMarkdown(t, body, allow, "C1 "+h.Value, oneLine("S1 "+h.Value), oneLine("M1 "+h.Value), "A1 "+h.Value,
				"V1 "+h.Value, "R1 "+h.Value, "W1 "+h.Value, oneLine("P1 "+h.Value), "X1 "+h.Value, "G1 "+h.Value,
				"I1 "+h.Value, oneLine("Y1 "+h.Value))
			// A failed run whose environment is the change's own text
			// (the contract did not validate).
			v = hostileView(h.Value, runner.Fail, "E1 "+h.Value)
			if body, err = renderComment(v, "sre", summaryURL); err != nil {
				t.Fatal(err)
			}
			checkMarkdown(t, body, allow, "C1 "+h.Value, "E1 "+h.Value)
		})
	}
}

func TestSummaryShowsChangeTextAsText(t *testing.T) {
	for _, h := range markdowntest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			v := hostileView(h.Value, runner.Fail, "E1 "+h.Value)
			checkMarkdown(t, summaryMarkdown(v), markdowntest.Allow{Headings: 1},
				"C1 "+h.Value, "E1 "+h.Value, "S1 "+h.Value, "L1 "+h.Value, "M1 "+h.Value, "X1 "+h.Value)
		})
	}
}

func TestManySummaryShowsChangeTextAsText(t *testing.T) {
	for _, h := range markdowntest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			v := hostileView(h.Value, runner.Fail, "E1 "+h.Value)
			v.ExitCode = 1
			deleted := monorepo.Contract{Dir: "D2 " + h.Value, File: ".nova/contract.yml", ID: "I2 " + h.Value, Environment: "E2 " + h.Value}
			mv := manyView{Command: "run", Selection: "all", Verdict: v.Verdict, ExitCode: 1,
				Contracts: []contractView{{Dir: "D1 " + h.Value, Contract: ".nova/contract.yml", runView: v}},
				Deleted:   deletedViews([]monorepo.Contract{deleted})}
			// The table, the deleted list, and the failing contract's
			// section: a heading of its own and its run's summary.
			checkMarkdown(t, manySummaryMarkdown(mv), markdowntest.Allow{Headings: 3},
				path.Join("D1 "+h.Value, ".nova/contract.yml"), "C1 "+h.Value, "E1 "+h.Value, "S1 "+h.Value, "M1 "+h.Value, deletedMessage(deleted))
			checkMarkdown(t, matrixSummary(mv.Deleted), markdowntest.Allow{Headings: 1}, deletedMessage(deleted))
		})
	}
}

func TestDeletedContractCommentShowsChangeTextAsText(t *testing.T) {
	for _, h := range markdowntest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			d := monorepo.Contract{Dir: "D1 " + h.Value, File: ".nova/contract.yml", ID: "I1 " + h.Value, Environment: "E1 " + h.Value}
			checkMarkdown(t, deletedComment(d), markdowntest.Allow{Comments: []string{"nova:comment "}, Headings: 1},
				"I1 "+h.Value, "E1 "+h.Value, d.Path())
		})
	}
}

func TestDriftIssueShowsChangeTextAsText(t *testing.T) {
	const runURL = "https://github.com/org/repo/actions/runs/42"
	for _, h := range markdowntest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			v := hostileView(h.Value, runner.Fail, "E1 "+h.Value)
			// The note starts a line: it is left untagged, so that a
			// value's own line-start markup would take effect.
			rec := runner.DriftRecord{Drifted: true, Note: h.Value, Resources: []runner.DriftedResource{
				{Address: "A1 " + h.Value, Kind: runner.DriftOutside, Actions: []string{"update"}, Attributes: []string{"T1 " + h.Value, "tags"}}}}
			marker := driftMarker(v.ContractID, v.Environment)
			checkMarkdown(t, driftIssueBody(marker, rec, v, runURL), markdowntest.Allow{Comments: []string{"nova:drift:"}, Links: []string{runURL}, Headings: 1},
				"C1 "+h.Value, "E1 "+h.Value, "A1 "+h.Value, "T1 "+h.Value+", tags", h.Value)
		})
	}
}
