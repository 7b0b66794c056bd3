package audit

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// chain builds one contract's events as runs record them, each at the
// given minute after t0.
type chain struct {
	t      *testing.T
	events []Record
}

func (c *chain) add(minute int, run, env, typ string, data any) runner.Event {
	c.t.Helper()
	raw, err := json.Marshal(data)
	if err != nil {
		c.t.Fatal(err)
	}
	e := runner.Event{ID: typ + "-" + run + "-" + env + "-" + time.Duration(minute).String(), Type: typ, ContractID: "c-1", Environment: env, RunID: run,
		Seq: int64(len(c.events) + 1), Time: t0.Add(time.Duration(minute) * time.Minute), Data: raw}
	c.events = append(c.events, Record{Event: e, Commit: "0123456789012345678901234567890123456789"})
	return e
}

// stage wraps a stage's payload as the pipeline records it.
func stage(name string, v runner.Verdict, result any, findings ...runner.Finding) runner.StageEventData {
	raw, _ := json.Marshal(result)
	return runner.StageEventData{Stage: name, Verdict: v, Result: raw, Findings: findings}
}

// run records a pipeline run that plans digest in env and, unless
// stopAt is set, applies it with the given outcome.
func (c *chain) run(minute int, run, env, contractDigest, digest string, score float64, applied string) {
	c.add(minute, run, env, runner.EventContractValidated, stage("schema", runner.Pass, map[string]string{"contractDigest": contractDigest}))
	conf := runner.Confidence{Phase: runner.PostPlan, Score: score, Band: runner.BandPass, Threshold: 0.5, PerInput: map[string]runner.ConfidenceInput{
		"schema": {Value: 1}, "policy": {Value: score}, "nfr": {Value: 1}, "tests": {Value: 0.5}, "cost": {Value: 0.5}, "provenance": {Value: 0.5}}}
	c.add(minute, run, env, runner.EventPlanCreated, stage("plan", runner.Pass, runner.PlanRecord{Digest: digest}))
	c.add(minute, run, env, runner.EventConfidenceComputed, stage("plan-confidence", runner.Pass, conf))
	decision := c.add(minute, run, env, runner.EventDecisionMade, map[string]any{"decisionId": "d-" + run, "phase": "post-plan", "chosenAction": "proceed", "confidence": conf})
	if applied == "" {
		c.add(minute, run, env, runner.EventApprovalRequested, stage("gate", runner.AwaitingApproval, runner.RequestRecord{Environment: runner.Environment(env), PlanDigest: digest},
			runner.Finding{Reason: runner.ApprovalRequired}))
		return
	}
	c.apply(minute+1, run, env, digest, applied)
	outcome := map[string]runner.DecisionOutcome{"applied": runner.OutcomeApplied, "failed": runner.OutcomeFailed, "indeterminate": runner.OutcomeIndeterminate}[applied]
	c.add(minute+1, run, env, runner.EventDecisionOutcome, runner.OutcomeRecord{Decision: decision.ID, Outcome: outcome})
}

// applyRun records `nova apply` of an approved plan: a run of its own
// that validates the contract, then applies.
func (c *chain) applyRun(minute int, run, env, contractDigest, digest string) {
	c.add(minute, run, env, runner.EventContractValidated, stage("schema", runner.Pass, map[string]string{"contractDigest": contractDigest}))
	c.apply(minute, run, env, digest, "applied")
}

func (c *chain) apply(minute int, run, env, digest, outcome string) {
	approver := "autonomous"
	if env != "dev" {
		approver = "sre-oncall"
	}
	c.add(minute, run, env, runner.EventApplyAuthorized, stage("gate", runner.Pass, runner.Authorization{Digest: digest, Environment: runner.Environment(env), Approver: approver}))
	switch outcome {
	case "applied":
		c.add(minute, run, env, runner.EventApplyCompleted, stage("apply", runner.Pass, map[string]any{"digest": digest, "applied": true}))
	case "failed":
		c.add(minute, run, env, runner.EventRunFailed, stage("apply", runner.Errored, nil, runner.Finding{Reason: runner.TerraformApplyFailed}))
	case "indeterminate":
		c.add(minute, run, env, runner.EventRunFailed, stage("apply", runner.Errored, nil, runner.Finding{Reason: runner.ApplyIndeterminate}))
		c.add(minute, run, env, runner.EventApplyIndeterminate, map[string]string{"digest": digest})
	}
}

