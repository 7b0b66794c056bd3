package schema

import (
	"fmt"
	"strings"

	"github.com/hashicorp/go-version"

	"github.com/nova-platform/nova/runner"
)

// agenticFields are accepted only with profile: agentic.
var agenticFields = []string{"/naturalLanguageIntent", "/confidenceAtSubmission", "/agentTrace"}

// checkRules applies what JSON Schema cannot say clearly: fields mandatory
// per environment, and the agentic fields' dependency on the profile.
func checkRules(doc *document, file string, envFromFlag bool) []runner.Finding {
	root, _ := doc.value.(map[string]any)
	env := runner.Environment(fmt.Sprint(root["environment"]))
	var out []located
	for _, field := range runner.RequiredFields(env) {
		if present(root, field) {
			continue
		}
		why := fmt.Sprintf("environment %s requires %s", env, field)
		if envFromFlag {
			why += " (environment set by --env)"
		}
		// The location is the environment field: it is what demands the
		// missing one, and the missing one has no position of its own.
		out = append(out, doc.at(file, "/environment", runner.Finding{Reason: runner.ContractEnvFieldMissing, Field: field, Message: why}))
	}
	if root["profile"] != runner.ProfileAgentic {
		for _, field := range agenticFields {
			if present(root, field) {
				out = append(out, doc.at(file, field, runner.Finding{
					Reason: runner.ContractAgenticField, Field: field,
					Message: fmt.Sprintf("%s is only accepted with profile: agentic", field),
				}))
			}
		}
	}
	if c, ok := root["engineVersion"].(string); ok {
		// The engine adapter checks the binary against it; a constraint
		// that cannot be read would otherwise surface only at plan time.
		if _, err := version.NewConstraint(c); err != nil {
			out = append(out, doc.at(file, "/engineVersion", runner.Finding{
				Reason: runner.ContractFieldValue, Field: "/engineVersion",
				Message: fmt.Sprintf("engineVersion %q is not a version constraint (such as \">= 1.12\" or \"~> 1.11.0\"): %v", c, err),
			}))
		}
	}
	return sortFindings(out)
}

func present(root map[string]any, field string) bool {
	var cur any = root
	for _, part := range strings.Split(strings.TrimPrefix(field, "/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			return false
		}
		if cur, ok = m[part]; !ok || cur == nil || cur == "" {
			return false
		}
	}
	return true
}
