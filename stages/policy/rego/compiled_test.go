package rego

import (
	"bytes"
	"errors"
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nova-platform/nova/runner"
)

var update = flag.Bool("update", false, "rewrite platform.ast from the rules")

// compiledFromSource compiles the embedded rules the slow way.
func compiledFromSource(t testing.TB) (*ast.Compiler, map[string][]byte) {
	t.Helper()
	sources, err := ruleSources()
	if err != nil {
		t.Fatal(err)
	}
	c, err := compileSources(sources)
	if err != nil {
		t.Fatal(err)
	}
	return c, sources
}

// roundTrip encodes c's modules as platform.ast does and restores a
// compiler from them.
func roundTrip(t testing.TB, c *ast.Compiler, sources map[string][]byte) (data []byte, restored *ast.Compiler) {
	t.Helper()
	data, err := encodeCompiled(c, sources)
	if err != nil {
		t.Fatal(err)
	}
	restored, err = restoreCompiled(string(data), sources)
	if err != nil {
		t.Fatal(err)
	}
	return data, restored
}

// TestCompiledRulesAreCurrent: platform.ast is what the compiler makes of
// the rules today, so every process restores rather than compiles.
func TestCompiledRulesAreCurrent(t *testing.T) {
	c, sources := compiledFromSource(t)
	want, err := encodeCompiled(c, sources)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		if err := os.WriteFile("platform.ast", want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("platform.ast")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("platform.ast is not what the rules compile to (the rules or OPA changed); regenerate with: make rules (go test ./stages/policy/rego -run TestCompiledRulesAreCurrent -update)")
	}
	if string(got) != compiledPlatform {
		t.Fatal("the embedded platform.ast differs from the file")
	}
	if _, err := restoreCompiled(compiledPlatform, sources); err != nil {
		t.Fatalf("the platform cannot be restored from platform.ast: %v", err)
	}
}

// TestRestoredRulesAreTheCompiledRules: the restored modules print as the
// compiled ones, encode to the same bytes (every location, index and flag
// kept), and the compiler's renamed variables come back.
func TestRestoredRulesAreTheCompiledRules(t *testing.T) {
	c, sources := compiledFromSource(t)
	data, restored := roundTrip(t, c, sources)
	if len(restored.Modules) != len(c.Modules) || len(c.Modules) != len(sources) {
		t.Fatalf("%d modules restored, %d compiled from %d files", len(restored.Modules), len(c.Modules), len(sources))
	}
	for name, m := range c.Modules {
		if got, want := restored.Modules[name].String(), m.String(); got != want {
			t.Errorf("%s restored as\n%s\nwant\n%s", name, got, want)
		}
	}
	again, err := encodeCompiled(restored, sources)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(again, data) {
		t.Error("the restored modules encode differently from the compiled ones")
	}
	if diff := cmp.Diff(c.RewrittenVars, restored.RewrittenVars); diff != "" || len(c.RewrittenVars) == 0 {
		t.Errorf("renamed variables (-compiled +restored):\n%s", diff)
	}
	// A location points into its file's source, as the parser left it.
	ast.WalkTerms(restored.Modules["secrets.rego"], func(term *ast.Term) bool {
		if l := term.Location; l != nil && l.File == "secrets.rego" && len(l.Text) > 0 && !bytes.Equal(l.Text, sources[l.File][l.Offset:l.Offset+len(l.Text)]) {
			t.Errorf("location %v: text %q is not at its offset", l, l.Text)
		}
		return false
	})
}

// TestRestoredCompilerIndexesAsTheCompiler: the indices the compiler
// keeps of comprehensions (a comprehension's result kept per value of
// the outer variable it joins on, instead of computed per binding) are
// built over restored modules as over compiled ones. The platform rules
// have no such comprehension today, so a rule that has one is added.
func TestRestoredCompilerIndexesAsTheCompiler(t *testing.T) {
	sources, err := ruleSources()
	if err != nil {
		t.Fatal(err)
	}
	sources["indexed.rego"] = []byte(`package nova.platform.indexed

matched contains x if {
	some x in input.xs
	ys := [y | some y in input.ys; y.k == x]
	count(ys) > 0
}
`)
	c, err := compileSources(sources)
	if err != nil {
		t.Fatal(err)
	}
	_, restored := roundTrip(t, c, sources)
	indexed := 0
	for name, m := range c.Modules {
		want, got := termsOf(m), termsOf(restored.Modules[name])
		if len(want) != len(got) {
			t.Fatalf("%s: %d terms restored, %d compiled", name, len(got), len(want))
		}
		for i := range want {
			wi, gi := c.ComprehensionIndex(want[i]), restored.ComprehensionIndex(got[i])
			if (wi == nil) != (gi == nil) || (wi != nil && wi.String() != gi.String()) {
				t.Errorf("%s: %v: comprehension index %v restored, %v compiled", name, want[i].Location, gi, wi)
			}
			if wi != nil {
				indexed++
			}
		}
	}
	if indexed == 0 {
		t.Fatal("the compiler indexed no comprehension: the check above checks nothing")
	}
	// And every rule's index, which picks the rules worth evaluating for
	// a reference, is there as well.
	rules := 0
	for _, m := range c.Modules {
		for _, r := range m.Rules {
			path := r.Ref().GroundPrefix()
			if want := c.RuleIndex(path); want != nil {
				rules++
				if restored.RuleIndex(path) == nil {
					t.Errorf("%v: no rule index restored", path)
				}
			}
		}
	}
	if rules == 0 {
		t.Fatal("the compiler indexed no rule")
	}
}