func TestFacets(t *testing.T) {
	c := &chain{t: t}
	tests := []struct {
		event runner.Event
		want  []string
	}{
		{c.add(0, "r", "qa", runner.EventApprovalRecorded, runner.ApprovalRecord{Approver: "qa-lead", Environment: "qa"}), []string{"approver=qa-lead"}},
		{c.add(0, "r", "qa", runner.EventApprovalRejected, runner.ApprovalRecord{Approver: "qa-lead", Reason: "too big"}), []string{"approver=qa-lead", "reason=APPROVAL_REJECTED"}},
		{c.add(0, "r", "prod", runner.EventApprovalRefused, runner.RefusalRecord{Approvers: []string{"qa-lead", "x"}, Reason: runner.SeparationOfDutiesViolation}),
			[]string{"approver=qa-lead", "approver=x", "reason=SEPARATION_OF_DUTIES_VIOLATION"}},
		{c.add(0, "r", "dev", runner.EventRunFailed, stage("apply", runner.Errored, nil, runner.Finding{Reason: runner.TerraformApplyFailed})), []string{"reason=TERRAFORM_APPLY_FAILED"}},
		{c.add(0, "r", "dev", runner.EventApplyAuthorized, stage("gate", runner.Pass, runner.Authorization{Approver: "autonomous"})), []string{"approver=autonomous"}},
		{c.add(0, "r", "dev", runner.EventApplyResolved, runner.Resolution{ResolvedBy: "operator", Outcome: "applied"}), []string{"approver=operator"}},
		{c.add(0, "r", "dev", runner.EventConfidenceComputed, stage("confidence", runner.Pass, runner.Confidence{ReasonCodes: []runner.Reason{runner.ConfidenceLoweredByPlan},
			PerInput: map[string]runner.ConfidenceInput{"cost": {Reasons: []runner.Reason{runner.CostEstimateSkipped}}}})), []string{"reason=CONFIDENCE_LOWERED_POST_PLAN", "reason=COST_ESTIMATE_SKIPPED"}},
		{c.add(0, "r", "dev", runner.EventPlanCreated, stage("plan", runner.Pass, runner.PlanRecord{Digest: "d"})), nil},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, Facets(tt.event)); diff != "" {
			t.Errorf("Facets(%s) (-want +got):\n%s", tt.event.Type, diff)
		}
	}
}

