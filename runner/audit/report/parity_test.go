package report

import (
	"bytes"
	"html/template"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner/audit"
	"github.com/nova-platform/nova/templates"
)

// TestReportRendersAsHTMLTemplate holds Nova's template engine, in HTML
// mode, to html/template's output for the report page: the same escaping
// in text, in attributes, in the href fragments and in SVG titles.
func TestReportRendersAsHTMLTemplate(t *testing.T) {
	std := template.Must(template.New("report").Parse(templates.ReportHTML))
	hostile := `<img src=x onerror=alert(1)> "q" 'a' & b+c %20 #x ?y é 日本 ` + "\x00"
	renamed := func(tables *audit.Tables, from, to string) *audit.Tables {
		for i := range tables.Runs {
			tables.Runs[i].ContractID = strings.ReplaceAll(tables.Runs[i].ContractID, from, to)
		}
		for i := range tables.Applies {
			tables.Applies[i].ContractID = strings.ReplaceAll(tables.Applies[i].ContractID, from, to)
		}
		for i := range tables.Approvals {
			tables.Approvals[i].ContractID = strings.ReplaceAll(tables.Approvals[i].ContractID, from, to)
		}
		for i := range tables.Confidence {
			tables.Confidence[i].ContractID = strings.ReplaceAll(tables.Confidence[i].ContractID, from, to)
		}
		for i := range tables.PCRs {
			tables.PCRs[i].ContractID = strings.ReplaceAll(tables.PCRs[i].ContractID, from, to)
			tables.PCRs[i].RuleID = hostile
		}
		for i := range tables.Decisions {
			tables.Decisions[i].ContractID = strings.ReplaceAll(tables.Decisions[i].ContractID, from, to)
		}
		return tables
	}
	single := sampleTables("sre")
	single = renamed(single, "c-two", "c-one")
	for name, in := range map[string]Input{
		"sample":  {Tables: sampleTables("sre-oncall"), Repo: "/srv/evidence.git", Head: strings.Repeat("a", 40), Events: 42, Generated: t0, Version: "test"},
		"hostile": {Tables: renamed(sampleTables(hostile), "c-one", hostile), Repo: hostile, Head: hostile, Events: 1, Generated: t0, Version: hostile},
		"single":  {Tables: single, Repo: "r", Head: "h", Events: 3, Generated: t0, Version: "v"},
		"empty":   {Tables: &audit.Tables{}, Generated: t0},
	} {
		var want bytes.Buffer
		if err := std.Execute(&want, newPage(in)); err != nil {
			t.Fatal(err)
		}
		got, err := Render(in)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !bytes.Equal(got, want.Bytes()) {
			g, w := string(got), want.String()
			i := 0
			for i < len(g) && i < len(w) && g[i] == w[i] {
				i++
			}
			from := max(0, i-200)
			t.Errorf("%s differs at byte %d:\n--- got:\n%s\n--- want:\n%s", name, i, g[from:min(len(g), i+200)], w[from:min(len(w), i+200)])
		}
	}
}
