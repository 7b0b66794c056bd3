// Package nfr is the NFR stage: it matches each non-functional requirement
// the contract declares against the capabilities the registry's modules
// declare (which input must hold which value to satisfy which NFR), given
// the values the resolved stack gives their inputs, and compares a cost
// estimate from infracost with the contract's budget.
//
// Every declared NFR yields one PCR (engine "nfr", ruleId "nfr.<field>"):
// pass when satisfied, fail when not satisfied or not satisfiable by this
// stack. Unmet NFRs lower the confidence score; only a critical one (data
// classified confidential or restricted left unencrypted, state required
// encrypted that the engine would write in plaintext) stops the run.
// stateEncryption is judged from the contract's engine and backend, not
// from the stack's modules.
package nfr

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
)

// CostRuleID is the rule id of the budget NFR's record.
const CostRuleID = "nfr.monthlyCostCeiling"

// Stage evaluates a contract's NFRs.
type Stage struct {
	reg  *registry.Registry
	cost runner.CostEstimator
	now  func() time.Time
}

var _ runner.Stage = (*Stage)(nil)

// Option configures a Stage.
type Option func(*Stage)

// WithCost sets how cost is estimated; without it the estimate is skipped
// with INFRACOST_NOT_CONFIGURED.
func WithCost(e runner.CostEstimator) Option { return func(s *Stage) { s.cost = e } }

// WithClock sets the clock that stamps evaluatedAt.
func WithClock(now func() time.Time) Option { return func(s *Stage) { s.now = now } }

// New returns the NFR stage matching against reg, the registry the
// contract was resolved with.
func New(reg *registry.Registry, opts ...Option) *Stage {
	s := &Stage{reg: reg, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Name implements runner.Stage.
func (*Stage) Name() string { return "nfr" }

// Data is what the stage records in its event.
type Data struct {
	Counts runner.Counts       `json:"counts"`
	Cost   runner.CostEstimate `json:"cost"`
	// CostDetail explains a skipped or failed estimate.
	CostDetail string `json:"costDetail,omitempty"`
}

// Run implements runner.Stage.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil || st.Target == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "nfr stage ran before the contract was resolved")
	}
	c := st.Contract
	var pcrs []runner.PCR
	for _, k := range kinds {
		required, ok := declared(c.NFR, k)
		if k.name == "encryptionAtRest" && sensitive(c.NFR) {
			pcrs = append(pcrs, sensitiveEncryption(s.reg, st.Target, k, required, c.NFR))
			continue
		}
		if !ok {
			continue
		}
		pcrs = append(pcrs, record(k, required, assess(s.reg, st.Target, k, required), c.NFR))
	}
	if c.NFR != nil && c.NFR.StateEncryption != "" {
		pcrs = append(pcrs, stateEncryption(c))
	}
	est := runner.CostReport{Estimate: runner.CostEstimate{Skipped: true, Reason: runner.InfracostNotConfigured}, Detail: "no cost estimator is configured"}
	if s.cost != nil {
		est = s.cost.Estimate(ctx, st)
	}
	if ctx.Err() != nil {
		return runner.Result{}, runner.Errorf(runner.RunCancelled, "estimating cost: %w", ctx.Err())
	}
	cost := est.Estimate
	st.Cost = &cost
	if c.NFR != nil && c.NFR.MonthlyCostCeiling != nil {
		pcrs = append(pcrs, budgetRecord(*c.NFR.MonthlyCostCeiling, est))
	}
	pcrs = runner.NormalizePCRs(runner.EngineNFR, pcrs, c.ID, s.now().UTC(), jsonschema.ValidatePCR)
	st.PCRs = append(st.PCRs, pcrs...)
	counts := runner.CountPCRs(pcrs)
	res := runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("%d NFR record(s): %s; cost %s", len(pcrs), counts.String(), describeCost(est)),
		PCRs:    pcrs,
		Event:   runner.EventNFREvaluated,
		Data:    Data{Counts: counts, Cost: cost, CostDetail: est.Detail},
	}
	// As the policy stage's meta-policy: a critical NFR that could not be
	// evaluated blocks as its failure would.
	if i := slices.IndexFunc(pcrs, func(p runner.PCR) bool {
		return (p.Result == runner.PCRFail || p.Result == runner.PCRError) && p.Severity == runner.Critical
	}); i >= 0 {
		res.Verdict = runner.Fail
		field, _ := strings.CutPrefix(pcrs[i].ResourceRef, "contract:")
		reason := runner.PolicyCriticalFail
		if pcrs[i].RuleID == StateEncryptionRuleID {
			// Its reasons say what to change (the engine, or the
			// backend), which POLICY_CRITICAL_FAIL does not.
			reason = runner.PCRReason(pcrs[i])
		}
		res.Findings = []runner.Finding{{Reason: reason, Message: pcrs[i].Message, Field: field}}
	}
	return res, nil
}

