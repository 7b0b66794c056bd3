package audit

import (
	"cmp"
	"slices"
	"strconv"
	"time"

	"github.com/nova-platform/nova/runner"
)

// The measures the report draws, computed from the fact tables export
// writes, so a number in the report can be recomputed from the export.

// Environments in promotion order.
var Environments = []string{string(runner.Dev), string(runner.QA), string(runner.Prod), string(runner.DR)}

// ConfidenceInputs are the six inputs of the confidence signal, in the
// order the report lists them.
var ConfidenceInputs = []string{"schema", "policy", "nfr", "tests", "cost", "provenance"}

// MaxPoints bounds the points a series keeps (the latest ones): a chart and
// the table under it stay readable over years of history.
const MaxPoints = 200

// Measures are what the report shows for one contract, or for all.
type Measures struct {
	// ContractID is empty for the measures over every contract.
	ContractID string
	Events     int
	From, To   time.Time

	// Attempts are the authorized applies in time order: the promotion
	// timeline's points; Promotions connect one contract version's
	// successful applies across environments.
	Attempts   []ApplyRow
	Promotions []Promotion
	Waits      []Wait
	// Deployments counts successful applies with changes per period.
	Deployments []DeployPeriod
	PeriodName  string // "day" or "week"
	LeadTimes   []LeadTime
	Failures    []FailureRate
	Restores    []Restore
	Confidence  []ConfidencePoint
	Rules       []RuleCount
	Calibration []Calibration
	// BreakGlass are the break-glass requests, oldest first.
	BreakGlass []BreakGlassRow
	// Decommissions are the completed destroys, oldest first.
	Decommissions []DecommissionRow
	// Truncated names the series that kept only their latest MaxPoints.
	Truncated map[string]int
}

// Promotion is one change's way through the environments.
type Promotion struct {
	ContractID, Version string
	Steps               []ApplyRow
}

// Version names the change a run or an apply is about, so one change can
// be followed from dev to dr: the change Nova identified (contract, stack
// and modules, engine), which is one across environments even where each
// planned another commit (a pull request's head, the commit that merged
// it); for runs recorded before changes were identified, its commit, or
// outside a git checkout its contract digest (which, binding the
// environment too, then only follows it within one environment).
func Version(change, commit, contractDigest string) string {
	switch {
	case change != "":
		return change
	case commit != "":
		return commit
	}
	return contractDigest
}

// Wait is how long one approval took.
type Wait struct {
	ContractID, Environment, Approver, PlanDigest string
	RequestedAt, DecidedAt                        time.Time
	Wait                                          time.Duration
}

// DeployPeriod counts deployments per environment in one day or week.
type DeployPeriod struct {
	Start  time.Time
	Counts map[string]int
}

// LeadTime is the time from a change's first plan to its apply in prod.
type LeadTime struct {
	ContractID, Version  string
	PlannedAt, AppliedAt time.Time
	Lead                 time.Duration
}

// FailureRate is one environment's change failure rate.
type FailureRate struct {
	Environment             string
	Changes, Failed, Unsure int // Unsure: indeterminate
	// Rate is (Failed+Unsure)/Changes, NaN-free: 0 without changes.
	Rate float64
	// MedianRestore is over the restored failures; zero when none.
	MedianRestore time.Duration
	Restored      int
}

// Restore is one failed or indeterminate apply and when its environment
// was healthy again: resolved, or applied successfully since.
type Restore struct {
	ContractID, Environment, Outcome, Reason string
	FailedAt                                 time.Time
	// RestoredAt is zero while the environment is not restored.
	RestoredAt time.Time
	By         string // "resolution" or "apply"
	Duration   time.Duration
}

// ConfidencePoint is one confidence signal.
type ConfidencePoint struct {
	ContractID, Environment, Phase string
	Time                           time.Time
	Score                          float64
	Inputs                         map[string]float64
}

