package confidence

import (
	"math"
	"math/rand"
	"reflect"
	"slices"
	"testing"
	"testing/quick"

	"github.com/nova-platform/nova/runner"
)

func TestWeightsSumToOne(t *testing.T) {
	sum := 0
	for _, name := range Inputs {
		w, ok := weights[name]
		if !ok || w <= 0 {
			t.Errorf("input %s has no positive weight", name)
		}
		sum += w
	}
	if len(weights) != len(Inputs) || sum != 100 {
		t.Errorf("%d weights summing to %v, want %d summing to 1", len(weights), sum, len(Inputs))
	}
}

func TestThresholdsAreFrozen(t *testing.T) {
	want := map[runner.Environment]float64{runner.Dev: 0.50, runner.QA: 0.75, runner.Prod: 0.90, runner.DR: 0.95}
	for env, w := range want {
		if got := Threshold(env); got != w {
			t.Errorf("threshold %s = %v, want %v", env, got, w)
		}
	}
}

func TestBandBoundaries(t *testing.T) {
	tests := []struct {
		env   runner.Environment
		below float64
		at    float64
	}{
		{runner.Dev, 0.499, 0.500},
		{runner.QA, 0.749, 0.750},
		{runner.Prod, 0.899, 0.900},
		{runner.DR, 0.949, 0.950},
	}
	for _, tt := range tests {
		if got := band(tt.below, tt.env); got != runner.BandFail {
			t.Errorf("%s: %.3f → %s, want fail", tt.env, tt.below, got)
		}
		if got := band(tt.at, tt.env); got != runner.BandPass {
			t.Errorf("%s: %.3f → %s, want pass", tt.env, tt.at, got)
		}
		// A score that is the threshold up to float noise (the sum of
		// three-decimal contributions) must still pass.
		if got := band(tt.at-1e-12, tt.env); got != runner.BandPass {
			t.Errorf("%s: %.15f → %s, want pass", tt.env, tt.at-1e-12, got)
		}
	}
}

// evidence is a random but well-formed Evidence for property tests.
type evidence struct{ Evidence }

func (evidence) Generate(r *rand.Rand, _ int) reflect.Value {
	envs := runner.Environments
	c := &runner.Contract{ID: "c", Environment: envs[r.Intn(len(envs))], Stack: "s"}
	if r.Intn(2) == 0 {
		c.Runbook = "https://r"
	}
	if r.Intn(2) == 0 {
		c.Oncall = "team"
	}
	if r.Intn(2) == 0 {
		ceiling := float64(r.Intn(1000))
		c.NFR = &runner.NFR{MonthlyCostCeiling: &ceiling}
	}
	if r.Intn(3) == 0 {
		c.Profile = runner.ProfileAgentic
		conf := r.Float64()
		c.ConfidenceAtSubmission = &conf
	}
	target := &runner.TargetStack{}
	for i := 0; i < 1+r.Intn(4); i++ {
		target.Instances = append(target.Instances, runner.Instance{Name: "i", Pinned: r.Intn(4) > 0})
	}
	ev := Evidence{
		Phase:     runner.PrePlan,
		Contract:  c,
		Target:    target,
		Completed: []string{"schema", "policy", "nfr"},
		Commit:    []runner.CommitSignature{CommitVerified, CommitUnverified, CommitUnsigned, CommitUnknown}[r.Intn(4)],
	}
	for i := 0; i < r.Intn(12); i++ {
		ev.PCRs = append(ev.PCRs, randomPCR(r))
	}
	if r.Intn(2) == 0 {
		ev.Cost = &runner.CostEstimate{Monthly: float64(r.Intn(3000))}
	}
	for i := 0; i < r.Intn(3); i++ {
		total := 1 + r.Intn(50)
		ev.Reports = append(ev.Reports, Report{Field: "unitTests", Path: "r.xml", Total: total, Failed: r.Intn(total + 1)})
	}
	return reflect.ValueOf(evidence{ev})
}

func randomPCR(r *rand.Rand) runner.PCR {
	engines := []string{runner.EngineRego, runner.EngineCheckov, runner.EngineNFR, runner.EnginePlan}
	results := []runner.PCRResult{runner.PCRPass, runner.PCRFail, runner.PCRSkipped, runner.PCRError}
	// Critical findings are rarer, so most generated cases exercise the
	// score rather than the block.
	sev := runner.Severities[1+r.Intn(len(runner.Severities)-1)]
	if r.Intn(10) == 0 {
		sev = runner.Critical
	}
	return runner.PCR{Engine: engines[r.Intn(len(engines))], RuleID: "r", Severity: sev, Result: results[r.Intn(len(results))]}
}

var quickCfg = &quick.Config{MaxCount: 3000}

func TestPropertyScoreInUnitInterval(t *testing.T) {
	f := func(e evidence) bool {
		c := Compute(e.Evidence)
		return c.Score >= 0 && c.Score <= 1 && !math.IsNaN(c.Score)
	}
	if err := quick.Check(f, quickCfg); err != nil {
		t.Error(err)
	}
}

