package runner

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Counts tallies records by result, and failures by severity: the shape of
// the policy and NFR events' data and of every report's summary line.
type Counts struct {
	Pass    int `json:"pass"`
	Fail    int `json:"fail"`
	Skipped int `json:"skipped"`
	Error   int `json:"error"`
	// Failed counts failing records by severity.
	Failed map[Severity]int `json:"failed,omitempty"`
}

// CountPCRs tallies pcrs.
func CountPCRs(pcrs []PCR) Counts {
	var c Counts
	for _, p := range pcrs {
		switch p.Result {
		case PCRPass:
			c.Pass++
		case PCRFail:
			c.Fail++
			if c.Failed == nil {
				c.Failed = map[Severity]int{}
			}
			c.Failed[p.Severity]++
		case PCRSkipped:
			c.Skipped++
		case PCRError:
			c.Error++
		}
	}
	return c
}

// String renders counts as one line: "12 pass, 2 fail (1 high, 1 medium),
// 1 skipped, 0 error".
func (c Counts) String() string {
	s := fmt.Sprintf("%d pass, %d fail", c.Pass, c.Fail)
	if c.Fail > 0 {
		var parts []string
		for _, sev := range Severities {
			if n := c.Failed[sev]; n > 0 {
				parts = append(parts, fmt.Sprintf("%d %s", n, sev))
			}
		}
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return s + fmt.Sprintf(", %d skipped, %d error", c.Skipped, c.Error)
}

// PCREvidence encodes a record's evidence object with its reason code under
// "reason", where every renderer and the confidence stage look for it.
func PCREvidence(reason Reason, fields map[string]any) json.RawMessage {
	m := make(map[string]any, len(fields)+1)
	for k, v := range fields {
		m[k] = v
	}
	if reason != "" {
		m["reason"] = reason
	}
	raw, err := json.Marshal(m)
	if err != nil {
		// Only values that cannot be JSON (channels, NaN) end up here; the
		// reason alone still explains the record.
		raw, _ = json.Marshal(map[string]any{"reason": reason})
	}
	return raw
}

// PCRReason returns the reason code a record carries in evidence.reason,
// or "" for a plain pass or fail of a rule.
func PCRReason(p PCR) Reason {
	var ev struct {
		Reason Reason `json:"reason"`
	}
	if len(p.Evidence) == 0 || json.Unmarshal(p.Evidence, &ev) != nil {
		return ""
	}
	return ev.Reason
}

// NormalizePCRs is the one place where records from an engine (or the NFR
// stage) become part of a run: it stamps the contract id and evaluation
// time the engine left empty, and replaces every record that validate
// rejects (the published schema), or that claims another engine or
// contract, by an error record naming the engine. It never drops a record
// silently.
func NormalizePCRs(engine string, pcrs []PCR, contractID string, now time.Time, validate func(PCR) error) []PCR {
	out := make([]PCR, 0, len(pcrs))
	for i, p := range pcrs {
		if p.ContractID == "" {
			p.ContractID = contractID
		}
		if p.EvaluatedAt.IsZero() {
			p.EvaluatedAt = now
		}
		err := validate(p)
		switch {
		case err != nil:
		case p.ContractID != contractID:
			err = fmt.Errorf("contractId %q is not the contract being evaluated", p.ContractID)
		case p.Engine != engine:
			err = fmt.Errorf("engine %q is not the engine that returned it", p.Engine)
		}
		if err != nil {
			p = invalidRecord(engine, i, p.RuleID, err, contractID, now)
		}
		out = append(out, p)
	}
	return out
}

func invalidRecord(engine string, index int, ruleID string, err error, contractID string, now time.Time) PCR {
	if len(ruleID) > 120 {
		ruleID = ruleID[:120] + "…"
	}
	return PCR{
		ContractID:  contractID,
		EvaluatedAt: now,
		Engine:      engine,
		RuleID:      string(PolicyResultInvalid),
		Severity:    High,
		Result:      PCRError,
		Message:     fmt.Sprintf("engine %s returned an invalid record (#%d, rule %q): %v", engine, index, ruleID, err),
		Evidence:    PCREvidence(PolicyResultInvalid, map[string]any{"index": index, "ruleId": ruleID}),
	}
}