// RuleCount is how often a policy rule failed.
type RuleCount struct {
	RuleID, Severity    string
	Failed, Evaluations int
}

// Calibration answers "how often was the confidence signal right?" for one
// environment and score band: of the changes whose final decision had a
// score in the band, how many were applied cleanly.
type Calibration struct {
	Environment                                       string
	Band                                              string // "0.90–0.95"
	Low, High                                         float64
	Decisions, Proceed                                int
	Applied, Failed, Indeterminate, Rejected, Pending int
	// CleanRate is Applied/(Applied+Failed+Indeterminate); Scored is false
	// when no decision of the band reached an apply.
	CleanRate float64
	Scored    bool
}

// calibrationBands are the score bands of the calibration table: the
// frozen thresholds (dev 0.50, qa 0.75, prod 0.90, dr 0.95) are edges.
var calibrationBands = []float64{0, 0.5, 0.75, 0.9, 0.95, 1.0000001}

// Measure computes the measures of the tables' rows about contract (every
// contract when it is empty).
func Measure(t *Tables, contract string) *Measures {
	m := &Measures{ContractID: contract, Truncated: map[string]int{}}
	in := func(c string) bool { return contract == "" || c == contract }
	for _, r := range t.Runs {
		if !in(r.ContractID) {
			continue
		}
		m.Events += int(r.EventCount)
		if m.From.IsZero() || r.StartedAt.Before(m.From) {
			m.From = r.StartedAt
		}
		if r.EndedAt.After(m.To) {
			m.To = r.EndedAt
		}
	}
	for _, r := range t.BreakGlass {
		if in(r.ContractID) {
			m.BreakGlass = append(m.BreakGlass, r)
		}
	}
	var applies []ApplyRow
	for _, a := range t.Applies {
		if in(a.ContractID) {
			applies = append(applies, a)
		}
	}
	slices.SortStableFunc(applies, func(a, b ApplyRow) int { return a.AuthorizedAt.Compare(b.AuthorizedAt) })
	m.Attempts = m.latest("attempts", applies)
	// A destroy deploys nothing: it is shown in the timeline and counted
	// among decommissions, never as a deployment, a promotion or a
	// change that failed.
	deploys := slices.DeleteFunc(slices.Clone(applies), func(a ApplyRow) bool { return a.Operation == OperationDestroy })
	m.Promotions = promotions(slices.DeleteFunc(slices.Clone(m.Attempts), func(a ApplyRow) bool { return a.Operation == OperationDestroy }))
	m.waits(t, in)
	m.deployments(deploys)
	m.leadTimes(t, deploys, in)
	m.failures(deploys)
	for _, d := range t.Decommissions {
		if in(d.ContractID) {
			m.Decommissions = append(m.Decommissions, d)
		}
	}
	m.confidence(t, in)
	m.rules(t, in)
	m.calibration(t, in)
	return m
}

// latest keeps the last MaxPoints of a time-ordered series and notes the
// cut.
func (m *Measures) latest(name string, rows []ApplyRow) []ApplyRow {
	if len(rows) > MaxPoints {
		m.Truncated[name] = len(rows)
		return rows[len(rows)-MaxPoints:]
	}
	return rows
}

func succeeded(a ApplyRow) bool {
	return a.Outcome == ApplyApplied || a.Outcome == ApplyNoChanges || a.Resolution == runner.ResolvedApplied
}

func promotions(attempts []ApplyRow) []Promotion {
	var out []Promotion
	index := map[string]int{}
	for _, a := range attempts {
		v := Version(a.Change, a.Commit, a.ContractDigest)
		if !succeeded(a) || v == "" {
			continue
		}
		key := a.ContractID + " " + v
		i, ok := index[key]
		if !ok {
			i = len(out)
			index[key] = i
			out = append(out, Promotion{ContractID: a.ContractID, Version: v})
		}
		p := &out[i]
		if !slices.ContainsFunc(p.Steps, func(s ApplyRow) bool { return s.Environment == a.Environment }) {
			p.Steps = append(p.Steps, a)
		}
	}
	return out
}

