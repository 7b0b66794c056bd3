package terraform

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	ctyjson "github.com/zclconf/go-cty/cty/json"

	"github.com/nova-platform/nova/runner"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata")

// hostile holds strings that would change the structure of naively
// templated HCL: closing quotes, interpolations, template directives,
// heredoc markers and newlines that start new blocks.
var hostile = []string{
	`plain`,
	`say "hi"`,
	`${file("/etc/passwd")}`,
	`$${already escaped}`,
	`%{ for x in ["a"] }${x}%{ endfor }`,
	"line one\nline two",
	"EOT",
	"<<EOT\n}\nresource \"terraform_data\" \"pwned\" {}\nEOT",
	"\" }\nresource \"terraform_data\" \"pwned\" {\n  input = \"",
	`back\slash \" \\" \n`,
	"tab\tand\rcarriage",
	"# not a comment",
	"// nor this",
	"/* nor this */",
	"unicode ✓ 日本語",
}

func TestRenderedValuesCannotChangeStructure(t *testing.T) {
	inputs := map[string]runner.Value{}
	tags := map[string]any{}
	var list []any
	for i, s := range hostile {
		inputs[name(i)] = runner.Value{Type: "string", Value: s}
		tags[s] = s // hostile map keys too
		list = append(list, s)
	}
	inputs["tags"] = runner.Value{Type: "map(string)", Value: tags}
	inputs["list"] = runner.Value{Type: "list(string)", Value: list}
	target := &runner.TargetStack{Stack: "hostile", StackVersion: "1.0.0", Instances: []runner.Instance{
		{Name: "victim", Module: "m", Version: "1.0.0", Inputs: inputs, Outputs: []string{"out"}},
		{Name: "neighbour", Module: "m", Version: "1.0.0", Wires: map[string]runner.Ref{"in": {Instance: "victim", Output: "out"}}},
	}}
	src, err := RenderRoot(target, "local", false)
	if err != nil {
		t.Fatal(err)
	}
	f, diags := hclsyntax.ParseConfig(src, "main.tf", hcl.InitialPos)
	if diags.HasErrors() {
		t.Fatalf("rendered HCL does not parse: %s\n%s", diags, src)
	}
	body := f.Body.(*hclsyntax.Body)

	var blocks []string
	for _, b := range body.Blocks {
		blocks = append(blocks, b.Type+" "+strings.Join(b.Labels, " "))
	}
	wantBlocks := []string{"terraform ", "module victim", "module neighbour", "output victim__out"}
	if diff := cmp.Diff(wantBlocks, blocks); diff != "" {
		t.Fatalf("block structure changed (-want +got):\n%s\n%s", diff, src)
	}
	if len(body.Attributes) != 0 {
		t.Errorf("root body gained attributes: %v", keys(body.Attributes))
	}

	victim := body.Blocks[1].Body
	wantAttrs := []string{"source", "tags", "list"}
	for i := range hostile {
		wantAttrs = append(wantAttrs, name(i))
	}
	sort.Strings(wantAttrs)
	if diff := cmp.Diff(wantAttrs, keys(victim.Attributes)); diff != "" {
		t.Errorf("module attributes changed (-want +got):\n%s", diff)
	}
	if len(victim.Blocks) != 0 {
		t.Errorf("module gained nested blocks")
	}
	// Every value must be a literal: evaluating it without any variables or
	// functions must succeed and give back exactly the contract's value.
	for attrName, v := range inputs {
		got, diags := victim.Attributes[attrName].Expr.Value(nil)
		if diags.HasErrors() {
			t.Errorf("input %s is not a plain literal: %s", attrName, diags)
			continue
		}
		if want := mustCty(t, v.Value); !equalJSON(t, got, want) {
			t.Errorf("input %s round-trips as %#v, want %#v", attrName, got, want)
		}
	}
	neighbour := body.Blocks[2].Body
	refs := neighbour.Attributes["in"].Expr.Variables()
	if len(refs) != 1 || refs[0].RootName() != "module" {
		t.Errorf("wire is not a single module reference: %v", refs)
	}
}

