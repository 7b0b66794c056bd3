package policy

import "github.com/nova-platform/nova/runner"

// Counts tallies records by result, and failures by severity: the shape of
// the policy and NFR events' data and of every report's summary line.
type Counts struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
	Error   int `json:"error"`
	// Failed counts failing records by severity.
	Failed map[runner.Severity]int `json:"failed,omitempty"`
}

// Count tallies pcrs.
func Count(pcrs []runner.PCR) Counts {
	var c Counts
	for _, p := range pcrs {
		switch p.Result {
		case runner.PCRPass:
			c.Pass++
		case runner.PCRFail:
			c.Fail++
			if c.Failed == nil {
				c.Failed = map[runner.Severity]int{}
			}
			c.Failed[p.Severity]++
		case runner.PCRSkipped:
			c.Skipped++
		case runner.PCRError:
			c.Error++
		}
	}
	return c
}
