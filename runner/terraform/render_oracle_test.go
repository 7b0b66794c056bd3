package terraform

import (
	"bytes"
	"maps"
	"slices"
	"sort"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/hashicorp/hcl/v2/hclwrite"
	"github.com/zclconf/go-cty/cty"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// renderRootHCLWrite is RenderRoot as it was before hcltext.go: literals
// from hclwrite.TokensForValue and TokensForTraversal, the whole file
// through hclwrite.Format. It is the oracle the parity tests hold
// RenderRoot to. It leaves the Pad fields empty, which gives the
// template's output before the Pad fields existed, and lets Format do the
// aligning.
func renderRootHCLWrite(t *runner.TargetStack, backendType string) ([]byte, error) {
	d := rootData{Stack: t.Stack, StackVersion: t.StackVersion}
	if !identifier().MatchString(t.Stack) || !identifier().MatchString(sanitizeVersion(t.StackVersion)) {
		return nil, runner.Errorf(runner.RenderFailed, "stack name %q or version %q is not renderable", t.Stack, t.StackVersion)
	}
	if backendType != "" {
		if !identifier().MatchString(backendType) {
			return nil, runner.Errorf(runner.BackendConfigInvalid, "backend type %q is not a name", backendType)
		}
		d.Backend = oracleLiteral(cty.StringVal(backendType))
	}
	for _, inst := range t.Instances {
		if !identifier().MatchString(inst.Name) {
			return nil, runner.Errorf(runner.RenderFailed, "instance name %q is not an identifier", inst.Name)
		}
		m := moduleData{
			Label:  oracleLiteral(cty.StringVal(inst.Name)),
			Source: oracleLiteral(cty.StringVal("./" + ModuleDir(inst.Module, inst.Version))),
		}
		for _, name := range slices.Sorted(maps.Keys(inst.Inputs)) {
			if !identifier().MatchString(name) || registry.IsReservedInput(name) {
				return nil, runner.Errorf(runner.RenderFailed, "input name %q of %s is not an identifier", name, inst.Name)
			}
			v, err := ctyValue(inst.Inputs[name].Value)
			if err != nil {
				return nil, runner.Errorf(runner.RenderFailed, "instance %s input %s: %w", inst.Name, name, err)
			}
			m.Args = append(m.Args, argData{Name: name, Expr: oracleLiteral(v)})
		}
		for _, name := range slices.Sorted(maps.Keys(inst.Wires)) {
			ref := inst.Wires[name]
			if !identifier().MatchString(name) || registry.IsReservedInput(name) || !identifier().MatchString(ref.Instance) || !identifier().MatchString(ref.Output) {
				return nil, runner.Errorf(runner.RenderFailed, "wire %s.%s ← %s.%s is not made of identifiers", inst.Name, name, ref.Instance, ref.Output)
			}
			m.Args = append(m.Args, argData{Name: name, Expr: string(hclwrite.TokensForTraversal(hcl.Traversal{
				hcl.TraverseRoot{Name: "module"}, hcl.TraverseAttr{Name: ref.Instance}, hcl.TraverseAttr{Name: ref.Output},
			}).Bytes())})
		}
		sort.Slice(m.Args, func(i, j int) bool { return m.Args[i].Name < m.Args[j].Name })
		d.Modules = append(d.Modules, m)
		for _, out := range inst.Outputs {
			if !identifier().MatchString(out) {
				return nil, runner.Errorf(runner.RenderFailed, "output name %q of %s is not an identifier", out, inst.Name)
			}
			d.Outputs = append(d.Outputs, outputData{
				Label: oracleLiteral(cty.StringVal(OutputName(inst.Name, out))),
				Expr: string(hclwrite.TokensForTraversal(hcl.Traversal{
					hcl.TraverseRoot{Name: "module"}, hcl.TraverseAttr{Name: inst.Name}, hcl.TraverseAttr{Name: out},
				}).Bytes()),
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

func oracleLiteral(v cty.Value) string { return string(hclwrite.TokensForValue(v).Bytes()) }
