package confidence

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// Commit signature states, as runner.CommitSignature values.
const (
	CommitVerified   = runner.CommitVerified
	CommitUnverified = runner.CommitUnverified
	CommitUnsigned   = runner.CommitUnsigned
	CommitInvalid    = runner.CommitInvalid
	CommitUnknown    = runner.CommitUnknown
)

// Evidence is everything the score is computed from. Compute is a pure
// function of it, which is what makes the signal explainable and testable.
type Evidence struct {
	Phase    runner.Phase
	Contract *runner.Contract
	Target   *runner.TargetStack
	// Completed names the stages that ran and passed.
	Completed []string
	PCRs      []runner.PCR
	Cost      *runner.CostEstimate
	Reports   []Report
	Commit    runner.CommitSignature
}

// recommended are the fields that make a contract reviewable beyond what an
// environment strictly requires; those an environment requires are left
// out for it, since the schema stage already enforced them.
var recommended = []string{"/nfr", "/validation/unitTests", "/validation/e2eSuite", "/validation/loadTest", "/runbook", "/dashboard", "/oncall"}

// Compute scores the evidence. It never fails: a missing input gives band
// blocked with CONFIDENCE_INPUT_MISSING naming it, and a critical policy
// failure gives band blocked with POLICY_CRITICAL_FAIL.
func Compute(ev Evidence) runner.Confidence {
	env := runner.Dev
	if ev.Contract != nil {
		env = ev.Contract.Environment
	}
	c := runner.Confidence{
		Phase:     ev.Phase,
		Threshold: Threshold(env),
		PerInput:  map[string]runner.ConfidenceInput{},
	}
	var missing []string
	for _, name := range Inputs {
		value, explanation, reasons, ok := inputFuncs[name](ev)
		if !ok {
			missing = append(missing, name)
			c.PerInput[name] = runner.ConfidenceInput{Weight: Weight(name), Explanation: explanation, Reasons: reasons}
			continue
		}
		// Rounding each part before summing makes the published score the
		// exact sum of the published contributions, so anyone can redo the
		// arithmetic from the explanation.
		milli := int(math.Round(clamp(value) * 1000))
		value = float64(milli) / 1000
		// thousandths × hundredths, rounded half up to thousandths.
		contribution := math.Floor(float64(milli*weights[name])/100+0.5) / 1000
		c.PerInput[name] = runner.ConfidenceInput{
			Value:        value,
			Weight:       Weight(name),
			Contribution: contribution,
			Explanation:  explanation,
			Reasons:      reasons,
		}
		c.Score += contribution
	}
	c.Score = round3(clamp(c.Score))
	switch {
	case len(missing) > 0:
		c.Score, c.Band = 0, runner.BandBlocked
		c.ReasonCodes = append(c.ReasonCodes, runner.ConfidenceInputMissing)
	case criticalFail(ev.PCRs):
		c.Band = runner.BandBlocked
		c.ReasonCodes = append(c.ReasonCodes, runner.PolicyCriticalFail)
	default:
		c.Band = band(c.Score, env)
		if c.Band == runner.BandFail {
			c.ReasonCodes = append(c.ReasonCodes, runner.ConfidenceBelowThreshold)
		}
	}
	for _, name := range Inputs {
		for _, r := range c.PerInput[name].Reasons {
			if !slices.Contains(c.ReasonCodes, r) {
				c.ReasonCodes = append(c.ReasonCodes, r)
			}
		}
	}
	return c
}

// Missing names the inputs that could not be computed.
func Missing(c runner.Confidence) []string {
	if !slices.Contains(c.ReasonCodes, runner.ConfidenceInputMissing) {
		return nil
	}
	var out []string
	for _, name := range Inputs {
		if slices.Contains(c.PerInput[name].Reasons, runner.ConfidenceInputMissing) {
			out = append(out, name)
		}
	}
	return out
}

// band compares in thousandths: the published scores have three decimals,
// and 0.8999999 must not pass a 0.900 threshold by float accident.
func band(score float64, env runner.Environment) runner.Band {
	if int(math.Round(score*1000)) >= thresholds[env] {
		return runner.BandPass
	}
	return runner.BandFail
}

type inputFunc func(Evidence) (value float64, explanation string, reasons []runner.Reason, ok bool)

var inputFuncs = map[string]inputFunc{
	InputSchema:     schemaInput,
	InputPolicy:     policyInput,
	InputNFR:        nfrInput,
	InputTests:      testsInput,
	InputCost:       costInput,
	InputProvenance: provenanceInput,
}

func missingInput(why string) (float64, string, []runner.Reason, bool) {
	return 0, why, []runner.Reason{runner.ConfidenceInputMissing}, false
}

func completed(ev Evidence, stage string) bool { return slices.Contains(ev.Completed, stage) }

