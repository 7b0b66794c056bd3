package registry

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
	"github.com/zclconf/go-cty/cty/convert"
	ctyjson "github.com/zclconf/go-cty/cty/json"
)

// This file reads the interface of a module's terraform/ directory: its
// variables and outputs. It replaces terraform-config-inspect's tfconfig,
// whose gohcl dependency linked hclwrite, go-cmp and the HCL v1 parser into
// every nova binary and cost startup time on every run. It uses only the
// HCL packages the renderer links anyway (hcl/v2, hclsyntax, cty), and
// reports the same values tfconfig reported for what checkTerraform reads;
// registry/tfvars_test.go holds it to tfconfig.
//
// Where tfconfig would accept a directory Terraform itself rejects, or would
// read it differently from Terraform, this reader refuses it instead:
//
//   - *.tf.json: reading it needs HCL's JSON parser, one more package in
//     every binary, for a form no registry module uses.
//   - override.tf and *_override.tf: tfconfig replaces the whole
//     declaration, Terraform merges the overriding attributes into it, so
//     neither answer would be sure to be Terraform's.
//   - *.tfstack.hcl and *.tfcomponent.hcl: Terraform Stacks files, which a
//     module does not read; tfconfig would read them as module files.
//   - a variable or output declared twice: tfconfig keeps the last one,
//     Terraform refuses the module.
//   - a directory only the HCL v1 parser accepts: tfconfig falls back on
//     it, Terraform 0.12 and later do not. That fallback also skips blocks
//     without a label and reads neither deprecated nor a variable's
//     sensitive, so a variable "x" { sensitive = "maybe" } passed, as not
//     sensitive; here it is an error, as in Terraform.
//
// It does not check the contents of terraform, provider, resource, data
// and module blocks beyond their labels (tfconfig checks some of their
// attributes): they are no part of the interface module.yaml describes,
// and terraform init and plan check them fully.

// tfVariable is a variable block as checkTerraform needs it.
type tfVariable struct {
	// Type is the type constraint's source text, or the string value when
	// it is written as a string ("string", the pre-0.12 spelling); empty
	// when there is none. This is tfconfig's Variable.Type.
	Type string
	// Required reports that there is no default attribute.
	Required bool
	// Default is the default value as encoding/json decodes cty's JSON
	// encoding of it (numbers as float64), as tfconfig reports it.
	Default   any
	Sensitive bool
}

// tfOutput is an output block as checkTerraform needs it.
type tfOutput struct {
	Sensitive bool
}

// tfInterface is what a module's terraform/ directory declares.
type tfInterface struct {
	Variables map[string]*tfVariable
	Outputs   map[string]*tfOutput
}

// tfRootSchema lists the top-level blocks a module file may hold, with
// their labels. Other block types and top-level attributes are left to
// Terraform, as tfconfig leaves them; a listed block with the wrong number
// of labels is an error, as it is for tfconfig.
var tfRootSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "terraform"},
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "output", LabelNames: []string{"name"}},
	{Type: "provider", LabelNames: []string{"name"}},
	{Type: "resource", LabelNames: []string{"type", "name"}},
	{Type: "data", LabelNames: []string{"type", "name"}},
	{Type: "module", LabelNames: []string{"name"}},
	{Type: "component", LabelNames: []string{"name"}},
	{Type: "required_providers"},
}}

// The attributes read from variable and output blocks. Naming them makes a
// block of the same name (default { … }) an error, as in Terraform.
var (
	tfVariableSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "type"}, {Name: "description"}, {Name: "default"}, {Name: "sensitive"}, {Name: "deprecated"},
	}}
	tfOutputSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
		{Name: "description"}, {Name: "sensitive"}, {Name: "type"}, {Name: "deprecated"},
	}}
)

// readTerraformInterface reads the variables and outputs declared by the
// .tf files in dir. The error, when not nil, names each problem's file and
// line.
func readTerraformInterface(fsys fs.FS, dir string) (*tfInterface, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	ti := &tfInterface{Variables: map[string]*tfVariable{}, Outputs: map[string]*tfOutput{}}
	var diags hcl.Diagnostics
	declared := map[string]hcl.Range{} // "variable.x" → where it was first declared
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || ignoredTerraformFile(name) {
			continue
		}
		file := path.Join(dir, name)
		if why := refusedTerraformFile(name); why != "" {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Unsupported file",
				Detail:   why,
				Subject:  &hcl.Range{Filename: file, Start: hcl.InitialPos, End: hcl.InitialPos},
			})
			continue
		}
		if !strings.HasSuffix(name, ".tf") {
			continue // not a Terraform configuration file
		}
		src, err := fs.ReadFile(fsys, file)
		if err != nil {
			return nil, err
		}
		f, fileDiags := hclsyntax.ParseConfig(src, file, hcl.InitialPos)
		diags = append(diags, fileDiags...)
		if f == nil {
			continue
		}
		diags = append(diags, ti.readFile(f, src, declared)...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return ti, nil
}

// ignoredTerraformFile reports the editor and hidden files Terraform skips.
func ignoredTerraformFile(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")
}

// refusedTerraformFile says why a file is one this reader will not read
// (see the comment at the top of this file), or "" when it is not one.
func refusedTerraformFile(name string) string {
	switch {
	case strings.HasSuffix(name, ".tf.json"):
		return "Terraform JSON files are not supported in registry modules; write the module in .tf files"
	case strings.HasSuffix(name, ".tfstack.hcl"), strings.HasSuffix(name, ".tfcomponent.hcl"):
		return "Terraform Stacks files do not belong in a module's terraform/ directory"
	case strings.HasSuffix(name, ".tf"):
		base := strings.TrimSuffix(name, ".tf")
		if base == "override" || strings.HasSuffix(base, "_override") {
			return "override files are not supported in registry modules; module.yaml could not be checked against the merged declarations"
		}
	}
	return ""
}

