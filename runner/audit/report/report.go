// Package report renders the audit report: one self-contained HTML page
// (no script, no network, no font to fetch) that shows, per contract and
// over all of them, the promotion timeline with its approvers, how long
// approvals waited, how often and how fast changes reached production, how
// often applies failed and how long restoring took, the confidence signal's
// inputs over time, the policy rules that fail most, and whether the
// confidence signal was right. Charts are inline SVG computed here; every
// chart is followed by a table of the same numbers, for screen readers and
// for anyone who wants the figures. The page is rendered by html/template, so
// every value is escaped for where it lands.
package report

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/audit"
	"github.com/nova-platform/nova/templates"
)

// Input is what a report is made of.
type Input struct {
	Tables *audit.Tables
	// Repo is the evidence repo as shown (without credentials), Head the
	// commit the events were verified at, Events how many.
	Repo, Head string
	Events     int
	Generated  time.Time
	Version    string
}

// Render returns the report page.
func Render(in Input) ([]byte, error) {
	t, err := templates.Report()
	if err != nil {
		return nil, fmt.Errorf("parsing the report template: %w", err)
	}
	var b bytes.Buffer
	if err := t.Execute(&b, newPage(in)); err != nil {
		return nil, fmt.Errorf("rendering the report: %w", err)
	}
	return b.Bytes(), nil
}

func newPage(in Input) pageModel {
	byContract := in.Tables.ByContract()
	contracts := make([]string, 0, len(byContract))
	for c := range byContract {
		contracts = append(contracts, c)
	}
	slices.Sort(contracts)
	p := pageModel{Repo: in.Repo, Head: in.Head, Events: in.Events, Generated: fmtTime(in.Generated), Version: in.Version}
	if len(contracts) != 1 {
		p.Sections = append(p.Sections, newSection(audit.Measure(in.Tables, ""), "all", "All contracts"))
	}
	for _, c := range contracts {
		m := audit.Measure(byContract[c], "")
		m.ContractID = c
		p.Sections = append(p.Sections, newSection(m, "c-"+c, "Contract "+c))
	}
	return p
}

type pageModel struct {
	Repo, Head, Generated, Version string
	Events                         int
	Sections                       []section
}

type section struct {
	ID, Title, Span string
	Events          int
	Tiles           []tile
	Figures         []figure
	Calibration     []table
}

type tile struct{ Label, Value, Note string }

type figure struct {
	ID, Title, Lead string
	// Empty says why there is nothing to draw; no chart or table then.
	Empty  string
	Chart  *chart
	Legend []legendItem
	Table  table
	Note   string
}

type legendItem struct{ Class, Label string }

type table struct {
	Caption string
	Head    []string
	Rows    [][]string
}

func newSection(m *audit.Measures, id, title string) section {
	s := section{ID: id, Title: title, Events: m.Events}
	if !m.From.IsZero() {
		s.Span = fmtTime(m.From) + " to " + fmtTime(m.To) + " UTC"
	}
	s.Tiles = tiles(m)
	s.Figures = []figure{
		timeline(m, id), waits(m, id), deployments(m, id), leadTimes(m, id),
		failureRates(m, id), restores(m, id), confidence(m, id), rules(m, id), decommissions(m, id),
		breakGlass(m, id),
	}
	s.Calibration = calibration(m)
	return s
}

