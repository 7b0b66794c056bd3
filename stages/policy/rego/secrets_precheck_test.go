package rego

import (
	"fmt"
	"path/filepath"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	opa "github.com/open-policy-agent/opa/v1/rego"

	"github.com/nova-platform/nova/runner"
)

// secretsFindings evaluates the secrets rule's findings over the payload,
// as "resource: message"; with is appended to the query.
func secretsFindings(t *testing.T, p *platform, payload runner.PolicyPayload, with string) []string {
	t.Helper()
	in, err := inputDocument(payload)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := opa.New(opa.Compiler(p.compiler), opa.Query("x := data.nova.platform.secrets.findings"+with), opa.ParsedInput(in)).Eval(t.Context())
	if err != nil || len(rs) != 1 {
		t.Fatalf("evaluating the secrets rule: %d results, %v", len(rs), err)
	}
	var fs []finding
	if err := remarshal(rs[0].Bindings["x"], &fs); err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, f := range fs {
		out = append(out, f.ResourceRef+": "+f.Message)
	}
	sort.Strings(out)
	return out
}

// TestSuspectPreCheckKeepsEveryFinding: the secrets rule walks only the
// resources its suspect pre-check lets through, which may only narrow
// where it looks. Over every plan fixture and the benchmark plan it finds
// exactly what it finds walking every resource. testdata/plan/secrets-tricky.json
// holds credentials nested deep, in keys and in values, in any case,
// written with JSON escapes such as \u0070assword, and with the characters
// Go's case folding equates with s and k.
func TestSuspectPreCheckKeepsEveryFinding(t *testing.T) {
	p := platformOf(t, newEngine(t))
	plans, err := filepath.Glob(filepath.Join("testdata", "plan", "*.json"))
	if err != nil || len(plans) == 0 {
		t.Fatalf("no plan fixtures: %v", err)
	}
	payloads := map[string]runner.PolicyPayload{"bench-500": benchPayload(t)}
	for _, f := range plans {
		payloads[filepath.Base(f)] = planPayload(t, filepath.Base(f))
	}
	const everyResource = " with data.nova.platform.secrets.suspect as true"
	for name, payload := range payloads {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(secretsFindings(t, p, payload, everyResource), secretsFindings(t, p, payload, "")); diff != "" {
				t.Errorf("the pre-check dropped findings (-every resource +pre-checked):\n%s", diff)
			}
		})
	}

	// The corpus is worth something only if the rule does flag each
	// tricky resource, and leaves the harmless ones alone.
	flagged := map[string]bool{}
	for _, f := range secretsFindings(t, p, planPayload(t, "secrets-tricky.json"), "") {
		var addr string
		fmt.Sscanf(f, "terraform_data.%s", &addr)
		flagged[addr[:len(addr)-1]] = true
	}
	for _, name := range []string{"nested", "value_kv", "upper_key", "camel_key", "escaped_key", "escaped_value", "long_s_key",
		"long_s_escaped", "kelvin_key", "kelvin_escaped", "aws_key", "pem", "github", "url_password", "url_escaped_slash", "named_token", "in_array"} {
		if !flagged[name] {
			t.Errorf("the secrets rule does not flag terraform_data.%s", name)
		}
	}
	for _, name := range []string{"sensitive_masked", "reference_only", "placeholder", "before_only", "plain", "unicode_plain"} {
		if flagged[name] {
			t.Errorf("the secrets rule flags terraform_data.%s, which holds no secret", name)
		}
	}
}

func platformOf(t testing.TB, e *Engine) *platform {
	t.Helper()
	p, err := e.platform()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
