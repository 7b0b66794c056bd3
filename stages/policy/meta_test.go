package policy

import (
	_ "embed"
	"testing"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/tester"
)

//go:embed meta_test.rego
var metaTestRego string

// TestMetaPolicyRegoTests runs meta_test.rego with OPA's tester.
func TestMetaPolicyRegoTests(t *testing.T) {
	mods := map[string]*ast.Module{}
	for name, src := range map[string]string{"meta.rego": metaRego, "meta_test.rego": metaTestRego} {
		m, err := ast.ParseModuleWithOpts(name, src, ast.ParserOptions{RegoVersion: ast.RegoV1})
		if err != nil {
			t.Fatal(err)
		}
		mods[name] = m
	}
	ch, err := tester.NewRunner().SetModules(mods).RaiseBuiltinErrors(true).RunTests(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	ran := 0
	for r := range ch {
		ran++
		if r.Error != nil || r.Fail {
			t.Errorf("%s.%s: fail=%v error=%v", r.Package, r.Name, r.Fail, r.Error)
		}
	}
	if ran < 4 {
		t.Errorf("ran %d meta-policy tests, want 4", ran)
	}
}