func schemaInput(ev Evidence) (float64, string, []runner.Reason, bool) {
	if ev.Contract == nil || ev.Target == nil {
		return missingInput("no validated contract")
	}
	required := runner.RequiredFields(ev.Contract.Environment)
	var want, absent []string
	for _, f := range recommended {
		if slices.Contains(required, f) {
			continue
		}
		want = append(want, f)
		if !hasField(ev.Contract, f) {
			absent = append(absent, f)
		}
	}
	if len(want) == 0 {
		return 1, "every recommended field is required in this environment, and present", nil, true
	}
	v := float64(len(want)-len(absent)) / float64(len(want))
	if len(absent) == 0 {
		return v, fmt.Sprintf("all %d recommended fields set", len(want)), nil, true
	}
	return v, fmt.Sprintf("%d of %d recommended fields set; missing %s", len(want)-len(absent), len(want), strings.Join(absent, ", ")),
		[]runner.Reason{runner.SchemaIncomplete}, true
}

func hasField(c *runner.Contract, field string) bool {
	switch field {
	case "/nfr":
		return c.NFR != nil && *c.NFR != (runner.NFR{})
	case "/runbook":
		return c.Runbook != ""
	case "/dashboard":
		return c.Dashboard != ""
	case "/oncall":
		return c.Oncall != ""
	}
	if c.Validation == nil {
		return false
	}
	switch field {
	case "/validation/unitTests":
		return c.Validation.UnitTests != ""
	case "/validation/e2eSuite":
		return c.Validation.E2ESuite != ""
	case "/validation/loadTest":
		return c.Validation.LoadTest != ""
	}
	return false
}

func policyInput(ev Evidence) (float64, string, []runner.Reason, bool) {
	if !completed(ev, "policy") {
		return missingInput("the policy stage did not run")
	}
	if ev.Phase == runner.PostPlan && !completed(ev, "plan-policy") {
		return missingInput("the plan-level policy stage did not run")
	}
	penalty := 0.0
	counts := map[string]int{}
	var reasons []runner.Reason
	for _, p := range ev.PCRs {
		if p.Engine == runner.EngineNFR {
			continue
		}
		switch p.Result {
		case runner.PCRFail:
			penalty += severityPenalty[p.Severity]
			counts[string(p.Severity)]++
			reasons = appendOnce(reasons, runner.PolicyPenalized)
		case runner.PCRError:
			penalty += enginePenalty
			counts["engine error"]++
			reasons = appendOnce(reasons, runner.PolicyEngineFailed)
		}
	}
	if len(counts) == 0 {
		return 1, "no failing policy check", nil, true
	}
	var parts []string
	for _, k := range []string{"critical", "high", "medium", "low", "info", "engine error"} {
		if counts[k] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[k], k))
		}
	}
	return 1 - penalty, fmt.Sprintf("failing checks: %s (penalty %.2f)", strings.Join(parts, ", "), penalty), reasons, true
}

// criticalFail also counts a critical rule that could not be evaluated:
// an unknown outcome of a critical check must block like a failure, or
// breaking the rule's input would be a way around it.
func criticalFail(pcrs []runner.PCR) bool {
	return slices.ContainsFunc(pcrs, func(p runner.PCR) bool {
		return (p.Result == runner.PCRFail || p.Result == runner.PCRError) && p.Severity == runner.Critical
	})
}

func nfrInput(ev Evidence) (float64, string, []runner.Reason, bool) {
	if !completed(ev, "nfr") {
		return missingInput("the nfr stage did not run")
	}
	satisfied, total, skipped := 0, 0, 0
	for _, p := range ev.PCRs {
		if p.Engine != runner.EngineNFR {
			continue
		}
		if p.Result == runner.PCRSkipped {
			skipped++
			continue
		}
		total++
		if p.Result == runner.PCRPass {
			satisfied++
		}
	}
	if total == 0 && skipped > 0 {
		return 0.5, fmt.Sprintf("%d declared NFR(s) could not be evaluated (neutral)", skipped), []runner.Reason{runner.NFRUnmet}, true
	}
	if total == 0 {
		if ev.Contract != nil && ev.Contract.Environment == runner.Dev {
			return 1, "no NFR declared (accepted in dev)", nil, true
		}
		return 0, "no NFR declared", []runner.Reason{runner.NFRUndeclared}, true
	}
	v := float64(satisfied) / float64(total)
	if satisfied == total {
		return v, fmt.Sprintf("all %d declared NFRs satisfied", total), nil, true
	}
	return v, fmt.Sprintf("%d of %d declared NFRs satisfied", satisfied, total), []runner.Reason{runner.NFRUnmet}, true
}