func (m *Measures) waits(t *Tables, in func(string) bool) {
	for _, a := range t.Approvals {
		if in(a.ContractID) && a.Decision == "approved" && a.RequestedAt != nil && a.WaitSeconds != nil {
			m.Waits = append(m.Waits, Wait{
				ContractID: a.ContractID, Environment: a.Environment, Approver: a.Approver, PlanDigest: a.PlanDigest,
				RequestedAt: *a.RequestedAt, DecidedAt: a.DecidedAt, Wait: time.Duration(*a.WaitSeconds * float64(time.Second)),
			})
		}
	}
	slices.SortStableFunc(m.Waits, func(a, b Wait) int { return a.DecidedAt.Compare(b.DecidedAt) })
	if len(m.Waits) > MaxPoints {
		m.Truncated["waits"] = len(m.Waits)
		m.Waits = m.Waits[len(m.Waits)-MaxPoints:]
	}
}

// deployments counts applies that changed something (or were resolved as
// applied) per day, or per week when the history spans more than two
// months.
func (m *Measures) deployments(applies []ApplyRow) {
	m.PeriodName = "day"
	if m.To.Sub(m.From) > 62*24*time.Hour {
		m.PeriodName = "week"
	}
	index := map[time.Time]int{}
	for _, a := range applies {
		if a.Outcome == ApplyNoChanges || !succeeded(a) {
			continue
		}
		at := a.AuthorizedAt
		if a.EndedAt != nil {
			at = *a.EndedAt
		}
		start := periodStart(at, m.PeriodName)
		i, ok := index[start]
		if !ok {
			i = len(m.Deployments)
			index[start] = i
			m.Deployments = append(m.Deployments, DeployPeriod{Start: start, Counts: map[string]int{}})
		}
		m.Deployments[i].Counts[a.Environment]++
	}
	slices.SortFunc(m.Deployments, func(a, b DeployPeriod) int { return a.Start.Compare(b.Start) })
	if len(m.Deployments) > MaxPoints {
		m.Truncated["deployments"] = len(m.Deployments)
		m.Deployments = m.Deployments[len(m.Deployments)-MaxPoints:]
	}
}

func periodStart(t time.Time, period string) time.Time {
	t = t.UTC()
	day := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	if period == "week" {
		// ISO weeks start on Monday.
		return day.AddDate(0, 0, -((int(day.Weekday()) + 6) % 7))
	}
	return day
}

// leadTimes measures, for each successful prod apply, the time since the
// first plan of the same change in any environment.
func (m *Measures) leadTimes(t *Tables, applies []ApplyRow, in func(string) bool) {
	first := map[string]time.Time{}
	for _, r := range t.Runs {
		v := Version(r.Change, r.Commit, r.ContractDigest)
		if !in(r.ContractID) || r.PlannedAt == nil || v == "" {
			continue
		}
		key := r.ContractID + " " + v
		if f, ok := first[key]; !ok || r.PlannedAt.Before(f) {
			first[key] = *r.PlannedAt
		}
	}
	for _, a := range applies {
		if a.Environment != string(runner.Prod) || !succeeded(a) || a.EndedAt == nil {
			continue
		}
		v := Version(a.Change, a.Commit, a.ContractDigest)
		planned, ok := first[a.ContractID+" "+v]
		if !ok {
			continue
		}
		applied := *a.EndedAt
		if a.ResolvedAt != nil && a.Outcome == ApplyIndeterminate {
			applied = *a.ResolvedAt
		}
		m.LeadTimes = append(m.LeadTimes, LeadTime{ContractID: a.ContractID, Version: v, PlannedAt: planned, AppliedAt: applied, Lead: applied.Sub(planned)})
	}
	if len(m.LeadTimes) > MaxPoints {
		m.Truncated["leadTimes"] = len(m.LeadTimes)
		m.LeadTimes = m.LeadTimes[len(m.LeadTimes)-MaxPoints:]
	}
}