// TestRestoredRulesEvaluateAsCompiled: over every fixture, before and
// after plan, the restored rules give exactly the records the rules
// compiled from source give.
func TestRestoredRulesEvaluateAsCompiled(t *testing.T) {
	c, _ := compiledFromSource(t)
	fresh, err := preparePlatform(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	restored, err := compilePlatform(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if restored.compiler.Modules["lib.rego"] == c.Modules["lib.rego"] {
		t.Fatal("the two compilers share modules")
	}
	payloads := map[string]runner.PolicyPayload{"contract": resolved(t, "microservice.yml"), "plan500": benchPayload(t)}
	for _, dir := range []string{"pre", "plan"} {
		files, err := filepath.Glob(filepath.Join("testdata", dir, "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no fixtures in %s: %v", dir, err)
		}
		for _, f := range files {
			if dir == "pre" {
				payloads[f] = prePayload(t, filepath.Base(f))
			} else {
				payloads[f] = planPayload(t, filepath.Base(f))
			}
		}
	}
	for name, p := range payloads {
		want := evaluate(t, &Engine{platform: func() (*platform, error) { return fresh, nil }}, p)
		got := evaluate(t, &Engine{platform: func() (*platform, error) { return restored, nil }}, p)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-compiled +restored):\n%s", name, diff)
		}
	}
	// Rule by rule, as evaluate falls back to when the query over all of
	// them fails: each rule's own query is compiled against the restored
	// compiler.
	p := payloads["plan500"]
	in, err := restored.input(p)
	if err != nil {
		t.Fatal(err)
	}
	wantEach, wantFailed := fresh.evalEach(t.Context(), in)
	gotEach, gotFailed := restored.evalEach(t.Context(), in)
	if len(wantEach) != len(fresh.rules) || len(wantFailed)+len(gotFailed) > 0 {
		t.Fatalf("rule by rule: %d of %d rules evaluated, failures %v and %v", len(wantEach), len(fresh.rules), wantFailed, gotFailed)
	}
	if diff := cmp.Diff(wantEach, gotEach); diff != "" {
		t.Errorf("rule by rule (-compiled +restored):\n%s", diff)
	}
}

// TestCompiledRulesOfOtherSourcesAreNotRestored: a binary whose rules
// differ from platform.ast's compiles them from source.
func TestCompiledRulesOfOtherSourcesAreNotRestored(t *testing.T) {
	sources, err := ruleSources()
	if err != nil {
		t.Fatal(err)
	}
	sources["tags.rego"] = append(bytes.Clone(sources["tags.rego"]), "\n# a change\n"...)
	if _, err := restoreCompiled(compiledPlatform, sources); !errors.Is(err, errStaleCompiled) {
		t.Fatalf("restoring over changed sources: %v, want errStaleCompiled", err)
	}
}

// TestMalformedCompiledRulesAreRefused: a damaged platform.ast is an
// error, never a panic and never a compiler over half the rules. Cut
// short anywhere, it is refused; with a byte changed, it is refused or
// restores to a compiler (a changed letter inside a string is still a
// well-formed file).
func TestMalformedCompiledRulesAreRefused(t *testing.T) {
	sources, err := ruleSources()
	if err != nil {
		t.Fatal(err)
	}
	data := compiledPlatform
	for n := 0; n < len(data)-1; n += 1 + len(data)/700 {
		if c, err := restoreCompiled(data[:n], sources); err == nil {
			t.Fatalf("the first %d of %d bytes restored to a compiler of %d modules", n, len(data), len(c.Modules))
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	header := bytes.IndexByte([]byte(data), '\n')
	for range 300 {
		b := []byte(data)
		i := header + 1 + rng.IntN(len(b)-header-1)
		b[i] = byte(rng.IntN(256))
		_, _ = restoreCompiled(string(b), sources)
	}
}

func termsOf(m *ast.Module) []*ast.Term {
	var out []*ast.Term
	ast.WalkTerms(m, func(t *ast.Term) bool {
		out = append(out, t)
		return false
	})
	return out
}