func tiles(m *audit.Measures) []tile {
	deploys := 0
	for _, d := range m.Deployments {
		for _, n := range d.Counts {
			deploys += n
		}
	}
	changes, failed := 0, 0
	for _, f := range m.Failures {
		changes += f.Changes
		failed += f.Failed + f.Unsure
	}
	rate := "—"
	if changes > 0 {
		rate = fmtRate(float64(failed) / float64(changes))
	}
	var leads, waits []time.Duration
	for _, l := range m.LeadTimes {
		leads = append(leads, l.Lead)
	}
	for _, w := range m.Waits {
		waits = append(waits, w.Wait)
	}
	applied, scored := 0, 0
	for _, c := range m.Calibration {
		applied += c.Applied
		scored += c.Applied + c.Failed + c.Indeterminate
	}
	clean := "—"
	if scored > 0 {
		clean = fmtRate(float64(applied) / float64(scored))
	}
	out := []tile{
		{"Deployments", fmtInt(deploys), "applies that changed something"},
		{"Change failure rate", rate, fmt.Sprintf("%d of %d changes failed or ended unknown", failed, changes)},
		{"Lead time to prod", median(leads), "median, first plan to prod apply"},
		{"Approval wait", median(waits), "median, request to decision"},
		{"Decisions applied cleanly", clean, fmt.Sprintf("%d of %d decisions that reached an apply", applied, scored)},
	}
	if len(m.BreakGlass) > 0 {
		// Only where break-glass was asked for: an emergency path nobody
		// took is no figure to watch.
		open, used := 0, 0
		for _, b := range m.BreakGlass {
			if b.Review == audit.ReviewOpen {
				open++
			}
			if b.Uses > 0 {
				used++
			}
		}
		out = append(out, tile{"Break-glass reviews open", fmtInt(open), fmt.Sprintf("of %d grant(s) used, %d request(s)", used, len(m.BreakGlass))})
	}
	return out
}

func median(ds []time.Duration) string {
	if len(ds) == 0 {
		return "—"
	}
	ds = slices.Clone(ds)
	slices.Sort(ds)
	if len(ds)%2 == 1 {
		return fmtDuration(ds[len(ds)/2])
	}
	return fmtDuration((ds[len(ds)/2-1] + ds[len(ds)/2]) / 2)
}

// truncated says which part of a long series a figure shows.
func truncated(m *audit.Measures, key string, shown int) string {
	if n, ok := m.Truncated[key]; ok {
		return fmt.Sprintf("Showing the latest %d of %d.", shown, n)
	}
	return ""
}

func applyClass(a audit.ApplyRow) string {
	switch {
	case a.Outcome == audit.ApplyFailed:
		return "fail"
	case a.Outcome == audit.ApplyIndeterminate:
		return "unsure"
	case a.Outcome == audit.ApplyNoChanges:
		return "same"
	}
	return "ok"
}

func applyOutcome(a audit.ApplyRow) string {
	out := a.Outcome
	if a.Operation == audit.OperationDestroy {
		out = "destroy " + out
	}
	if a.Resolution != "" {
		out += ", resolved " + a.Resolution
	}
	if a.RollbackTo != "" {
		out += ", rollback to change " + short(a.RollbackTo)
		if a.Supersedes != "" {
			out += " superseding " + short(a.Supersedes)
		}
	}
	return out
}

func applyAt(a audit.ApplyRow) time.Time {
	if a.EndedAt != nil {
		return *a.EndedAt
	}
	return a.AuthorizedAt
}

func timeline(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-timeline", Title: "Promotion timeline",
		Lead: "Every authorized apply, by environment; a line joins one change's first successful apply in each environment it reached (a change is what Nova identified: the contract, its stack and modules, the engine; before changes were identified, its commit)."}
	if len(m.Attempts) == 0 {
		f.Empty = "No apply was authorized yet."
		return f
	}
	lanes := make([]audit.ApplyRow, 0, len(m.Attempts))
	var ls []lane
	index := map[string]int{} // event id → position in the chart's points
	n := 0
	for _, env := range audit.Environments {
		l := lane{Label: env}
		for _, a := range m.Attempts {
			if a.Environment != env {
				continue
			}
			at := applyAt(a)
			l.Points = append(l.Points, point{At: at, Text: fmtTime(at), Tooltip: fmt.Sprintf("%s %s: %s, approved by %s", env, fmtTime(at), applyOutcome(a), a.Approver)})
			l.Class = append(l.Class, applyClass(a))
			index[a.EventID] = n
			n++
			lanes = append(lanes, a)
		}
		ls = append(ls, l)
	}
	var joins [][2]int
	for _, p := range m.Promotions {
		for i := 1; i < len(p.Steps); i++ {
			joins = append(joins, [2]int{index[p.Steps[i-1].EventID], index[p.Steps[i].EventID]})
		}
	}
	c := timelineChart(f.ID+"-chart", f.Title, fmt.Sprintf("%d applies over %d environments", len(m.Attempts), len(audit.Environments)), ls, joins)
	f.Chart = &c
	f.Legend = []legendItem{{"ok", "applied"}, {"same", "no changes"}, {"fail", "failed"}, {"unsure", "indeterminate"}}
	f.Table = table{Caption: "Applies in the timeline", Head: []string{"Contract", "Change", "Environment", "At (UTC)", "Outcome", "Approver", "Plan"}}
	for _, a := range lanes {
		f.Table.Rows = append(f.Table.Rows, []string{a.ContractID, short(audit.Version(a.Change, a.Commit, a.ContractDigest)), a.Environment, fmtTime(applyAt(a)), applyOutcome(a), a.Approver, short(a.PlanDigest)})
	}
	f.Note = truncated(m, "attempts", len(m.Attempts))
	return f
}