func TestQueryMatch(t *testing.T) {
	at := t0.Add(time.Hour)
	facets := []string{"approver=qa-lead", "reason=APPROVAL_REQUIRED"}
	tests := []struct {
		name string
		q    Query
		want bool
	}{
		{"no filter", Query{}, true},
		{"contract", Query{Contracts: []string{"x", "c-1"}}, true},
		{"other contract", Query{Contracts: []string{"x"}}, false},
		{"environment", Query{Environments: []string{"qa"}}, true},
		{"type pattern", Query{Types: []string{"nova.approval.*"}}, true},
		{"other type", Query{Types: []string{"nova.apply.*"}}, false},
		{"approver", Query{Approvers: []string{"qa-lead"}}, true},
		{"other approver", Query{Approvers: []string{"sre-oncall"}}, false},
		{"reason", Query{Reasons: []string{"APPROVAL_REQUIRED"}}, true},
		{"since, inclusive", Query{Since: at}, true},
		{"until, exclusive", Query{Until: at}, false},
		{"all filters together", Query{Contracts: []string{"c-1"}, Environments: []string{"qa"}, Approvers: []string{"qa-lead"}, Reasons: []string{"NOPE"}}, false},
	}
	for _, tt := range tests {
		if got := tt.q.Match("c-1", "qa", "nova.approval.recorded", at, facets); got != tt.want {
			t.Errorf("%s: Match = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 5, 10, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                     {},
		"2026-03-01":           time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC),
		"2026-03-01T10:00:00Z": time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC),
		"36h":                  now.Add(-36 * time.Hour),
		"90d":                  now.AddDate(0, 0, -90),
		"2w":                   now.AddDate(0, 0, -14),
	} {
		if got, err := ParseTime(in, now); err != nil || !got.Equal(want) {
			t.Errorf("ParseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, bad := range []string{"yesterday", "-3d", "3x"} {
		if _, err := ParseTime(bad, now); err == nil {
			t.Errorf("ParseTime(%q) accepted", bad)
		}
	}
}

// TestMeasures: a contract version promoted dev → qa → prod with a failed
// and an indeterminate apply in dev on the way.
func TestMeasures(t *testing.T) {
	c := &chain{t: t}
	c.run(0, "r1", "dev", "v1", "D1", 0.8, "failed")
	c.run(10, "r2", "dev", "v1", "D1", 0.8, "indeterminate")
	c.add(30, "r-ops", "dev", runner.EventApplyResolved, runner.Resolution{Outcome: runner.ResolvedNotApplied, ResolvedBy: "operator"})
	c.run(40, "r3", "dev", "v1", "D1", 0.8, "applied")
	c.run(50, "r4", "qa", "v1", "D2", 0.9, "")
	c.add(65, "r-approve", "qa", runner.EventApprovalRecorded, runner.ApprovalRecord{Environment: "qa", PlanDigest: "D2", Approver: "qa-lead"})
	c.applyRun(70, "r5", "qa", "v1", "D2")
	c.run(80, "r6", "prod", "v1", "D3", 0.95, "")
	c.applyRun(200, "r7", "prod", "v1", "D3")
	tables := Build(c.events)

	if got := len(tables.Applies); got != 5 {
		t.Fatalf("%d applies, want 5", got)
	}
	ind := tables.Applies[1]
	if ind.Outcome != ApplyIndeterminate || ind.Resolution != runner.ResolvedNotApplied || ind.ResolvedBy != "operator" || ind.ResolvedAt == nil {
		t.Errorf("indeterminate apply: %+v", ind)
	}
	if a := tables.Approvals[0]; a.WaitSeconds == nil || *a.WaitSeconds != 15*60 {
		t.Errorf("approval wait: %+v", a)
	}

	m := Measure(tables, "")
	dev := m.Failures[0]
	if dev.Environment != "dev" || dev.Changes != 3 || dev.Failed != 1 || dev.Unsure != 1 || dev.Restored != 2 {
		t.Errorf("dev failure rate: %+v", dev)
	}
	// The failure at minute 1 was restored by the apply at minute 41 (the
	// indeterminate apply in between is not a success); the indeterminate
	// one at minute 11 by its resolution at minute 30.
	var restores []time.Duration
	for _, r := range m.Restores {
		restores = append(restores, r.Duration)
	}
	if want := []time.Duration{40 * time.Minute, 19 * time.Minute}; !slices.Equal(restores, want) {
		t.Errorf("restores %v, want %v", restores, want)
	}
	if len(m.LeadTimes) != 1 || m.LeadTimes[0].Lead != 200*time.Minute {
		t.Errorf("lead times %+v, want one of 200m (first plan at 0, prod apply at 200)", m.LeadTimes)
	}
	if len(m.Promotions) != 1 || len(m.Promotions[0].Steps) != 3 {
		t.Errorf("promotions %+v, want v1 through dev, qa, prod", m.Promotions)
	}
	if len(m.Waits) != 1 || m.Waits[0].Wait != 15*time.Minute {
		t.Errorf("waits %+v", m.Waits)
	}
	var cal []string
	for _, r := range m.Calibration {
		cal = append(cal, r.Environment+" "+r.Band+" "+fmtCounts(r))
	}
	want := []string{
		"dev [0.75, 0.9) decisions=3 applied=1 failed=1 indeterminate=1 pending=0",
		"qa [0.9, 0.95) decisions=1 applied=0 failed=0 indeterminate=0 pending=1",
		"prod [0.95, 1] decisions=1 applied=0 failed=0 indeterminate=0 pending=1",
	}
	if diff := cmp.Diff(want, cal); diff != "" {
		t.Errorf("calibration (-want +got):\n%s", diff)
	}
	if len(m.Deployments) != 1 || m.Deployments[0].Counts["dev"] != 1 || m.Deployments[0].Counts["prod"] != 1 {
		t.Errorf("deployments %+v", m.Deployments)
	}
}

func fmtCounts(c Calibration) string {
	return "decisions=" + itoa(c.Decisions) + " applied=" + itoa(c.Applied) + " failed=" + itoa(c.Failed) + " indeterminate=" + itoa(c.Indeterminate) + " pending=" + itoa(c.Pending)
}

func itoa(n int) string { return formatScore(float64(n)) }

func TestTablesHandleDrift(t *testing.T) {
	c := &chain{t: t}
	c.add(0, "r1", "prod", "nova.drift.detected", map[string]any{"summary": "2 resources drifted", "resources": []string{"a", "b"}, "reasonCodes": []string{"DRIFT_DETECTED"}})
	c.add(5, "r2", "prod", "nova.drift.clear", stage("drift", runner.Pass, map[string]any{"count": 0}))
	d := Build(c.events).Drift
	if len(d) != 2 || d[0].State != "detected" || *d[0].ResourceCount != 2 || d[0].Reasons != "DRIFT_DETECTED" || d[1].State != "clear" || *d[1].ResourceCount != 0 {
		t.Errorf("drift rows: %+v", d)
	}
}