func testsInput(ev Evidence) (float64, string, []runner.Reason, bool) {
	env := runner.Dev
	if ev.Contract != nil {
		env = ev.Contract.Environment
	}
	required := runner.RequiredFields(env)
	passed, ran := 0, 0
	var reasons []runner.Reason
	var problems []string
	for _, r := range ev.Reports {
		if r.Problem != "" {
			if slices.Contains(required, "/validation/"+r.Field) {
				return 0, fmt.Sprintf("required %s report %s: %s", r.Field, r.Path, r.Detail), []runner.Reason{runner.ConfidenceInputMissing, r.Problem}, false
			}
			reasons = appendOnce(reasons, r.Problem)
			problems = append(problems, fmt.Sprintf("%s (%s)", r.Path, r.Detail))
			continue
		}
		passed += r.Passed()
		ran += r.Total - r.Skipped
	}
	if ran == 0 {
		if len(problems) > 0 {
			return 0, "no usable test report: " + strings.Join(problems, "; "), reasons, true
		}
		return 0.5, "no test report given (neutral)", []runner.Reason{runner.TestsNotProvided}, true
	}
	v := float64(passed) / float64(ran)
	explanation := fmt.Sprintf("%d of %d tests passed in %d report(s)", passed, ran, len(ev.Reports)-len(problems))
	if passed < ran {
		reasons = appendOnce(reasons, runner.TestsFailing)
	}
	if len(problems) > 0 {
		explanation += "; unusable: " + strings.Join(problems, "; ")
		// An unusable optional report counts as a failed one, so that
		// breaking a report can never raise the score.
		v *= float64(len(ev.Reports)-len(problems)) / float64(len(ev.Reports))
	}
	return v, explanation, reasons, true
}

func costInput(ev Evidence) (float64, string, []runner.Reason, bool) {
	if !completed(ev, "nfr") {
		return missingInput("the nfr stage, which estimates cost, did not run")
	}
	if ev.Cost == nil || ev.Cost.Skipped {
		return 0.5, "no cost estimate (neutral)", []runner.Reason{runner.CostEstimateSkipped}, true
	}
	if ev.Contract == nil || ev.Contract.NFR == nil || ev.Contract.NFR.MonthlyCostCeiling == nil {
		return 0.5, fmt.Sprintf("estimate %.2f/month, no budget declared (neutral)", ev.Cost.Monthly), []runner.Reason{runner.CostNoBudget}, true
	}
	budget, est := *ev.Contract.NFR.MonthlyCostCeiling, ev.Cost.Monthly
	switch {
	case est <= budget:
		return 1, fmt.Sprintf("estimate %.2f within budget %.2f", est, budget), nil, true
	case budget <= 0 || est >= 2*budget:
		return 0, fmt.Sprintf("estimate %.2f is at least twice the budget %.2f", est, budget), []runner.Reason{runner.CostOverBudget}, true
	}
	return 1 - (est-budget)/budget, fmt.Sprintf("estimate %.2f over budget %.2f", est, budget), []runner.Reason{runner.CostOverBudget}, true
}

func provenanceInput(ev Evidence) (float64, string, []runner.Reason, bool) {
	var parts []float64
	var reasons []runner.Reason
	var notes []string
	switch ev.Commit {
	case CommitVerified:
		parts, notes = append(parts, 1), append(notes, "commit signature verified")
	case CommitUnverified:
		parts, notes = append(parts, 0.5), append(notes, "commit signed, not verified")
		reasons = append(reasons, runner.ProvenanceUnverified)
	case CommitUnsigned, CommitInvalid:
		parts, notes = append(parts, 0), append(notes, "commit "+string(ev.Commit))
		reasons = append(reasons, runner.ProvenanceUnsigned)
	default:
		parts, notes = append(parts, 0), append(notes, "commit unknown")
		reasons = append(reasons, runner.ProvenanceUnknown)
	}
	if ev.Target != nil && len(ev.Target.Instances) > 0 {
		pinned := 0
		for _, in := range ev.Target.Instances {
			if in.Pinned {
				pinned++
			}
		}
		parts = append(parts, float64(pinned)/float64(len(ev.Target.Instances)))
		notes = append(notes, fmt.Sprintf("%d of %d module versions pinned", pinned, len(ev.Target.Instances)))
		if pinned < len(ev.Target.Instances) {
			reasons = append(reasons, runner.ProvenanceUnpinned)
		}
	}
	if c := ev.Contract; c != nil && c.Profile == runner.ProfileAgentic && c.ConfidenceAtSubmission != nil {
		parts = append(parts, *c.ConfidenceAtSubmission)
		notes = append(notes, fmt.Sprintf("agent's own confidence %.3f blended", *c.ConfidenceAtSubmission))
		reasons = append(reasons, runner.ProvenanceAgent)
	}
	sum := 0.0
	for _, p := range parts {
		sum += p
	}
	return sum / float64(len(parts)), strings.Join(notes, "; "), reasons, true
}

func appendOnce(rs []runner.Reason, r runner.Reason) []runner.Reason {
	if slices.Contains(rs, r) {
		return rs
	}
	return append(rs, r)
}

func clamp(v float64) float64 { return math.Max(0, math.Min(1, v)) }

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }
