package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"text/template"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// TestCommentRendersAsTextTemplate holds Nova's template engine to
// text/template's output for the pull request comment, with each optional
// section on and off.
func TestCommentRendersAsTextTemplate(t *testing.T) {
	std := template.Must(template.ParseFiles("../templates/comment/pr.md.tmpl"))
	full := commentData{
		Marker: commentMarker("c1", "qa"), Icon: "⏳", Command: "plan", ContractID: "c1", Environment: "qa",
		Verdict: "awaiting approval", Reason: "AWAITING_APPROVAL", ReasonText: "a `reason` | with <html> & \"quotes\"",
		Approve:    &approveHint{Group: "sre", Prefix: "0123456789ab"},
		Stages:     []commentStage{{"schema", "pass", "ok"}, {"policy", "fail", "2 rules \\| failed"}},
		PlanDigest: strings.Repeat("d", 64), Changes: &runner.ChangeSummary{Add: 1, Change: 2, Destroy: 3, Replace: 4},
		Resources:  []commentResource{{"aws_s3_bucket.a", "create"}, {"aws_iam_role.b", "delete, create"}},
		Failing:    []commentPCR{{"high", "nova.tags", "aws_s3_bucket.a", "missing tags"}},
		Confidence: "| input | value |\n|---|---|\n| x | 1 |", Truncated: "the 2 planned changes are left out",
		SummaryURL: "https://example.com/run/1",
	}
	cases := map[string]commentData{"full": full, "empty": {}}
	for _, off := range []string{"Reason", "ReasonText", "Approve", "Stages", "PlanDigest", "Changes", "Replace", "Resources", "Failing", "Confidence", "Truncated"} {
		d := full
		switch off {
		case "Reason":
			d.Reason = ""
		case "ReasonText":
			d.ReasonText = ""
		case "Approve":
			d.Approve = nil
		case "Stages":
			d.Stages = nil
		case "PlanDigest":
			d.PlanDigest = ""
		case "Changes":
			d.Changes = nil
		case "Replace":
			d.Changes = &runner.ChangeSummary{Add: 1}
		case "Resources":
			d.Resources = nil
		case "Failing":
			d.Failing = nil
		case "Confidence":
			d.Confidence = ""
		case "Truncated":
			d.Truncated = ""
		}
		cases["without "+off] = d
	}
	for name, d := range cases {
		var want, got bytes.Buffer
		if err := std.Execute(&want, d); err != nil {
			t.Fatal(err)
		}
		if err := templates.PRComment().Execute(&got, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got.String(), want.String())
		}
	}
	// And through renderComment, which shortens long comments.
	for _, n := range []int{0, 3, 2000} {
		v := runView{ContractID: "c1", Environment: "prod", Command: "plan", Verdict: string(runner.AwaitingApproval), PlanDigest: strings.Repeat("e", 64)}
		for i := range n {
			v.Resources = append(v.Resources, runner.ResourceChange{Address: fmt.Sprintf("null_resource.r%d", i), Actions: []string{"create"}})
		}
		if _, err := renderComment(v, "sre", "https://example.com"); err != nil {
			t.Errorf("%d resources: %v", n, err)
		}
	}
}
