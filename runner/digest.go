package runner

import "encoding/json"

// PlanDigest binds a plan to what it was made from: sha256 over the
// canonical JSON of Terraform's resource_changes, the contract digest and the
// commit. An approval names this digest, so it cannot be replayed on another
// plan, another contract version or other code.
//
// resourceChanges is the plan JSON's resource_changes array (any JSON
// shape; nil counts as empty).
func PlanDigest(resourceChanges any, contractDigest, commit string) (string, error) {
	rc, err := Canonical(resourceChanges)
	if err != nil {
		return "", err
	}
	// A typed nil slice and an empty one must digest alike.
	if string(rc) == "null" {
		rc = []byte("[]")
	}
	return Digest(struct {
		ResourceChanges json.RawMessage `json:"resource_changes"`
		ContractDigest  string          `json:"contract_digest"`
		Commit          string          `json:"commit"`
	}{rc, contractDigest, commit})
}
