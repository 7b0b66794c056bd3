package runner

import (
	"encoding/json"
	"errors"
)

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
	// Operation is what applying the plan does, as the run asked for it
	// (OperationDestroy, or empty for create and update). It is digested
	// only when set, so every digest made before destroys existed stays
	// what it was.
	Operation Operation `json:"operation,omitempty"`
}

// PlanDigest binds a plan to what it was made from: sha256 over the
// canonical JSON of the plan's content, the engine that made it and will
// apply it at its exact version ("opentofu 1.12.6"), the contract digest,
// the commit and, for a destroy, the operation. An approval names this digest, so it cannot be replayed
// on another plan, another engine, another contract version or other code.
func PlanDigest(plan PlanContent, engine, contractDigest, commit string) (string, error) {
	if engine == "" {
		// A plan is only ever read by an engine; a digest without it
		// would let an approval of one engine's plan authorise another's.
		return "", errors.New("the plan digest needs the engine and its version")
	}
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
		Engine          string          `json:"engine"`
		ContractDigest  string          `json:"contract_digest"`
		Commit          string          `json:"commit"`
		Operation       Operation       `json:"operation,omitempty"`
	}{raw[0], raw[1], raw[2], raw[3], engine, contractDigest, commit, plan.Operation})
}
