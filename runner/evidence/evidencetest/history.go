package evidencetest

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/nova-platform/nova/runner"
)

// History returns n events of contracts contracts shaped as real runs
// record them, interleaved over span from start: each contract's runs go
// dev, qa, prod, dr in turn; guarded environments wait for an approval
// (qa-lead in qa, sre-oncall in prod and dr); about one apply in twenty
// fails, one in fifty ends indeterminate and is resolved, and one change
// in seven breaks a medium tag rule.
func History(contracts, n int, start time.Time, span time.Duration) []runner.Event {
	runs := make([]*historyRun, contracts)
	per := make([][]runner.Event, contracts)
	for c := range contracts {
		for len(per[c]) < n/contracts+1 {
			r := runs[c]
			if r == nil || r.done() {
				k := 0
				if r != nil {
					k = r.k + 1
				}
				r = newRun(c, k)
				runs[c] = r
			}
			per[c] = append(per[c], r.next())
		}
	}
	out := make([]runner.Event, 0, n)
	for i := 0; len(out) < n; i++ {
		c := i % contracts
		e := per[c][i/contracts]
		e.Time = start.Add(span * time.Duration(len(out)) / time.Duration(n))
		out = append(out, e)
	}
	return out
}

type historyRun struct {
	contract string
	env      runner.Environment
	k        int
	specs    []func() runner.Event
	i        int
}

func (r *historyRun) done() bool { return r.i >= len(r.specs) }

func (r *historyRun) next() runner.Event {
	e := r.specs[r.i]()
	r.i++
	return e
}

var envs = []runner.Environment{runner.Dev, runner.QA, runner.Prod, runner.DR}

func newRun(c, k int) *historyRun {
	r := &historyRun{contract: fmt.Sprintf("svc-%04d", c), env: envs[k%4], k: k}
	run := fmt.Sprintf("run-%04d-%05d", c, k)
	commit := fmt.Sprintf("%040x", c*100000+k/4)
	digest := fmt.Sprintf("%064x", c*100000+k)
	serial := 0
	ev := func(typ string, data any) func() runner.Event {
		return func() runner.Event {
			serial++
			raw, _ := json.Marshal(data)
			return runner.Event{SpecVersion: "1.0", ID: fmt.Sprintf("%s-%02d", run, serial), Source: "urn:nova:history", Type: typ,
				Subject: r.contract, DataContentType: "application/json", RunID: run, ContractID: r.contract, Environment: string(r.env), Data: raw}
		}
	}
	stage := func(name string, v runner.Verdict, result any, pcrs []runner.PCR, findings ...runner.Finding) runner.StageEventData {
		raw, _ := json.Marshal(result)
		return runner.StageEventData{Stage: name, Verdict: v, Summary: name + " " + string(v), DurationMs: 12, Findings: findings, PCRs: pcrs, Result: raw}
	}
	tagsFail := k%7 == 3
	result := func(fail bool) runner.PCRResult {
		if fail {
			return runner.PCRFail
		}
		return runner.PCRPass
	}
	pcrs := []runner.PCR{
		{ContractID: r.contract, Engine: runner.EngineRego, RuleID: "nova.tags.required", Severity: runner.Medium, Result: result(tagsFail), Message: "tags", ResourceRef: "contract"},
		{ContractID: r.contract, Engine: runner.EngineRego, RuleID: "nova.naming.convention", Severity: runner.Low, Result: result(k%11 == 5), Message: "names", ResourceRef: "contract"},
		{ContractID: r.contract, Engine: runner.EngineRego, RuleID: "nova.encryption.kms-key", Severity: runner.High, Result: runner.PCRPass, Message: "keys", ResourceRef: "contract"},
	}
	score := 0.96
	if tagsFail {
		score = 0.91
	}
	conf := runner.Confidence{Phase: runner.PostPlan, Score: score, Band: runner.BandPass, Threshold: 0.5, PerInput: map[string]runner.ConfidenceInput{
		"schema": {Value: 1, Weight: 0.1}, "policy": {Value: score, Weight: 0.3}, "nfr": {Value: 1, Weight: 0.15},
		"tests": {Value: 1, Weight: 0.2}, "cost": {Value: 0.9, Weight: 0.1}, "provenance": {Value: 1, Weight: 0.15}}}
	decision := run + "-decision"
	r.specs = []func() runner.Event{
		ev(runner.EventContractValidated, stage("schema", runner.Pass, map[string]string{"contractDigest": fmt.Sprintf("%064x", c)}, nil)),
		ev(runner.EventPolicyEvaluated, stage("policy", runner.Pass, nil, pcrs)),
		ev(runner.EventConfidenceComputed, stage("confidence", runner.Pass, conf, nil)),
		ev(runner.EventDecisionMade, map[string]any{"decisionId": decision, "phase": "post-plan", "chosenAction": "proceed", "confidence": conf}),
		ev(runner.EventPlanCreated, stage("plan", runner.Pass, runner.PlanRecord{Digest: digest, HasChanges: true, Changes: runner.ChangeSummary{Change: 1}, Commit: commit}, nil)),
	}
	approver := "autonomous"
	if r.env != runner.Dev {
		approver = map[runner.Environment]string{runner.QA: "qa-lead", runner.Prod: "sre-oncall", runner.DR: "sre-oncall"}[r.env]
		r.specs = append(r.specs,
			ev(runner.EventApprovalRequested, stage("gate", runner.AwaitingApproval, runner.RequestRecord{Environment: r.env, PlanDigest: digest}, nil, runner.Finding{Reason: runner.ApprovalRequired})),
			ev(runner.EventApprovalRecorded, runner.ApprovalRecord{Environment: r.env, PlanDigest: digest, Approver: approver, Group: "approvers", Source: runner.SourceLocal}))
	}
	r.specs = append(r.specs, ev(runner.EventApplyAuthorized, stage("gate", runner.Pass, runner.Authorization{Digest: digest, Environment: r.env, Approver: approver}, nil)))
	outcome := runner.OutcomeApplied
	switch {
	case k%50 == 17:
		outcome = runner.OutcomeFailed
		r.specs = append(r.specs,
			ev(runner.EventRunFailed, stage("apply", runner.Errored, nil, nil, runner.Finding{Reason: runner.ApplyIndeterminate})),
			ev(runner.EventApplyIndeterminate, map[string]string{"digest": digest, "cause": "killed"}),
			ev(runner.EventApplyResolved, runner.Resolution{Outcome: runner.ResolvedNotApplied, Note: "state unchanged", ResolvedBy: "operator"}))
	case k%20 == 9:
		outcome = runner.OutcomeFailed
		r.specs = append(r.specs, ev(runner.EventRunFailed, stage("apply", runner.Errored, nil, nil, runner.Finding{Reason: runner.TerraformApplyFailed})))
	default:
		r.specs = append(r.specs, ev(runner.EventApplyCompleted, stage("apply", runner.Pass, map[string]any{"digest": digest, "applied": true}, nil)))
	}
	// The decision is the run's fourth event.
	r.specs = append(r.specs, ev(runner.EventDecisionOutcome, runner.OutcomeRecord{Decision: run + "-04", DecisionID: decision, Run: run, Outcome: outcome, PlanDigest: digest}))
	return r
}
