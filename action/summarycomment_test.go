package main

import (
	"fmt"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// TestSummarySplitsAtTheCommentLimit: a thousand contracts with long paths
// do not fit one comment; each part fits, carries its own marker and
// numbering, every contract has exactly one row, and text from the change
// (a path with table and HTML syntax) is escaped.
func TestSummarySplitsAtTheCommentLimit(t *testing.T) {
	const n = 1000
	hostile := "svc/a|b<script>alert(1)</script>`x`/.nova/contract.yml"
	var views []runView
	paths := map[string]string{}
	for i := range n {
		id := budgetID(i)
		v := runView{Command: "plan", ContractID: id, Environment: "prod", Verdict: string(runner.Pass), PlanDigest: strings.Repeat("ab", 32)}
		if i == 3 {
			v.Verdict = string(runner.AwaitingApproval)
		}
		if i%100 == 7 {
			v.Verdict, v.Reason = string(runner.Fail), string(runner.InputUnknown)
			v.Stages = []stageView{{Stage: "schema", Verdict: runner.Fail, Findings: []runner.Finding{{Message: "input | volume <b>unknown</b>"}}}}
		}
		views = append(views, v)
		paths[id] = fmt.Sprintf("services/%s/%04d/%s", strings.Repeat("deep/", 12), i, hostile)
	}
	parts, err := renderSummary("plan", "prod", budgetID(0), views, paths, "sre", "in its check run", "https://github.example.com/o/r/actions/runs/1")
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) < 2 {
		t.Fatalf("%d part(s); the rows need more than one comment", len(parts))
	}
	all := strings.Join(parts, "\n")
	for i, body := range parts {
		if c := utf8.RuneCountInString(body); c > maxComment {
			t.Errorf("part %d has %d characters, more than %d", i+1, c, maxComment)
		}
		if want := summaryMarker("prod", budgetID(0), i+1); !strings.HasPrefix(body, want+"\n") {
			t.Errorf("part %d does not start with its marker %q", i+1, want)
		}
		if want := fmt.Sprintf("part %d of %d", i+1, len(parts)); !strings.Contains(body, want) {
			t.Errorf("part %d does not say %q", i+1, want)
		}
	}
	for i := range n {
		if got := strings.Count(all, "<code>"+templates.EscapeMarkdown(budgetID(i))+"</code>"); got != 1 {
			t.Errorf("contract %s has %d rows, want 1", budgetID(i), got)
		}
	}
	for _, raw := range []string{"<script>", "a|b", "<b>unknown"} {
		if strings.Contains(all, raw) {
			t.Errorf("the summary holds %q unescaped", raw)
		}
	}
	if !strings.Contains(all, "`/nova approve prod "+strings.Repeat("ab", 32)+"`") {
		t.Errorf("the summary does not say how to approve the plan that waits")
	}
	if !strings.Contains(parts[0], "❌ 10 fail · ⏳ 1 awaiting approval · ✅ 989 pass") {
		t.Errorf("the first part does not tally the verdicts:\n%.400s", parts[0])
	}
}
