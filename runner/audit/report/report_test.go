package report

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/nova-platform/nova/runner/audit"
	"github.com/nova-platform/nova/runner/audit/report/reporttest"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func at(minutes int) *time.Time { t := t0.Add(time.Duration(minutes) * time.Minute); return &t }

func seconds(f float64) *float64 { return &f }

// sampleTables are two contracts' facts: promotions, an approval, a
// failure and its restore, confidence, failing rules, decisions.
func sampleTables(approver string) *audit.Tables {
	t := &audit.Tables{}
	for i, c := range []string{"c-one", "c-two"} {
		base := i * 300
		t.Runs = append(t.Runs,
			audit.RunRow{RunID: "r1" + c, ContractID: c, Environment: "dev", StartedAt: *at(base), EndedAt: *at(base + 1), ContractDigest: "v1" + c, PlannedAt: at(base), EventCount: 10},
			audit.RunRow{RunID: "r2" + c, ContractID: c, Environment: "prod", StartedAt: *at(base + 100), EndedAt: *at(base + 200), ContractDigest: "v1" + c, EventCount: 5})
		t.Applies = append(t.Applies,
			audit.ApplyRow{EventID: "a1" + c, ContractID: c, Environment: "dev", ContractDigest: "v1" + c, Approver: "autonomous", AuthorizedAt: *at(base + 1), EndedAt: at(base + 1), Outcome: audit.ApplyFailed, Reason: "TERRAFORM_APPLY_FAILED"},
			audit.ApplyRow{EventID: "a2" + c, ContractID: c, Environment: "dev", ContractDigest: "v1" + c, Approver: "autonomous", AuthorizedAt: *at(base + 20), EndedAt: at(base + 20), Outcome: audit.ApplyApplied},
			audit.ApplyRow{EventID: "a3" + c, ContractID: c, Environment: "prod", ContractDigest: "v1" + c, Approver: approver, AuthorizedAt: *at(base + 200), EndedAt: at(base + 201), Outcome: audit.ApplyApplied})
		t.Approvals = append(t.Approvals, audit.ApprovalRow{ContractID: c, Environment: "prod", Decision: "approved", Approver: approver, PlanDigest: "p" + c,
			RequestedAt: at(base + 100), DecidedAt: *at(base + 190), RecordedAt: *at(base + 190), WaitSeconds: seconds(5400)})
		for j, in := range audit.ConfidenceInputs {
			t.Confidence = append(t.Confidence, audit.ConfidenceRow{EventID: "conf" + c, ContractID: c, Environment: "dev", Phase: "post-plan", Time: *at(base), Score: 0.875, Input: in, Value: float64(j) / 5})
		}
		t.PCRs = append(t.PCRs, audit.PCRRow{ContractID: c, RuleID: "nova.tags.required", Severity: "medium", Result: "fail"}, audit.PCRRow{ContractID: c, RuleID: "nova.tags.required", Severity: "medium", Result: "pass"})
		t.Decisions = append(t.Decisions, audit.DecisionRow{ContractID: c, RunID: "r1" + c, Environment: "dev", ChosenAction: "proceed", Score: 0.875, Outcome: "failed"})
	}
	return t
}

func render(t *testing.T, tables *audit.Tables) []byte {
	t.Helper()
	page, err := Render(Input{Tables: tables, Repo: "/srv/evidence.git", Head: strings.Repeat("a", 40), Events: 42, Generated: t0, Version: "test"})
	if err != nil {
		t.Fatal(err)
	}
	return page
}

func TestReportIsSelfContained(t *testing.T) {
	page := string(render(t, sampleTables("sre-oncall")))
	if strings.Contains(strings.ToLower(page), "<script") {
		t.Error("the report has a script")
	}
	for _, m := range regexp.MustCompile(`(?i)(?:src|href)\s*=\s*"([^"#][^"]*)"`).FindAllStringSubmatch(page, -1) {
		t.Errorf("the report loads %s", m[1])
	}
	for _, u := range regexp.MustCompile(`https?://[^\s"<]+`).FindAllString(page, -1) {
		if u != "http://www.w3.org/2000/svg" {
			t.Errorf("the report names %s", u)
		}
	}
	if !strings.Contains(page, "prefers-color-scheme: dark") || !strings.Contains(page, "Content-Security-Policy") {
		t.Error("the report lacks its dark scheme or its content security policy")
	}
}

// TestEveryChartHasItsNumbersInTheTable: the number behind every mark of
// every chart is a cell of the table under that chart.
func TestEveryChartHasItsNumbersInTheTable(t *testing.T) {
	page := render(t, sampleTables("sre-oncall"))
	charts, err := reporttest.CheckFigures(page)
	if err != nil {
		t.Fatal(err)
	}
	// Two contracts and all of them: eight charts each.
	if charts != 24 {
		t.Errorf("%d charts, want 24", charts)
	}
}

// TestReportEscapes puts markup into the values that land in the page's
// text, attributes, fragment links and SVG titles (approver names and
// contract ids, which come from the change under review) and parses the
// page as a browser would: no element, attribute or link is added.
func TestReportEscapes(t *testing.T) {
	evil := `x"><img src=x onerror=alert(1)><a href='javascript:alert(2)'>`
	tables := sampleTables(evil)
	for i := range tables.Applies {
		tables.Applies[i].ContractID = evil + tables.Applies[i].ContractID
	}
	for i := range tables.Approvals {
		tables.Approvals[i].ContractID = evil + tables.Approvals[i].ContractID
	}
	page := render(t, tables)
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	seen := false
	for n := range doc.Descendants() {
		if n.Type == html.TextNode && strings.Contains(n.Data, evil) {
			seen = true
		}
		if n.Type != html.ElementNode {
			continue
		}
		if n.Data == "img" || n.Data == "script" {
			t.Errorf("the page has a <%s>", n.Data)
		}
		for _, a := range n.Attr {
			if strings.HasPrefix(a.Key, "on") || (a.Key == "href" || a.Key == "src") && !strings.HasPrefix(a.Val, "#") {
				t.Errorf("<%s %s=%q> reached the page", n.Data, a.Key, a.Val)
			}
		}
	}
	if !seen {
		t.Error("the approver's name is missing from the page's text")
	}
}

func TestEmptyReport(t *testing.T) {
	page := render(t, &audit.Tables{})
	if n, err := reporttest.CheckFigures(page); err != nil || n != 0 || !bytes.Contains(page, []byte("No apply was authorized yet.")) {
		t.Errorf("empty report: %d charts, %v", n, err)
	}
}

func TestFormats(t *testing.T) {
	for d, want := range map[time.Duration]string{0: "0s", 42 * time.Second: "42s", 303 * time.Second: "5m 3s", 2*time.Hour + 5*time.Minute: "2h 5m", 76 * time.Hour: "3d 4h"} {
		if got := fmtDuration(d); got != want {
			t.Errorf("fmtDuration(%v) = %q, want %q", d, got, want)
		}
	}
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 3: 5, 7: 10, 12: 20, 1500: 2000} {
		if got := niceMax(v); got != want {
			t.Errorf("niceMax(%v) = %v, want %v", v, got, want)
		}
	}
}