func waits(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-waits", Title: "Approval wait", Lead: "From the first request of a plan's approval to the approver's decision, for each approval."}
	if len(m.Waits) == 0 {
		f.Empty = "No approval followed a recorded request yet."
		return f
	}
	var groups []barGroup
	var most time.Duration
	for _, w := range m.Waits {
		most = max(most, w.Wait)
		groups = append(groups, barGroup{Label: w.Environment, Bars: []bar{{Value: w.Wait.Seconds(), Text: fmtDuration(w.Wait), Class: "env-" + w.Environment,
			Tooltip: fmt.Sprintf("%s approved plan %s for %s after %s", w.Approver, short(w.PlanDigest), w.Environment, fmtDuration(w.Wait))}}})
	}
	top := niceDuration(most)
	c := barChart(f.ID+"-chart", f.Title, fmt.Sprintf("%d approvals, longest wait %s", len(m.Waits), fmtDuration(most)), groups, top.Seconds(), secondsLabel)
	f.Chart = &c
	f.Legend = envLegend()
	f.Table = table{Caption: "Approval waits", Head: []string{"Contract", "Environment", "Approver", "Plan", "Requested (UTC)", "Decided (UTC)", "Wait"}}
	for _, w := range m.Waits {
		f.Table.Rows = append(f.Table.Rows, []string{w.ContractID, w.Environment, w.Approver, short(w.PlanDigest), fmtTime(w.RequestedAt), fmtTime(w.DecidedAt), fmtDuration(w.Wait)})
	}
	f.Note = truncated(m, "waits", len(m.Waits))
	return f
}

func secondsLabel(v float64) string { return fmtDuration(time.Duration(v * float64(time.Second))) }

func envLegend() []legendItem {
	var out []legendItem
	for _, e := range audit.Environments {
		out = append(out, legendItem{"env-" + e, e})
	}
	return out
}

func deployments(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-deploys", Title: "Deployment frequency", Lead: fmt.Sprintf("Applies that changed something (or were resolved as applied), per %s and environment.", m.PeriodName)}
	if len(m.Deployments) == 0 {
		f.Empty = "Nothing was deployed yet."
		return f
	}
	layout := "2006-01-02"
	most := 0
	var groups []barGroup
	for _, d := range m.Deployments {
		g := barGroup{Label: d.Start.Format("01-02")}
		for _, env := range audit.Environments {
			if n := d.Counts[env]; n > 0 {
				most = max(most, n)
				g.Bars = append(g.Bars, bar{Value: float64(n), Text: fmtInt(n), Class: "env-" + env, Tooltip: fmt.Sprintf("%s %s: %d deployment(s) to %s", m.PeriodName, d.Start.Format(layout), n, env)})
			}
		}
		groups = append(groups, g)
	}
	top := niceMax(float64(most))
	c := barChart(f.ID+"-chart", f.Title, fmt.Sprintf("deployments per %s over %d %ss", m.PeriodName, len(m.Deployments), m.PeriodName), groups, top, func(v float64) string { return fmt.Sprintf("%g", v) })
	f.Chart = &c
	f.Legend = envLegend()
	f.Table = table{Caption: "Deployments per " + m.PeriodName, Head: slices.Concat([]string{strings.ToUpper(m.PeriodName[:1]) + m.PeriodName[1:] + " starting"}, audit.Environments, []string{"Total"})}
	for _, d := range m.Deployments {
		row, total := []string{d.Start.Format(layout)}, 0
		for _, env := range audit.Environments {
			row = append(row, fmtInt(d.Counts[env]))
			total += d.Counts[env]
		}
		f.Table.Rows = append(f.Table.Rows, append(row, fmtInt(total)))
	}
	f.Note = truncated(m, "deployments", len(m.Deployments))
	return f
}

