package rego

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"
	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nova-platform/nova/runner"
)

// secretsFindings evaluates the platform rules over input and returns the
// secrets rule's findings as "resource: message".
func secretsFindings(t *testing.T, e *Engine, input ast.Value) []string {
	t.Helper()
	pcrs, err := platformOf(t, e).evaluate(t.Context(), runner.PostPlan, input)
	if err != nil {
		t.Fatal(err)
	}
	out := []string{}
	for _, p := range pcrs {
		if p.RuleID != "nova.secrets.plaintext" {
			continue
		}
		switch p.Result {
		case runner.PCRFail:
			out = append(out, p.ResourceRef+": "+p.Message)
		case runner.PCRError:
			t.Fatalf("the secrets rule could not be evaluated: %s", p.Message)
		}
	}
	sort.Strings(out)
	return out
}

// withIndex returns input with plan_index.suspects replaced by every
// position in resource_changes (the rule unfiltered), or with no plan_index
// at all (the rule's own pre-check, as under conftest).
func withIndex(t *testing.T, input ast.Value, all bool) ast.Value {
	t.Helper()
	obj := input.(ast.Object)
	out := ast.NewObject()
	obj.Foreach(func(k, v *ast.Term) {
		if !k.Equal(ast.StringTerm("plan_index")) {
			out.Insert(k, v)
		}
	})
	if !all {
		return out
	}
	index := obj.Get(ast.StringTerm("plan_index"))
	if index == nil {
		t.Fatal("the input has no plan_index")
	}
	changes := obj.Get(ast.StringTerm("plan")).Value.(ast.Object).Get(ast.StringTerm("resource_changes")).Value.(*ast.Array)
	every := make([]int, changes.Len())
	for i := range every {
		every[i] = i
	}
	out.Insert(ast.StringTerm("plan_index"), ast.ObjectTerm(
		[2]*ast.Term{ast.StringTerm("by_type"), index.Value.(ast.Object).Get(ast.StringTerm("by_type"))},
		[2]*ast.Term{ast.StringTerm("suspects"), ast.NewTerm(positions(every))},
	))
	return out
}

// TestSuspectFilterKeepsEveryFinding: the Go pre-filter may only narrow
// which resources the secrets rule walks. Over every plan fixture, the
// benchmark plan and testdata/plan/secrets-tricky.json (credentials nested
// deep, in keys and in values, in any case, written with JSON escapes such
// as \u0070assword, and with the characters Go's case folding equates with
// s and k), the rule finds exactly the same with the filter, with every
// resource passed as a suspect, and with the rule's own pre-check.
func TestSuspectFilterKeepsEveryFinding(t *testing.T) {
	e := newEngine(t)
	plans, err := filepath.Glob(filepath.Join("testdata", "plan", "*.json"))
	if err != nil || len(plans) == 0 {
		t.Fatalf("no plan fixtures: %v", err)
	}
	payloads := map[string]runner.PolicyPayload{"bench-500": benchPayload(t)}
	for _, f := range plans {
		payloads[filepath.Base(f)] = planPayload(t, filepath.Base(f))
	}
	for name, p := range payloads {
		t.Run(name, func(t *testing.T) {
			input, err := platformOf(t, e).input(p)
			if err != nil {
				t.Fatal(err)
			}
			filtered := secretsFindings(t, e, input)
			unfiltered := secretsFindings(t, e, withIndex(t, input, true))
			if diff := cmp.Diff(unfiltered, filtered); diff != "" {
				t.Errorf("the Go filter dropped findings (-every resource +filtered):\n%s", diff)
			}
			if diff := cmp.Diff(unfiltered, secretsFindings(t, e, withIndex(t, input, false))); diff != "" {
				t.Errorf("the rule's own pre-check dropped findings (-every resource +pre-check):\n%s", diff)
			}
		})
	}

	// The corpus is worth something only if the unfiltered rule does flag
	// each tricky resource, and leaves the harmless ones alone.
	input, err := platformOf(t, e).input(planPayload(t, "secrets-tricky.json"))
	if err != nil {
		t.Fatal(err)
	}
	flagged := map[string]bool{}
	for _, f := range secretsFindings(t, e, withIndex(t, input, true)) {
		var addr string
		fmt.Sscanf(f, "terraform_data.%s", &addr)
		flagged[addr[:len(addr)-1]] = true
	}
	for _, name := range []string{"nested", "value_kv", "upper_key", "camel_key", "escaped_key", "escaped_value", "long_s_key",
		"long_s_escaped", "kelvin_key", "kelvin_escaped", "aws_key", "pem", "github", "url_password", "url_escaped_slash", "named_token", "in_array"} {
		if !flagged[name] {
			t.Errorf("the secrets rule does not flag terraform_data.%s: the corpus no longer tests the filter with it", name)
		}
	}
	for _, name := range []string{"sensitive_masked", "reference_only", "placeholder", "before_only", "plain", "unicode_plain"} {
		if flagged[name] {
			t.Errorf("the secrets rule flags terraform_data.%s, which holds no secret", name)
		}
	}
}