// sensitive reports data classified confidential or restricted, which must
// be encrypted at rest whatever the contract says of encryption.
func sensitive(n *runner.NFR) bool {
	return n != nil && classRank[n.DataClassification] >= classRank["confidential"]
}

// sensitiveEncryption is the encryptionAtRest record for sensitive data.
// Leaving encryptionAtRest out, or declaring it false, must not be a way
// around the requirement: the stack is held to encryptionAtRest: true in
// either case, and a contract declaring false fails whatever the stack
// does, since it asks for sensitive data to be left unencrypted.
func sensitiveEncryption(reg *registry.Registry, target *runner.TargetStack, k kind, declaredValue any, n *runner.NFR) runner.PCR {
	a := assess(reg, target, k, true)
	because := fmt.Sprintf("dataClassification %s requires encryption at rest", n.DataClassification)
	a.evidence = map[string]any{"declared": declaredValue, "requiredBy": "dataClassification"}
	switch declaredValue {
	case false:
		a.status, a.reason = NotSatisfied, runner.NFRNotSatisfied
		a.message = fmt.Sprintf("encryptionAtRest false is not allowed: %s; declare encryptionAtRest: true", because)
	case nil:
		a.message = because + ": " + a.message
	}
	return record(k, true, a, n)
}

// record turns an assessment into the NFR's PCR.
func record(k kind, required any, a assessment, n *runner.NFR) runner.PCR {
	sev := k.severity
	// Sensitive data left unencrypted is not a matter of degree.
	if k.name == "encryptionAtRest" && a.status != Satisfied && sensitive(n) {
		sev = runner.Critical
	}
	result := runner.PCRPass
	if a.status != Satisfied {
		result = runner.PCRFail
	}
	ev := map[string]any{"status": a.status, "required": required}
	for key, v := range a.evidence {
		ev[key] = v
	}
	if a.provided != nil {
		ev["provided"] = a.provided
	}
	if len(a.matches) > 0 {
		ev["instances"] = a.matches
	}
	return runner.PCR{
		Engine: runner.EngineNFR, RuleID: "nfr." + k.name, Severity: sev, Result: result,
		Message: a.message, ResourceRef: "contract:/nfr/" + k.name, Evidence: runner.PCREvidence(a.reason, ev),
	}
}

// budgetRecord compares the estimate with monthlyCostCeiling.
func budgetRecord(ceiling float64, e runner.CostReport) runner.PCR {
	p := runner.PCR{Engine: runner.EngineNFR, RuleID: CostRuleID, Severity: runner.High, ResourceRef: "contract:/nfr/monthlyCostCeiling"}
	ev := map[string]any{"ceiling": ceiling}
	switch {
	case e.Estimate.Reason == runner.InfracostNotConfigured:
		p.Severity, p.Result = runner.Info, runner.PCRSkipped
		p.Message = "the budget was not checked: " + e.Detail
		ev["detail"] = e.Detail
	case e.Estimate.Skipped:
		p.Result = runner.PCRError
		p.Message = "the budget could not be checked: " + e.Detail
		ev["detail"] = e.Detail
	default:
		ev["estimate"], ev["currency"], ev["priced"] = e.Estimate.Monthly, e.Estimate.Currency, e.Priced
		if e.Diff != nil {
			ev["diff"] = *e.Diff
		}
		if e.Estimate.Monthly > ceiling {
			p.Result = runner.PCRFail
			p.Message = fmt.Sprintf("estimated %.2f %s a month, over the ceiling of %.2f", e.Estimate.Monthly, e.Estimate.Currency, ceiling)
			return withEvidence(p, runner.NFRBudgetExceeded, ev)
		}
		p.Result = runner.PCRPass
		p.Message = fmt.Sprintf("estimated %.2f %s a month, within the ceiling of %.2f", e.Estimate.Monthly, e.Estimate.Currency, ceiling)
	}
	return withEvidence(p, e.Estimate.Reason, ev)
}

func withEvidence(p runner.PCR, r runner.Reason, ev map[string]any) runner.PCR {
	p.Evidence = runner.PCREvidence(r, ev)
	return p
}

func describeCost(e runner.CostReport) string {
	if e.Estimate.Skipped {
		return fmt.Sprintf("skipped (%s: %s)", e.Estimate.Reason, e.Detail)
	}
	return fmt.Sprintf("%.2f %s/month (%s)", e.Estimate.Monthly, e.Estimate.Currency, e.Priced)
}