func TestPropertyAddingAFailingPCRNeverRaisesTheScore(t *testing.T) {
	f := func(e evidence, sevIdx uint8, engineNFR bool) bool {
		before := Compute(e.Evidence)
		p := runner.PCR{Engine: runner.EngineRego, RuleID: "added", Severity: runner.Severities[int(sevIdx)%len(runner.Severities)], Result: runner.PCRFail}
		if engineNFR {
			p.Engine = runner.EngineNFR
		}
		e.PCRs = append(slices.Clone(e.PCRs), p)
		after := Compute(e.Evidence)
		return after.Score <= before.Score && !(before.Band == runner.BandBlocked && after.Band != runner.BandBlocked)
	}
	if err := quick.Check(f, quickCfg); err != nil {
		t.Error(err)
	}
}

func TestPropertyRemovingAFailingPCRNeverLowersTheScore(t *testing.T) {
	f := func(e evidence, pick uint8) bool {
		var failing []int
		for i, p := range e.PCRs {
			if p.Result == runner.PCRFail || p.Result == runner.PCRError {
				failing = append(failing, i)
			}
		}
		if len(failing) == 0 {
			return true
		}
		before := Compute(e.Evidence)
		i := failing[int(pick)%len(failing)]
		e.PCRs = slices.Delete(slices.Clone(e.PCRs), i, i+1)
		after := Compute(e.Evidence)
		return after.Score >= before.Score
	}
	if err := quick.Check(f, quickCfg); err != nil {
		t.Error(err)
	}
}

func TestPropertyCriticalFailAlwaysBlocks(t *testing.T) {
	f := func(e evidence) bool {
		e.PCRs = append(slices.Clone(e.PCRs), runner.PCR{Engine: runner.EngineRego, RuleID: "crit", Severity: runner.Critical, Result: runner.PCRFail})
		c := Compute(e.Evidence)
		return c.Band == runner.BandBlocked && (slices.Contains(c.ReasonCodes, runner.PolicyCriticalFail) || slices.Contains(c.ReasonCodes, runner.ConfidenceInputMissing))
	}
	if err := quick.Check(f, quickCfg); err != nil {
		t.Error(err)
	}
}

func TestPropertyMissingInputAlwaysHalts(t *testing.T) {
	f := func(e evidence, which uint8) bool {
		stages := []string{"policy", "nfr"}
		drop := stages[int(which)%len(stages)]
		e.Completed = slices.DeleteFunc(slices.Clone(e.Completed), func(s string) bool { return s == drop })
		c := Compute(e.Evidence)
		return c.Band == runner.BandBlocked && c.Score == 0 && slices.Contains(c.ReasonCodes, runner.ConfidenceInputMissing) && len(Missing(c)) > 0
	}
	if err := quick.Check(f, quickCfg); err != nil {
		t.Error(err)
	}
}

func TestPropertyScoreIsTheSumOfContributions(t *testing.T) {
	f := func(e evidence) bool {
		c := Compute(e.Evidence)
		if c.Band == runner.BandBlocked && slices.Contains(c.ReasonCodes, runner.ConfidenceInputMissing) {
			return true
		}
		sum := 0.0
		for _, in := range c.PerInput {
			sum += in.Contribution
		}
		return math.Abs(round3(sum)-c.Score) < 1e-9
	}
	if err := quick.Check(f, quickCfg); err != nil {
		t.Error(err)
	}
}

func TestCriticalRuleThatCouldNotEvaluateBlocks(t *testing.T) {
	ev := Evidence{
		Contract:  &runner.Contract{Environment: runner.Dev},
		Target:    &runner.TargetStack{},
		Completed: []string{"policy", "nfr"},
		PCRs:      []runner.PCR{{Engine: runner.EngineRego, RuleID: "nova.secrets.plaintext", Severity: runner.Critical, Result: runner.PCRError}},
	}
	if c := Compute(ev); c.Band != runner.BandBlocked {
		t.Errorf("band %s, want blocked when a critical rule's outcome is unknown", c.Band)
	}
}

func TestRequiredTestSuiteMissingHalts(t *testing.T) {
	ev := Evidence{
		Contract:  &runner.Contract{Environment: runner.QA, Validation: &runner.Validation{E2ESuite: "e2e.xml", LoadTest: "load.xml"}},
		Target:    &runner.TargetStack{},
		Completed: []string{"policy", "nfr"},
		Reports: []Report{
			{Field: "e2eSuite", Path: "e2e.xml", Total: 10},
			{Field: "loadTest", Path: "load.xml", Problem: runner.TestsReportMissing, Detail: "no such file"},
		},
	}
	c := Compute(ev)
	if c.Band != runner.BandBlocked || !slices.Equal(Missing(c), []string{InputTests}) {
		t.Errorf("band %s missing %v, want blocked on tests", c.Band, Missing(c))
	}
	// The same report missing in dev, where it is optional, only costs score.
	ev.Contract.Environment = runner.Dev
	if c := Compute(ev); c.Band == runner.BandBlocked || c.PerInput[InputTests].Value >= 1 {
		t.Errorf("optional report missing in dev: band %s tests %.3f", c.Band, c.PerInput[InputTests].Value)
	}
}

