package rego

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// TestPolicyDocListsEveryRule keeps the platform rules table of
// docs/policy.md in step with the rules' own metadata.
func TestPolicyDocListsEveryRule(t *testing.T) {
	doc, err := os.ReadFile("../../../docs/policy.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range mustRules(t) {
		row := fmt.Sprintf("| `%s` | %s |", r.ID, r.Severity)
		if !strings.Contains(string(doc), row) {
			t.Errorf("docs/policy.md has no row starting %q", row)
		}
	}
}
