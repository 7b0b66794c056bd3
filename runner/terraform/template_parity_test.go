package terraform

import (
	"bytes"
	"testing"
	"text/template"

	"github.com/nova-platform/nova/templates"
)

// TestRootRendersAsTextTemplate holds Nova's template engine to
// text/template's output for the root module, over its optional parts.
func TestRootRendersAsTextTemplate(t *testing.T) {
	std := template.Must(template.ParseFiles("../../templates/terraform/root.tf.tmpl"))
	mod := func(label string, args ...argData) moduleData {
		return moduleData{Label: `"` + label + `"`, Source: `"./modules/` + label + `"`, Args: args}
	}
	out := func(label string, sensitive bool) outputData {
		return outputData{Label: `"` + label + `"`, Expr: "module." + label + ".x", Sensitive: sensitive}
	}
	for name, d := range map[string]rootData{
		"bare":    {Stack: "web", StackVersion: "1.0.0"},
		"backend": {Stack: "web", StackVersion: "1.0.0", Backend: `"s3"`},
		"modules": {Stack: "web", StackVersion: "1.2.3", Modules: []moduleData{
			mod("a"), mod("b", argData{Name: "name", Pad: " ", Expr: `"x"`}, argData{Name: "tags", Expr: `{ a = "<b>&'c'" }`}),
		}},
		"outputs": {Stack: "web", StackVersion: "1.2.3", Outputs: []outputData{out("a", false), out("b", true), out("c", false)}},
		"padded": {Stack: "web", StackVersion: "1.2.3", Modules: []moduleData{{Label: `"p"`, Source: `"./p"`, SourcePad: "  ", Args: []argData{{Name: "a", Pad: "       ", Expr: "1"}}}},
			Outputs: []outputData{{Label: `"o"`, Pad: "    ", Expr: "module.p.o", Sensitive: true}}},
		"all": {Stack: "db", StackVersion: "2.0.0-rc.1", Backend: `"gcs"`,
			Modules: []moduleData{mod("a", argData{Name: "n", Expr: "1"}), mod("c", argData{Name: "w", Expr: "module.a.id"})},
			Outputs: []outputData{out("a", true)}},
	} {
		var want, got bytes.Buffer
		if err := std.Execute(&want, d); err != nil {
			t.Fatal(err)
		}
		if err := templates.TerraformRoot().Execute(&got, d); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got.String() != want.String() {
			t.Errorf("%s: got\n%s\nwant\n%s", name, got.String(), want.String())
		}
	}
}
