package runner

import "encoding/json"

// PlanContent is the part of a plan the digest covers: every planned
// resource change, every output change, and the configuration Terraform
// will run — provisioners, module sources, expressions. Resource changes
// alone are not enough: a provisioner added to a module changes what apply
// executes without changing a single planned attribute.
type PlanContent struct {
	ResourceChanges any `json:"resource_changes"`
	OutputChanges   any `json:"output_changes"`
	Configuration   any `json:"configuration"`
	Variables       any `json:"variables"`
}

// PlanDigest binds a plan to what it was made from: sha256 over the
// canonical JSON of the plan's content, the contract digest and the commit.
// An approval names this digest, so it cannot be replayed on another plan,
// another contract version or other code.
func PlanDigest(plan PlanContent, contractDigest, commit string) (string, error) {
	parts := []any{plan.ResourceChanges, plan.OutputChanges, plan.Configuration, plan.Variables}
	raw := make([]json.RawMessage, len(parts))
	for i, p := range parts {
		b, err := Canonical(p)
		if err != nil {
			return "", err
		}
		// A typed nil and an empty collection must digest alike: the same
		// plan read twice may decode either way.
		switch string(b) {
		case "null", "[]", "{}":
			b = []byte("null")
		}
		raw[i] = b
	}
	return Digest(struct {
		ResourceChanges json.RawMessage `json:"resource_changes"`
		OutputChanges   json.RawMessage `json:"output_changes"`
		Configuration   json.RawMessage `json:"configuration"`
		Variables       json.RawMessage `json:"variables"`
		ContractDigest  string          `json:"contract_digest"`
		Commit          string          `json:"commit"`
	}{raw[0], raw[1], raw[2], raw[3], contractDigest, commit})
}
