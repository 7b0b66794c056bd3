package kyvernojson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// report is one payload resource's entry in `kyverno-json scan --output
// json`: the resource, and per policy the result of each rule.
type report struct {
	Resource any `json:"resource"`
	Results  []struct {
		Policy struct {
			Metadata struct {
				Name        string            `json:"name"`
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		} `json:"policy"`
		Rules []struct {
			Rule struct {
				Name string `json:"name"`
			} `json:"rule"`
			Identifier string      `json:"identifier"`
			Error      string      `json:"error"`
			Violations []violation `json:"violations"`
		} `json:"rules"`
	} `json:"results"`
}

type violation struct {
	Message string `json:"message"`
	Errors  []struct {
		Type   string `json:"type"`
		Field  string `json:"field"`
		Value  any    `json:"value"`
		Detail string `json:"detail"`
	} `json:"errors"`
}

// severityAnnotation is Kyverno's annotation for a policy's severity.
const severityAnnotation = "policies.kyverno.io/severity"

var severities = map[string]runner.Severity{
	"critical": runner.Critical, "high": runner.High, "medium": runner.Medium, "low": runner.Low, "info": runner.Info,
}

// Parse normalizes kyverno-json's report: a fail record per rule and
// violating resource, an error record per rule that could not be
// evaluated, and one pass record per rule for the resources it passed; one
// skipped record (POLICY_ENGINE_NO_CHECKS) when no rule reported at all.
func Parse(data []byte) ([]runner.PCR, error) {
	data = bytes.TrimSpace(data)
	if len(data) == 0 {
		return nil, fmt.Errorf("empty output")
	}
	var reports []report
	if err := json.Unmarshal(data, &reports); err != nil {
		return nil, err
	}
	var out []runner.PCR
	passes := map[string]int{}
	passSeverity := map[string]runner.Severity{}
	var passOrder []string
	for _, r := range reports {
		for _, pr := range r.Results {
			policy := pr.Policy.Metadata.Name
			sev, ok := severities[strings.ToLower(pr.Policy.Metadata.Annotations[severityAnnotation])]
			if !ok {
				sev = runner.Medium
			}
			for _, rr := range pr.Rules {
				id := "kyverno." + policy + "." + rr.Rule.Name
				ref := rr.Identifier
				if ref == "" {
					ref = address(r.Resource)
				}
				ev := map[string]any{"policy": policy, "rule": rr.Rule.Name}
				switch {
				case rr.Error != "":
					ev["reason"] = runner.PolicyEngineError
					out = append(out, runner.PCR{Engine: runner.EngineKyverno, RuleID: id, Severity: sev, Result: runner.PCRError,
						Message: fmt.Sprintf("%s could not be evaluated: %s", id, rr.Error), ResourceRef: ref, Evidence: mustJSON(ev)})
				case len(rr.Violations) > 0:
					ev["violations"] = rr.Violations
					out = append(out, runner.PCR{Engine: runner.EngineKyverno, RuleID: id, Severity: sev, Result: runner.PCRFail,
						Message: describe(rr.Violations), ResourceRef: ref, Evidence: mustJSON(ev)})
				default:
					if _, seen := passes[id]; !seen {
						passOrder = append(passOrder, id)
					}
					passes[id]++
					passSeverity[id] = sev
				}
			}
		}
	}
	sort.Strings(passOrder)
	for _, id := range passOrder {
		out = append(out, runner.PCR{Engine: runner.EngineKyverno, RuleID: id, Severity: passSeverity[id], Result: runner.PCRPass,
			Message: fmt.Sprintf("%s: passed on %d resource(s)", id, passes[id]), ResourceRef: "plan",
			Evidence: mustJSON(map[string]any{"resources": passes[id]})})
	}
	if len(out) == 0 {
		// `[]`, or resources no policy matched: without a record, policies
		// that never applied would look the same as policies that passed.
		out = append(out, runner.PCR{
			Engine: runner.EngineKyverno, RuleID: string(runner.PolicyEngineNoChecks), Severity: runner.Info,
			Result: runner.PCRSkipped, ResourceRef: "plan",
			Message:  "kyverno-json ran but reported no rule result: no policy applied to a resource of the plan",
			Evidence: mustJSON(map[string]any{"reason": runner.PolicyEngineNoChecks, "resources": len(reports)}),
		})
	}
	return out, nil
}

// describe renders a rule's violations: the policy's message when it has
// one, else each failed assertion as "field: detail".
func describe(vs []violation) string {
	var parts []string
	for _, v := range vs {
		if v.Message != "" {
			parts = append(parts, v.Message)
			continue
		}
		for _, e := range v.Errors {
			parts = append(parts, fmt.Sprintf("%s: %s", e.Field, e.Detail))
		}
	}
	if len(parts) == 0 {
		return "the rule's assertions failed"
	}
	return strings.Join(parts, "; ")
}

// address reads a Terraform resource change's address from the payload.
func address(resource any) string {
	if m, ok := resource.(map[string]any); ok {
		if a, ok := m["address"].(string); ok {
			return a
		}
	}
	return "plan"
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}