// readFile adds the variables and outputs of one parsed file to ti.
func (ti *tfInterface) readFile(f *hcl.File, src []byte, declared map[string]hcl.Range) hcl.Diagnostics {
	content, _, diags := f.Body.PartialContent(tfRootSchema)
	for _, b := range content.Blocks {
		if b.Type != "variable" && b.Type != "output" {
			continue
		}
		name := b.Labels[0]
		key := b.Type + "." + name
		if first, dup := declared[key]; dup {
			diags = append(diags, &hcl.Diagnostic{
				Severity: hcl.DiagError,
				Summary:  "Duplicate " + b.Type + " declaration",
				Detail:   fmt.Sprintf("The %s %q was already declared at %s; Terraform refuses a module that declares it twice.", b.Type, name, first),
				Subject:  b.DefRange.Ptr(),
			})
			continue
		}
		declared[key] = b.DefRange
		if b.Type == "variable" {
			v, vDiags := readVariable(b, src)
			diags = append(diags, vDiags...)
			ti.Variables[name] = v
		} else {
			o, oDiags := readOutput(b)
			diags = append(diags, oDiags...)
			ti.Outputs[name] = o
		}
	}
	return diags
}

func readVariable(b *hcl.Block, src []byte) (*tfVariable, hcl.Diagnostics) {
	content, _, diags := b.Body.PartialContent(tfVariableSchema)
	v := &tfVariable{}
	if a, ok := content.Attributes["type"]; ok {
		// A type written as a string is the pre-0.12 spelling; its value is
		// the type. Any other type expression (a bare keyword, a call like
		// list(string)) does not evaluate without context, and is kept as
		// the source text the author wrote, which ParseType reads.
		if s, sDiags := decodeString(a.Expr); !sDiags.HasErrors() {
			v.Type = s
		} else {
			v.Type = string(a.Expr.Range().SliceBytes(src))
		}
	}
	if a, ok := content.Attributes["default"]; ok {
		def, dDiags := defaultValue(a.Expr)
		diags = append(diags, dDiags...)
		v.Default = def
	} else {
		v.Required = true
	}
	var sDiags hcl.Diagnostics
	v.Sensitive, sDiags = readShared(content)
	return v, append(diags, sDiags...)
}

func readOutput(b *hcl.Block) (*tfOutput, hcl.Diagnostics) {
	content, _, diags := b.Body.PartialContent(tfOutputSchema)
	o := &tfOutput{}
	var sDiags hcl.Diagnostics
	o.Sensitive, sDiags = readShared(content)
	return o, append(diags, sDiags...)
}

// readShared checks the attributes variables and outputs have alike:
// description and deprecated must be strings, and sensitive a bool, which
// it returns.
func readShared(content *hcl.BodyContent) (sensitive bool, diags hcl.Diagnostics) {
	for _, attr := range []string{"description", "deprecated"} {
		if a, ok := content.Attributes[attr]; ok {
			_, sDiags := decodeString(a.Expr)
			diags = append(diags, sDiags...)
		}
	}
	if a, ok := content.Attributes["sensitive"]; ok {
		var bDiags hcl.Diagnostics
		sensitive, bDiags = decodeBool(a.Expr)
		diags = append(diags, bDiags...)
	}
	return sensitive, diags
}

// defaultValue evaluates a default without variables or functions, as
// Terraform does, and returns it in the shape encoding/json gives cty's JSON
// encoding: the value checkTerraform compares with module.yaml's default.
// A value that is not wholly known cannot be encoded, and is an error.
func defaultValue(expr hcl.Expression) (any, hcl.Diagnostics) {
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return nil, diags
	}
	b, err := ctyjson.Marshal(val, val.Type())
	if err == nil {
		var def any
		if err = json.Unmarshal(b, &def); err == nil {
			return def, diags
		}
	}
	return nil, append(diags, valueDiag(expr, "Invalid default value", err.Error()))
}

// decodeString evaluates expr without context and converts it to a string,
// refusing null and unknown values: the rule for description attributes.
func decodeString(expr hcl.Expression) (string, hcl.Diagnostics) {
	val, diags := constantOf(expr, cty.String)
	if diags.HasErrors() {
		return "", diags
	}
	return val.AsString(), diags
}

// decodeBool is decodeString for bool attributes such as sensitive.
func decodeBool(expr hcl.Expression) (bool, hcl.Diagnostics) {
	val, diags := constantOf(expr, cty.Bool)
	if diags.HasErrors() {
		return false, diags
	}
	return val.True(), diags
}

func constantOf(expr hcl.Expression, want cty.Type) (cty.Value, hcl.Diagnostics) {
	val, diags := expr.Value(nil)
	if diags.HasErrors() {
		return cty.NilVal, diags
	}
	val, err := convert.Convert(val, want)
	switch {
	case err != nil:
		return cty.NilVal, append(diags, valueDiag(expr, "Unsuitable value type", err.Error()))
	case val.IsNull():
		return cty.NilVal, append(diags, valueDiag(expr, "Unsuitable value type", "The value must not be null."))
	case !val.IsKnown():
		return cty.NilVal, append(diags, valueDiag(expr, "Unsuitable value type", "The value must be known."))
	}
	return val, diags
}

func valueDiag(expr hcl.Expression, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  summary,
		Detail:   detail,
		Subject:  expr.StartRange().Ptr(),
		Context:  expr.Range().Ptr(),
	}
}