func leadTimes(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-lead", Title: "Lead time to production", Lead: "From a change's first plan, in any environment, to its apply in prod."}
	if len(m.LeadTimes) == 0 {
		f.Empty = "No change reached prod yet."
		return f
	}
	var groups []barGroup
	var most time.Duration
	for _, l := range m.LeadTimes {
		most = max(most, l.Lead)
		groups = append(groups, barGroup{Label: short(l.Version), Bars: []bar{{Value: l.Lead.Seconds(), Text: fmtDuration(l.Lead), Class: "env-prod",
			Tooltip: fmt.Sprintf("change %s of %s: planned %s, in prod %s", short(l.Version), l.ContractID, fmtTime(l.PlannedAt), fmtTime(l.AppliedAt))}}})
	}
	c := barChart(f.ID+"-chart", f.Title, fmt.Sprintf("%d prod deployments, longest lead time %s", len(m.LeadTimes), fmtDuration(most)), groups, niceDuration(most).Seconds(), secondsLabel)
	f.Chart = &c
	f.Table = table{Caption: "Lead times", Head: []string{"Contract", "Change", "First plan (UTC)", "Applied in prod (UTC)", "Lead time"}}
	for _, l := range m.LeadTimes {
		f.Table.Rows = append(f.Table.Rows, []string{l.ContractID, short(l.Version), fmtTime(l.PlannedAt), fmtTime(l.AppliedAt), fmtDuration(l.Lead)})
	}
	f.Note = truncated(m, "leadTimes", len(m.LeadTimes))
	return f
}

func failureRates(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-cfr", Title: "Change failure rate", Lead: "Of the applies that were to change something, the share that failed or ended with an unknown outcome."}
	changes := 0
	for _, r := range m.Failures {
		changes += r.Changes
	}
	if changes == 0 {
		f.Empty = "No change was applied yet."
		return f
	}
	var groups []barGroup
	for _, r := range m.Failures {
		g := barGroup{Label: r.Environment}
		if r.Changes > 0 {
			g.Bars = []bar{{Value: r.Rate, Text: fmtRate(r.Rate), Class: "fail", Tooltip: fmt.Sprintf("%s: %d failed and %d indeterminate of %d changes", r.Environment, r.Failed, r.Unsure, r.Changes)}}
		}
		groups = append(groups, g)
	}
	c := barChart(f.ID+"-chart", f.Title, "failure rate per environment", groups, 1, fmtRate)
	f.Chart = &c
	f.Table = table{Caption: "Change failure rate and time to restore per environment", Head: []string{"Environment", "Changes", "Failed", "Indeterminate", "Failure rate", "Restored", "Median time to restore"}}
	for _, r := range m.Failures {
		rate, restore := "—", "—"
		if r.Changes > 0 {
			rate = fmtRate(r.Rate)
		}
		if r.Restored > 0 {
			restore = fmtDuration(r.MedianRestore)
		}
		f.Table.Rows = append(f.Table.Rows, []string{r.Environment, fmtInt(r.Changes), fmtInt(r.Failed), fmtInt(r.Unsure), rate, fmtInt(r.Restored), restore})
	}
	return f
}

