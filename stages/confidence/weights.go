package confidence

import "github.com/nova-platform/nova/runner"

// The six canonical inputs, in the order they are explained.
const (
	InputSchema     = "schema"
	InputPolicy     = "policy"
	InputNFR        = "nfr"
	InputTests      = "tests"
	InputCost       = "cost"
	InputProvenance = "provenance"
)

// Inputs lists the input names in explanation order.
var Inputs = []string{InputSchema, InputPolicy, InputNFR, InputTests, InputCost, InputProvenance}

// weights is the one table of input weights, in hundredths so that the
// arithmetic of a score can be redone by hand exactly; they sum to 100 (a
// test checks). Policy weighs most because it is where known-bad changes
// show up; tests next, since they are the only evidence the change works.
var weights = map[string]int{
	InputSchema:     10,
	InputPolicy:     30,
	InputNFR:        15,
	InputTests:      20,
	InputCost:       10,
	InputProvenance: 15,
}

// Weight returns the weight of an input.
func Weight(input string) float64 { return float64(weights[input]) / 100 }

// thresholds are frozen per environment, in thousandths so that comparison
// is exact. Changing them is a code change, reviewed like one: there is
// deliberately no configuration knob.
var thresholds = map[runner.Environment]int{
	runner.Dev:  500,
	runner.QA:   750,
	runner.Prod: 900,
	runner.DR:   950,
}

// Threshold returns the environment's pass threshold.
func Threshold(env runner.Environment) float64 { return float64(thresholds[env]) / 1000 }

// severityPenalty is what one failing PCR costs the policy input. Critical
// has no penalty because it blocks outright.
var severityPenalty = map[runner.Severity]float64{
	runner.High:   0.20,
	runner.Medium: 0.05,
	runner.Low:    0.01,
	runner.Info:   0,
}

// enginePenalty is what an engine that could not evaluate costs: as much
// as a high finding, since whatever it would have found is unknown.
const enginePenalty = 0.20
