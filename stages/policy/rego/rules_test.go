package rego

import (
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

// TestRegoRules runs the Rego tests of the platform rules (rules/*_test.rego)
// with OPA's tester, as `opa test rules/` would, and fails on any failing
// or erroring test.
func TestRegoRules(t *testing.T) {
	sources, err := ruleSources(true)
	if err != nil {
		t.Fatal(err)
	}
	mods := map[string]*ast.Module{}
	for name, src := range sources {
		if mods[name], err = ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1}); err != nil {
			t.Fatal(err)
		}
	}
	ch, err := tester.NewRunner().SetModules(mods).RaiseBuiltinErrors(true).RunTests(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for r := range ch {
		ran++
		t.Run(r.Package+"."+r.Name, func(t *testing.T) {
			if r.Error != nil {
				t.Fatalf("error: %v", r.Error)
			}
			if r.Fail {
				t.Fatalf("failed at %s", r.Location)
			}
		})
	}
	// Every platform rule has its tests; fewer than that means a test file
	// went missing from the embed.
	if ran < 2*len(mustRules(t)) {
		t.Errorf("ran %d Rego tests, want at least two per platform rule", ran)
	}
}

func mustRules(t *testing.T) []RuleInfo {
	t.Helper()
	rules, err := PlatformRules(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return rules
}