// TestSuspectScanFoldsLikeTheRule: the rule's patterns are (?i) Go regular
// expressions, for which a character matches every character of its case
// folding orbit; the scan must fold each character that has an ASCII
// letter in its orbit to that letter, written plainly or as an escape.
func TestSuspectScanFoldsLikeTheRule(t *testing.T) {
	p := platformOf(t, newEngine(t))
	folds := 0
	for r := rune(0); r <= unicode.MaxRune; r++ {
		ascii := rune(-1)
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			if f < 0x80 {
				ascii = unicode.ToLower(f)
			}
		}
		if r < 0x80 && unicode.IsLetter(r) {
			ascii = unicode.ToLower(r)
		}
		if ascii < 0 {
			continue
		}
		folds++
		for _, text := range []string{string(r), fmt.Sprintf(`\u%04x`, r), fmt.Sprintf(`\u%04X`, r)} {
			if r > 0xffff && text != string(r) {
				continue
			}
			s := &suspectScanner{suspectWords: p.suspects}
			if got := s.fold([]byte(text)); len(got) != 1 || rune(got[0]) != ascii {
				t.Errorf("%q (%U) folds to %q, want %q", text, r, got, ascii)
			}
		}
	}
	if folds < 54 {
		t.Errorf("only %d characters fold to ASCII letters", folds)
	}
	for text, want := range map[string]bool{
		`"\u0070assword"`: true, `"pa\u017f\u017fword"`: true, `"API_\u212aEY"`: true, `"postgres:\/\/u:p@h"`: true,
		`"\\u0070assword"`: false, `"p\"assword"`: false, `"name": "app"`: false,
	} {
		s := &suspectScanner{suspectWords: p.suspects}
		if got := s.suspect([]byte(text)); got != want {
			t.Errorf("suspect(%s) = %v, want %v", text, got, want)
		}
	}
}

// TestPlanIndexByType: by_type lists each resource_changes position under
// its type, whatever the change; the rules decide which are changes.
func TestPlanIndexByType(t *testing.T) {
	plan := []byte(`{"resource_changes": [{"type": "a"}, {"type": "b"}, {"type": "a"}, {"type": 3}, {}, "x"], "other": 1}`)
	_, x, err := planValue(plan, &suspectScanner{suspectWords: platformOf(t, newEngine(t)).suspects})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string][]int{"a": {0, 2}, "b": {1}}, x.byType); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for _, plan := range []string{`{"resource_changes": {}}`, `[1]`, `{"resource_changes": [], "resource_changes": null}`} {
		if _, x, err := planValue([]byte(plan), nil); err != nil || x != nil {
			t.Errorf("%s: index %v, error %v; want no index", plan, x, err)
		}
	}
}

func TestPlanValueReadsFixturesAsOPADoes(t *testing.T) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*", "*.json"))
	if len(files) < 10 {
		t.Fatalf("only %d JSON fixtures", len(files))
	}
	files = append(files, "testdata/plan/secrets-tricky.json")
	for _, f := range slices.Compact(files) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sameAsOPA(t, data)
	}
}

// platformOf is e's compiled platform rules.
func platformOf(t *testing.T, e *Engine) *platform {
	t.Helper()
	p, err := e.platform()
	if err != nil {
		t.Fatal(err)
	}
	return p
}