func restores(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-restore", Title: "Time to restore", Lead: "From a failed or indeterminate apply until the environment was healthy again: the apply resolved, or the next successful apply there."}
	if len(m.Restores) == 0 {
		f.Empty = "No apply failed."
		return f
	}
	var groups []barGroup
	var most time.Duration
	for _, r := range m.Restores {
		g := barGroup{Label: r.Environment}
		if !r.RestoredAt.IsZero() {
			most = max(most, r.Duration)
			g.Bars = []bar{{Value: r.Duration.Seconds(), Text: fmtDuration(r.Duration), Class: "env-" + r.Environment,
				Tooltip: fmt.Sprintf("%s %s at %s, restored by %s after %s", r.Environment, r.Outcome, fmtTime(r.FailedAt), r.By, fmtDuration(r.Duration))}}
		}
		groups = append(groups, g)
	}
	c := barChart(f.ID+"-chart", f.Title, fmt.Sprintf("%d failures", len(m.Restores)), groups, niceDuration(most).Seconds(), secondsLabel)
	f.Chart = &c
	f.Legend = envLegend()
	f.Table = table{Caption: "Failures and their restoration", Head: []string{"Contract", "Environment", "Failed (UTC)", "Outcome", "Reason", "Restored (UTC)", "By", "Time to restore"}}
	for _, r := range m.Restores {
		restored, by, took := "not restored", "—", "—"
		if !r.RestoredAt.IsZero() {
			restored, by, took = fmtTime(r.RestoredAt), r.By, fmtDuration(r.Duration)
		}
		f.Table.Rows = append(f.Table.Rows, []string{r.ContractID, r.Environment, fmtTime(r.FailedAt), r.Outcome, orDash(r.Reason), restored, by, took})
	}
	f.Note = truncated(m, "restores", len(m.Restores))
	return f
}

func confidence(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-confidence", Title: "Confidence per input over time", Lead: "Each confidence signal's six inputs and its score (0 to 1), pre- and post-plan."}
	if len(m.Confidence) == 0 {
		f.Empty = "No confidence signal was computed yet."
		return f
	}
	names := append(slices.Clone(audit.ConfidenceInputs), "score")
	all := make([]series, len(names))
	for i, n := range names {
		all[i].Class = "s-" + n
	}
	f.Table = table{Caption: "Confidence signals", Head: slices.Concat([]string{"Time (UTC)", "Contract", "Environment", "Phase"}, names)}
	for _, p := range m.Confidence {
		row := []string{fmtTime(p.Time), p.ContractID, p.Environment, p.Phase}
		for i, n := range names {
			v, ok := p.Inputs[n]
			if n == "score" {
				v, ok = p.Score, true
			}
			if !ok {
				row = append(row, "—")
				continue
			}
			all[i].Points = append(all[i].Points, point{At: p.Time, Value: v, Text: fmtScore(v), Tooltip: fmt.Sprintf("%s %s %s: %s %s", p.Environment, p.Phase, fmtTime(p.Time), n, fmtScore(v))})
			row = append(row, fmtScore(v))
		}
		f.Table.Rows = append(f.Table.Rows, row)
	}
	c := lineChart(f.ID+"-chart", f.Title, fmt.Sprintf("%d confidence signals", len(m.Confidence)), all, 1, func(v float64) string { return fmt.Sprintf("%.2f", v) })
	f.Chart = &c
	for _, n := range names {
		f.Legend = append(f.Legend, legendItem{"s-" + n, n})
	}
	f.Note = truncated(m, "confidence", len(m.Confidence))
	return f
}

func rules(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-rules", Title: "Policy rules that fail most", Lead: "How often each rule failed, over every evaluation recorded (pre-plan, plan-level and NFR checks)."}
	if len(m.Rules) == 0 {
		f.Empty = "No policy rule failed."
		return f
	}
	most := 0
	var rows []hbar
	for _, r := range m.Rules {
		most = max(most, r.Failed)
		rows = append(rows, hbar{Label: r.RuleID, bar: bar{Value: float64(r.Failed), Text: fmtInt(r.Failed), Class: "sev-" + r.Severity,
			Tooltip: fmt.Sprintf("%s (%s) failed %d of %d times", r.RuleID, r.Severity, r.Failed, r.Evaluations)}})
	}
	c := hbarChart(f.ID+"-chart", f.Title, fmt.Sprintf("top %d failing rules", len(m.Rules)), rows, niceMax(float64(most)), func(v float64) string { return fmt.Sprintf("%g", v) })
	f.Chart = &c
	for _, s := range runner.Severities {
		f.Legend = append(f.Legend, legendItem{"sev-" + string(s), string(s)})
	}
	f.Table = table{Caption: "Failing policy rules", Head: []string{"Rule", "Severity", "Failed", "Evaluations", "Failure share"}}
	for _, r := range m.Rules {
		f.Table.Rows = append(f.Table.Rows, []string{r.RuleID, r.Severity, fmtInt(r.Failed), fmtInt(r.Evaluations), fmtRate(float64(r.Failed) / float64(r.Evaluations))})
	}
	if n, ok := m.Truncated["rules"]; ok {
		f.Note = fmt.Sprintf("Showing the %d rules that failed most of %d.", len(m.Rules), n)
	}
	return f
}