func TestRenderRejectsNonIdentifierNames(t *testing.T) {
	for _, bad := range []runner.TargetStack{
		{Stack: "s", StackVersion: "1.0.0", Instances: []runner.Instance{{Name: "a\"b", Module: "m", Version: "1"}}},
		{Stack: "s", StackVersion: "1.0.0", Instances: []runner.Instance{{Name: "a", Module: "m", Version: "1", Inputs: map[string]runner.Value{"x = 1\ny": {Type: "string", Value: ""}}}}},
		{Stack: "s", StackVersion: "1.0.0", Instances: []runner.Instance{{Name: "a", Module: "m", Version: "1", Wires: map[string]runner.Ref{"x": {Instance: "b}", Output: "o"}}}}},
		{Stack: "s\n}", StackVersion: "1.0.0"},
		{Stack: "s", StackVersion: "1.0.0", Instances: []runner.Instance{{Name: "a", Module: "m", Version: "1", Inputs: map[string]runner.Value{"count": {Type: "number", Value: json.Number("2")}}}}},
	} {
		if _, err := RenderRoot(&bad, "", false); runner.ReasonOf(err) != runner.RenderFailed {
			t.Errorf("RenderRoot(%+v) = %v, want %s", bad, err, runner.RenderFailed)
		}
	}
	if _, err := RenderRoot(&runner.TargetStack{Stack: "s", StackVersion: "1.0.0"}, `local" {} x {`, false); runner.ReasonOf(err) != runner.BackendConfigInvalid {
		t.Errorf("hostile backend type: %v, want %s", err, runner.BackendConfigInvalid)
	}
}

func TestRenderGolden(t *testing.T) {
	target := &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0", Instances: []runner.Instance{
		{Name: "message", Module: "hello-message", Version: "1.0.0", Depth: 1, Outputs: []string{"text", "secret"}, SensitiveOutputs: []string{"secret"},
			Inputs: map[string]runner.Value{
				"audience": {Type: "string", Value: "Nova"},
				"tags":     {Type: "map(string)", Value: map[string]any{"nova:environment": "dev"}},
				"replicas": {Type: "number", Value: json.Number("2")},
				"enabled":  {Type: "bool", Value: true},
				"names":    {Type: "list(string)", Value: []any{}},
			}},
		{Name: "echo", Module: "hello-echo", Version: "1.0.0", Depth: 2, Parent: "message", Outputs: []string{"echoed"},
			Wires: map[string]runner.Ref{"text": {Instance: "message", Output: "text"}}},
	}}
	// With encryption, the root carries OpenTofu's encryption block and
	// names the key provider, whose passphrase it never holds.
	for _, tt := range []struct {
		dir       string
		encrypted bool
	}{{"hello", false}, {"hello-encrypted", true}} {
		t.Run(tt.dir, func(t *testing.T) {
			got, err := RenderRoot(target, "local", tt.encrypted)
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", tt.dir, "want.main.tf"), got)
		})
	}
}

func golden(t *testing.T, golden string, got []byte) {
	t.Helper()
	if *update {
		if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatalf("%v (create it with: go test ./runner/terraform -run TestRenderGolden -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("rendered root differs from %s (-want +got):\n%s\nIf the change is intended: go test ./runner/terraform -run TestRenderGolden -update", golden, diff)
	}
}

func name(i int) string { return "in_" + string(rune('a'+i)) }

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func mustCty(t *testing.T, v any) cty.Value {
	t.Helper()
	cv, err := ctyValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return cv
}

// equalJSON compares two cty values by their JSON form, which ignores the
// list/tuple and map/object distinction the literal syntax cannot carry.
func equalJSON(t *testing.T, a, b cty.Value) bool {
	t.Helper()
	ja, err := ctyjson.Marshal(a, cty.DynamicPseudoType)
	if err != nil {
		t.Fatal(err)
	}
	jb, err := ctyjson.Marshal(b, cty.DynamicPseudoType)
	if err != nil {
		t.Fatal(err)
	}
	return string(ja) == string(jb)
}