func TestInputs(t *testing.T) {
	ceiling := 100.0
	base := func() Evidence {
		return Evidence{
			Contract:  &runner.Contract{Environment: runner.Dev, NFR: &runner.NFR{MonthlyCostCeiling: &ceiling}},
			Target:    &runner.TargetStack{Instances: []runner.Instance{{Pinned: true}, {Pinned: false}}},
			Completed: []string{"policy", "nfr"},
			Commit:    CommitVerified,
		}
	}
	tests := []struct {
		name   string
		mutate func(*Evidence)
		input  string
		want   float64
		reason runner.Reason
	}{
		{"policy: one high and one low", func(e *Evidence) {
			e.PCRs = []runner.PCR{{Engine: "rego", Severity: runner.High, Result: runner.PCRFail}, {Engine: "rego", Severity: runner.Low, Result: runner.PCRFail}}
		}, InputPolicy, 0.79, runner.PolicyPenalized},
		{"policy: floor at zero", func(e *Evidence) {
			for range 7 {
				e.PCRs = append(e.PCRs, runner.PCR{Engine: "rego", Severity: runner.High, Result: runner.PCRFail})
			}
		}, InputPolicy, 0, runner.PolicyPenalized},
		{"policy: engine error counts like high", func(e *Evidence) {
			e.PCRs = []runner.PCR{{Engine: "checkov", Severity: runner.Info, Result: runner.PCRError}}
		}, InputPolicy, 0.8, runner.PolicyEngineFailed},
		{"policy: skipped engine costs nothing", func(e *Evidence) {
			e.PCRs = []runner.PCR{{Engine: "checkov", Severity: runner.Info, Result: runner.PCRSkipped}}
		}, InputPolicy, 1, ""},
		{"nfr: half satisfied", func(e *Evidence) {
			e.PCRs = []runner.PCR{{Engine: "nfr", Result: runner.PCRPass}, {Engine: "nfr", Result: runner.PCRFail}, {Engine: "nfr", Result: runner.PCRSkipped}}
		}, InputNFR, 0.5, runner.NFRUnmet},
		{"nfr: none declared in dev", func(e *Evidence) {}, InputNFR, 1, ""},
		{"nfr: none declared in prod", func(e *Evidence) { e.Contract.Environment = runner.Prod }, InputNFR, 0, runner.NFRUndeclared},
		{"cost: within budget", func(e *Evidence) { e.Cost = &runner.CostEstimate{Monthly: 100} }, InputCost, 1, ""},
		{"cost: 1.5x budget", func(e *Evidence) { e.Cost = &runner.CostEstimate{Monthly: 150} }, InputCost, 0.5, runner.CostOverBudget},
		{"cost: 2x budget", func(e *Evidence) { e.Cost = &runner.CostEstimate{Monthly: 200} }, InputCost, 0, runner.CostOverBudget},
		{"cost: skipped", func(e *Evidence) { e.Cost = &runner.CostEstimate{Skipped: true} }, InputCost, 0.5, runner.CostEstimateSkipped},
		{"cost: no budget", func(e *Evidence) { e.Cost = &runner.CostEstimate{Monthly: 5}; e.Contract.NFR = nil }, InputCost, 0.5, runner.CostNoBudget},
		{"tests: 9 of 10", func(e *Evidence) { e.Reports = []Report{{Field: "unitTests", Total: 11, Skipped: 1, Failed: 1}} }, InputTests, 0.9, runner.TestsFailing},
		{"tests: none given", func(e *Evidence) {}, InputTests, 0.5, runner.TestsNotProvided},
		{"provenance: verified, half pinned", func(e *Evidence) {}, InputProvenance, 0.75, runner.ProvenanceUnpinned},
		{"provenance: unsigned", func(e *Evidence) { e.Commit = CommitUnsigned }, InputProvenance, 0.25, runner.ProvenanceUnsigned},
		{"provenance: agent blended", func(e *Evidence) {
			conf := 0.6
			e.Contract.Profile, e.Contract.ConfidenceAtSubmission = runner.ProfileAgentic, &conf
		}, InputProvenance, 0.7, runner.ProvenanceAgent},
		{"schema: dev with nothing recommended", func(e *Evidence) { e.Contract.NFR = nil }, InputSchema, 0, runner.SchemaIncomplete},
		{"schema: dr needs only nfr and unit tests", func(e *Evidence) {
			e.Contract.Environment = runner.DR
			e.Contract.Validation = &runner.Validation{UnitTests: "u.xml"}
		}, InputSchema, 1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev := base()
			tt.mutate(&ev)
			in := Compute(ev).PerInput[tt.input]
			if math.Abs(in.Value-tt.want) > 1e-9 {
				t.Errorf("%s = %.3f, want %.3f (%s)", tt.input, in.Value, tt.want, in.Explanation)
			}
			if tt.reason != "" && !slices.Contains(in.Reasons, tt.reason) {
				t.Errorf("%s reasons %v lack %s", tt.input, in.Reasons, tt.reason)
			}
			if tt.reason == "" && len(in.Reasons) > 0 {
				t.Errorf("%s reasons %v, want none", tt.input, in.Reasons)
			}
		})
	}
}