// failures computes each environment's change failure rate and the time
// to restore after each failed or indeterminate apply: until it was
// resolved, or the next successful apply of the contract there, whichever
// came first.
func (m *Measures) failures(applies []ApplyRow) {
	rates := map[string]*FailureRate{}
	rate := func(env string) *FailureRate {
		if rates[env] == nil {
			rates[env] = &FailureRate{Environment: env}
		}
		return rates[env]
	}
	for _, e := range Environments {
		rate(e)
	}
	for i, a := range applies {
		if a.Outcome == ApplyNoChanges {
			continue
		}
		r := rate(a.Environment)
		r.Changes++
		if a.Outcome != ApplyFailed && a.Outcome != ApplyIndeterminate {
			continue
		}
		if a.Outcome == ApplyFailed {
			r.Failed++
		} else {
			r.Unsure++
		}
		failedAt := a.AuthorizedAt
		if a.EndedAt != nil {
			failedAt = *a.EndedAt
		}
		res := Restore{ContractID: a.ContractID, Environment: a.Environment, Outcome: a.Outcome, Reason: a.Reason, FailedAt: failedAt}
		if a.ResolvedAt != nil {
			res.RestoredAt, res.By = *a.ResolvedAt, "resolution"
		}
		for _, next := range applies[i+1:] {
			if next.ContractID != a.ContractID || next.Environment != a.Environment || next.EndedAt == nil || !succeeded(next) || next.Outcome == ApplyIndeterminate {
				continue
			}
			if res.RestoredAt.IsZero() || next.EndedAt.Before(res.RestoredAt) {
				res.RestoredAt, res.By = *next.EndedAt, "apply"
			}
			break
		}
		if !res.RestoredAt.IsZero() {
			res.Duration = res.RestoredAt.Sub(res.FailedAt)
		}
		m.Restores = append(m.Restores, res)
	}
	for _, r := range rates {
		if r.Changes > 0 {
			r.Rate = float64(r.Failed+r.Unsure) / float64(r.Changes)
		}
		var ds []time.Duration
		for _, res := range m.Restores {
			if res.Environment == r.Environment && !res.RestoredAt.IsZero() {
				ds = append(ds, res.Duration)
			}
		}
		r.Restored = len(ds)
		if len(ds) > 0 {
			slices.Sort(ds)
			r.MedianRestore = ds[len(ds)/2]
			if len(ds)%2 == 0 {
				r.MedianRestore = (ds[len(ds)/2-1] + ds[len(ds)/2]) / 2
			}
		}
		m.Failures = append(m.Failures, *r)
	}
	slices.SortFunc(m.Failures, func(a, b FailureRate) int { return cmp.Compare(envOrder(a.Environment), envOrder(b.Environment)) })
	if len(m.Restores) > MaxPoints {
		m.Truncated["restores"] = len(m.Restores)
		m.Restores = m.Restores[len(m.Restores)-MaxPoints:]
	}
}

func envOrder(env string) int {
	if i := slices.Index(Environments, env); i >= 0 {
		return i
	}
	return len(Environments)
}

func (m *Measures) confidence(t *Tables, in func(string) bool) {
	index := map[string]int{}
	for _, c := range t.Confidence {
		if !in(c.ContractID) {
			continue
		}
		i, ok := index[c.EventID]
		if !ok {
			i = len(m.Confidence)
			index[c.EventID] = i
			m.Confidence = append(m.Confidence, ConfidencePoint{ContractID: c.ContractID, Environment: c.Environment, Phase: c.Phase, Time: c.Time, Score: c.Score, Inputs: map[string]float64{}})
		}
		m.Confidence[i].Inputs[c.Input] = c.Value
	}
	slices.SortStableFunc(m.Confidence, func(a, b ConfidencePoint) int { return a.Time.Compare(b.Time) })
	if len(m.Confidence) > MaxPoints {
		m.Truncated["confidence"] = len(m.Confidence)
		m.Confidence = m.Confidence[len(m.Confidence)-MaxPoints:]
	}
}

// rules lists the policy rules that failed, most failures first (at most
// ten).
func (m *Measures) rules(t *Tables, in func(string) bool) {
	index := map[string]int{}
	for _, p := range t.PCRs {
		if !in(p.ContractID) {
			continue
		}
		i, ok := index[p.RuleID]
		if !ok {
			i = len(m.Rules)
			index[p.RuleID] = i
			m.Rules = append(m.Rules, RuleCount{RuleID: p.RuleID, Severity: p.Severity})
		}
		r := &m.Rules[i]
		r.Evaluations++
		if p.Result == string(runner.PCRFail) {
			r.Failed++
		}
		if severityRank(p.Severity) < severityRank(r.Severity) {
			r.Severity = p.Severity
		}
	}
	m.Rules = slices.DeleteFunc(m.Rules, func(r RuleCount) bool { return r.Failed == 0 })
	slices.SortStableFunc(m.Rules, func(a, b RuleCount) int {
		return cmp.Or(cmp.Compare(b.Failed, a.Failed), cmp.Compare(severityRank(a.Severity), severityRank(b.Severity)), cmp.Compare(a.RuleID, b.RuleID))
	})
	if len(m.Rules) > 10 {
		m.Truncated["rules"] = len(m.Rules)
		m.Rules = m.Rules[:10]
	}
}

func severityRank(s string) int {
	if i := slices.Index(runner.Severities, runner.Severity(s)); i >= 0 {
		return i
	}
	return len(runner.Severities)
}

// calibration takes each run's final decision (the last one it made: the
// post-plan decision when the run planned) and counts outcomes by
// environment and score band.
func (m *Measures) calibration(t *Tables, in func(string) bool) {
	final := map[string]DecisionRow{}
	var order []string
	for _, d := range t.Decisions {
		if !in(d.ContractID) {
			continue
		}
		key := d.ContractID + " " + d.RunID
		if _, ok := final[key]; !ok {
			order = append(order, key)
		}
		final[key] = d
	}
	rows := map[string]*Calibration{}
	for _, key := range order {
		d := final[key]
		b := 0
		for b < len(calibrationBands)-2 && d.Score >= calibrationBands[b+1] {
			b++
		}
		id := d.Environment + " " + string(rune('0'+b))
		c, ok := rows[id]
		if !ok {
			c = &Calibration{Environment: d.Environment, Low: calibrationBands[b], High: min(calibrationBands[b+1], 1)}
			c.Band = bandLabel(c.Low, c.High, b == len(calibrationBands)-2)
			rows[id] = c
		}
		c.Decisions++
		if d.ChosenAction == "proceed" {
			c.Proceed++
		}
		switch runner.DecisionOutcome(d.Outcome) {
		case runner.OutcomeApplied:
			c.Applied++
		case runner.OutcomeFailed:
			c.Failed++
		case runner.OutcomeIndeterminate:
			c.Indeterminate++
		case runner.OutcomeRejected:
			c.Rejected++
		default:
			c.Pending++
		}
	}
	for _, c := range rows {
		if n := c.Applied + c.Failed + c.Indeterminate; n > 0 {
			c.CleanRate, c.Scored = float64(c.Applied)/float64(n), true
		}
		m.Calibration = append(m.Calibration, *c)
	}
	slices.SortFunc(m.Calibration, func(a, b Calibration) int {
		return cmp.Or(cmp.Compare(envOrder(a.Environment), envOrder(b.Environment)), cmp.Compare(a.Low, b.Low))
	})
}

func bandLabel(low, high float64, last bool) string {
	closing := ")"
	if last {
		closing = "]"
	}
	return "[" + formatScore(low) + ", " + formatScore(high) + closing
}

func formatScore(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }
