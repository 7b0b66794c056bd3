// Package terraform is Nova's Terraform adapter: it renders a target stack
// into a root module and runs terraform over it through terraform-exec.
package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"sort"
	"sync"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

var identifier = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_-]*$`) })

// ModuleDir is where, relative to the root module, the adapter places the
// copy of a registry module.
func ModuleDir(module, version string) string {
	return path.Join("modules", module+"-"+version)
}

type rootData struct {
	Stack, StackVersion string
	Backend             string
	// Encrypted renders OpenTofu's encryption block (encryption.go).
	Encrypted   bool
	KeyProvider string
	Modules     []moduleData
	Outputs     []outputData
}

type moduleData struct {
	Label  string
	Source string
	Args   []argData
}

type argData struct{ Name, Expr string }

type outputData struct {
	Label     string
	Expr      string
	Sensitive bool
}

// RenderRoot renders the root module of a target stack. Every value is
// emitted as an HCL literal by hclwrite, which escapes quotes, newlines,
// ${ and %{, and the file is laid out by hclwrite.Format; names must be
// identifiers. No contract string can therefore add a block, an attribute
// or an interpolation to the output. backendType may be empty for
// Terraform's implicit local backend. encrypted adds OpenTofu's
// encryption block, which only OpenTofu reads.
func RenderRoot(t *runner.TargetStack, backendType string, encrypted bool) ([]byte, error) {
	d := rootData{Stack: t.Stack, StackVersion: t.StackVersion, Encrypted: encrypted, KeyProvider: runner.KeyProviderPBKDF2 + "." + keyProviderName}
	if !identifier().MatchString(t.Stack) || !identifier().MatchString(sanitizeVersion(t.StackVersion)) {
		return nil, runner.Errorf(runner.RenderFailed, "stack name %q or version %q is not renderable", t.Stack, t.StackVersion)
	}
	if backendType != "" {
		if !identifier().MatchString(backendType) {
			return nil, runner.Errorf(runner.BackendConfigInvalid, "backend type %q is not a name", backendType)
		}
		d.Backend = stringLiteral(backendType)
	}
	for _, inst := range t.Instances {
		if !identifier().MatchString(inst.Name) {
			return nil, runner.Errorf(runner.RenderFailed, "instance name %q is not an identifier", inst.Name)
		}
		m := moduleData{
			Label:  stringLiteral(inst.Name),
			Source: stringLiteral("./" + ModuleDir(inst.Module, inst.Version)),
		}
		for _, name := range slices.Sorted(maps.Keys(inst.Inputs)) {
			if !identifier().MatchString(name) || registry.IsReservedInput(name) {
				return nil, runner.Errorf(runner.RenderFailed, "input name %q of %s is not an identifier", name, inst.Name)
			}
			v, err := ctyValue(inst.Inputs[name].Value)
			if err != nil {
				return nil, runner.Errorf(runner.RenderFailed, "instance %s input %s: %w", inst.Name, name, err)
			}
			expr, err := literal(v)
			if err != nil {
				return nil, runner.Errorf(runner.RenderFailed, "instance %s input %s: %w", inst.Name, name, err)
			}
			m.Args = append(m.Args, argData{Name: name, Expr: expr})
		}
		for _, name := range slices.Sorted(maps.Keys(inst.Wires)) {
			ref := inst.Wires[name]
			if !identifier().MatchString(name) || registry.IsReservedInput(name) || !identifier().MatchString(ref.Instance) || !identifier().MatchString(ref.Output) {
				return nil, runner.Errorf(runner.RenderFailed, "wire %s.%s ← %s.%s is not made of identifiers", inst.Name, name, ref.Instance, ref.Output)
			}
			m.Args = append(m.Args, argData{Name: name, Expr: moduleRef(ref.Instance, ref.Output)})
		}
		sort.Slice(m.Args, func(i, j int) bool { return m.Args[i].Name < m.Args[j].Name })
		d.Modules = append(d.Modules, m)
		for _, out := range inst.Outputs {
			if !identifier().MatchString(out) {
				return nil, runner.Errorf(runner.RenderFailed, "output name %q of %s is not an identifier", out, inst.Name)
			}
			d.Outputs = append(d.Outputs, outputData{
				Label:     stringLiteral(OutputName(inst.Name, out)),
				Expr:      moduleRef(inst.Name, out),
				Sensitive: slices.Contains(inst.SensitiveOutputs, out),
			})
		}
	}
	var buf bytes.Buffer
	if err := templates.TerraformRoot().Execute(&buf, d); err != nil {
		return nil, runner.Errorf(runner.RenderFailed, "rendering root module: %w", err)
	}
	out := hclwrite.Format(buf.Bytes())
	// Defence in depth: the rendered file must parse, or Terraform would
	// fail later with a message about a file the user never wrote.
	if _, diags := hclsyntax.ParseConfig(out, "main.tf", hcl.InitialPos); diags.HasErrors() {
		return nil, runner.Errorf(runner.RenderFailed, "rendered root module does not parse: %s", diags.Error())
	}
	return out, nil
}

// OutputName is the root output that re-exports an instance's output.
func OutputName(instance, output string) string { return instance + "__" + output }

// ctyValue converts a JSON-shaped value into cty. Lists become tuples and
// maps objects: Terraform converts them to the variable's declared type,
// and the registry has already checked that they conform.
func ctyValue(v any) (cty.Value, error) {
	switch x := v.(type) {
	case string:
		return cty.StringVal(x), nil
	case json.Number:
		return cty.ParseNumberVal(x.String())
	case bool:
		return cty.BoolVal(x), nil
	case nil:
		return cty.NullVal(cty.DynamicPseudoType), nil
	case []any:
		if len(x) == 0 {
			return cty.EmptyTupleVal, nil
		}
		vals := make([]cty.Value, len(x))
		for i, item := range x {
			cv, err := ctyValue(item)
			if err != nil {
				return cty.NilVal, err
			}
			vals[i] = cv
		}
		return cty.TupleVal(vals), nil
	case map[string]any:
		if len(x) == 0 {
			return cty.EmptyObjectVal, nil
		}
		attrs := make(map[string]cty.Value, len(x))
		for k, item := range x {
			cv, err := ctyValue(item)
			if err != nil {
				return cty.NilVal, err
			}
			attrs[k] = cv
		}
		return cty.ObjectVal(attrs), nil
	}
	return cty.NilVal, fmt.Errorf("unsupported value of type %T", v)
}

// sanitizeVersion maps a semver to an identifier-shaped string for the
// renderability check; the version itself only appears in a comment.
func sanitizeVersion(v string) string {
	b := []byte("v" + v)
	for i, c := range b {
		if c == '.' || c == '+' {
			b[i] = '_'
		}
	}
	return string(b)
}

// literal writes v, a value made by ctyValue, as an HCL literal.
// hclwrite panics on a value it cannot write (an unknown one); ctyValue
// makes none, and if that ever changes it is an error, not a crash.
func literal(v cty.Value) (string, error) {
	if !v.IsWhollyKnown() {
		return "", fmt.Errorf("no HCL literal for an unknown value")
	}
	return string(hclwrite.TokensForValue(v).Bytes()), nil
}

// stringLiteral writes s as a quoted HCL string.
func stringLiteral(s string) string {
	return string(hclwrite.TokensForValue(cty.StringVal(s)).Bytes())
}

// moduleRef is the reference to an output of a module call.
func moduleRef(instance, output string) string {
	return string(hclwrite.TokensForTraversal(hcl.Traversal{
		hcl.TraverseRoot{Name: "module"}, hcl.TraverseAttr{Name: instance}, hcl.TraverseAttr{Name: output},
	}).Bytes())
}
