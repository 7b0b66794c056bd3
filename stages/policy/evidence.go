package policy

import (
	"encoding/json"

	"github.com/nova-platform/nova/runner"
)

// Evidence encodes a record's evidence object with its reason code under
// "reason", where every renderer and the confidence stage look for it.
func Evidence(reason runner.Reason, fields map[string]any) json.RawMessage {
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

// ReasonOf returns the reason code a record carries in evidence.reason, or
// "" for a plain pass or fail of a rule.
func ReasonOf(p runner.PCR) runner.Reason {
	var ev struct {
		Reason runner.Reason `json:"reason"`
	}
	if len(p.Evidence) == 0 || json.Unmarshal(p.Evidence, &ev) != nil {
		return ""
	}
	return ev.Reason
}