// breakGlass lists every break-glass request with its grant, its uses
// and whether its post-incident review is still open.
func breakGlass(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-breakglass", Title: "Break-glass", Lead: "Each emergency request, who granted it, how often it was used to apply without the environment's approvals, and whether its post-incident review is recorded (nova break-glass review)."}
	if len(m.BreakGlass) == 0 {
		f.Empty = "No break-glass was requested."
		return f
	}
	open := 0
	f.Table = table{Caption: "Break-glass requests", Head: []string{"Requested", "Contract", "Environment", "Requester", "Reason", "Grant", "Granted by", "Until", "Revoked by", "Uses", "Review"}}
	for _, r := range m.BreakGlass {
		until, review := "", "never used"
		if r.ExpiresAt != nil {
			until = fmtTime(*r.ExpiresAt)
		}
		switch r.Review {
		case audit.ReviewOpen:
			open++
			review = "review open"
		case audit.ReviewRecorded:
			review = "review recorded"
		}
		f.Table.Rows = append(f.Table.Rows, []string{fmtTime(r.RequestedAt), r.ContractID, r.Environment, r.Requester, r.Reason, orDash(r.GrantEventID),
			orDash(strings.ReplaceAll(r.Approvers, ";", ", ")), orDash(until), orDash(r.RevokedBy), fmtInt(int(r.Uses)), review})
	}
	if open > 0 {
		f.Note = fmt.Sprintf("%d post-incident review(s) open.", open)
	}
	return f
}

// calibration is one table per environment: for each score band, what
// became of the changes whose final decision scored in it.
func calibration(m *audit.Measures) []table {
	var out []table
	for _, env := range audit.Environments {
		t := table{Caption: "Calibration in " + env, Head: []string{"Score band", "Decisions", "Proceed", "Applied", "Failed", "Indeterminate", "Rejected", "Pending", "Applied cleanly"}}
		for _, c := range m.Calibration {
			if c.Environment != env {
				continue
			}
			clean := "—"
			if c.Scored {
				clean = fmtRate(c.CleanRate)
			}
			t.Rows = append(t.Rows, []string{c.Band, fmtInt(c.Decisions), fmtInt(c.Proceed), fmtInt(c.Applied), fmtInt(c.Failed), fmtInt(c.Indeterminate), fmtInt(c.Rejected), fmtInt(c.Pending), clean})
		}
		if len(t.Rows) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// decommissions lists the completed destroys: when each environment
// stopped running the contract, what it ran, and who approved.
func decommissions(m *audit.Measures, id string) figure {
	f := figure{ID: id + "-decommissions", Title: "Decommissions",
		Lead: "Every destroy that completed, in the order dr → prod → qa → dev the gate holds it to; the environment runs nothing of the contract since."}
	if len(m.Decommissions) == 0 {
		f.Empty = "Nothing was destroyed."
		return f
	}
	f.Table = table{Caption: "Completed destroys", Head: []string{"Contract", "Environment", "Destroyed (UTC)", "Change", "Approvers", "Plan", "State"}}
	for _, d := range m.Decommissions {
		state := "kept by the backend, empty"
		if d.StateRemoved {
			state = "removed"
		}
		f.Table.Rows = append(f.Table.Rows, []string{d.ContractID, d.Environment, fmtTime(d.DestroyedAt), orDash(short(d.Change)), orDash(d.Approvers), short(d.PlanDigest), state})
	}
	return f
}

func orDash(s string) string {
	if s == "" {
		return "—"
	}
	return s
}
