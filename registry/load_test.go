package registry

import (
	"encoding/json"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestLoadReadsModuleInterface(t *testing.T) {
	reg, err := Load(writeRegistry(t, nodeModule))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	got, ok := reg.Module("node")
	if !ok {
		t.Fatal("module node not loaded")
	}
	str := Type{Kind: "string"}
	want := &Module{
		Name:        "node",
		Version:     "1.2.3",
		Description: "A test module.",
		// Declaration order, as the author wrote them.
		Inputs: []Input{
			{Name: "text", Type: str, Description: "Required text."},
			{Name: "size", Type: Type{Kind: "number"}, HasDefault: true, Default: json.Number("1")},
			{Name: "items", Type: Type{Kind: "list", Elem: &str}, HasDefault: true, Default: []any{}},
			{Name: "labels", Type: Type{Kind: "map", Elem: &str}, HasDefault: true, Default: map[string]any{}},
			// Present but null: optional, leaving Terraform's null in force.
			{Name: "data", Type: Type{Kind: "any"}, HasDefault: true},
			{Name: "secret", Type: str, HasDefault: true, Default: "", Sensitive: true},
		},
		Outputs: []Output{
			{Name: "text", Type: str},
			{Name: "size", Type: Type{Kind: "number"}},
			{Name: "token", Type: str, Sensitive: true},
		},
		// Numbers in the shape resolved inputs have, so equals compares.
		Capabilities: []Capability{
			{NFR: "backups", Input: "size", Equals: json.Number("2")},
			{NFR: "availability", Provides: json.Number("99.9")},
		},
		Dir: "modules/node",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("module node (-want +got):\n%s", diff)
	}
}

func TestLoadRejects(t *testing.T) {
	const (
		yamlFile = "modules/node/module.yaml"
		tfFile   = "modules/node/terraform/main.tf"
	)
	const removed = "\x00removed"
	stack := "name: s\nversion: 1.0.0\ninstances:\n  - {name: a, module: node, inputs: {text: x}}\n"
	tests := []struct {
		name string
		// file is rewritten: old replaced by new, the whole file set to
		// new when old is empty, or removed when new is removed.
		file, old, new string
		want           runner.Reason
	}{
		{"input missing from variables.tf", tfFile, "variable \"size\" {\n  type    = number\n  default = 1\n}\n", "", runner.RegistryModuleMismatch},
		{"variable missing from module.yaml", tfFile, "resource", "variable \"extra\" {\n  type = string\n}\n\nresource", runner.RegistryModuleMismatch},
		{"type differs", tfFile, "type    = list(string)", "type    = set(string)", runner.RegistryModuleMismatch},
		{"untyped variable is any, not string", tfFile, "variable \"text\" {\n  type = string\n}", "variable \"text\" {}", runner.RegistryModuleMismatch},
		{"required in module.yaml, optional in terraform", tfFile, "type = string\n}", "type    = string\n  default = \"x\"\n}", runner.RegistryModuleMismatch},
		{"optional in module.yaml, required in terraform", tfFile, "type    = number\n  default = 1", "type = number", runner.RegistryModuleMismatch},
		{"default differs", tfFile, "default = 1", "default = 2", runner.RegistryModuleMismatch},
		{"null default differs from empty", tfFile, "default = null", "default = {}", runner.RegistryModuleMismatch},
		{"input sensitive differs", tfFile, "  sensitive = true\n}\n\nresource", "}\n\nresource", runner.RegistryModuleMismatch},
		{"output missing from terraform", tfFile, "output \"size\" {\n  value = var.size\n}\n", "", runner.RegistryModuleMismatch},
		{"output missing from module.yaml", tfFile, "output \"size\"", "output \"extra\" {\n  value = 1\n}\n\noutput \"size\"", runner.RegistryModuleMismatch},
		{"output sensitive differs", tfFile, "value     = sha256(var.secret)\n  sensitive = true", "value = sha256(var.secret)", runner.RegistryModuleMismatch},
		{"no terraform directory", tfFile, "", removed, runner.RegistryModuleMismatch},
		{"variable of unsupported type", tfFile, "type    = any", "type    = object({ a = string })", runner.RegistryModuleMismatch},
		{"input named like a module meta-argument", yamlFile, "  size:\n", "  count:\n", runner.RegistryInvalid},
		{"module version not semver", yamlFile, "version: 1.2.3", "version: \"1.2\"", runner.RegistryVersionInvalid},
		{"module version with v prefix", yamlFile, "version: 1.2.3", "version: v1.2.3", runner.RegistryVersionInvalid},
		{"stack version not semver", "stacks/s.yaml", "", strings.Replace(stack, "1.0.0", "latest", 1), runner.RegistryVersionInvalid},
		{"unknown field in module.yaml", yamlFile, "outputs:", "output_types: {}\noutputs:", runner.RegistryInvalid},
		{"unknown field in a module input", yamlFile, "description: Required text.", "descripton: Required text.", runner.RegistryInvalid},
		{"unknown field in a stack", "stacks/s.yaml", "", stack + "wirez: []\n", runner.RegistryInvalid},
		{"unknown field in a stack instance", "stacks/s.yaml", "", strings.Replace(stack, "inputs:", "input:", 1), runner.RegistryInvalid},
		{"unknown field in a capability", yamlFile, "equals: 2", "equal: 2", runner.RegistryInvalid},
		{"module.yaml not YAML", yamlFile, "", "name: [node\n", runner.RegistryInvalid},
		{"empty module.yaml", yamlFile, "", "", runner.RegistryInvalid},
		{"module name differs from directory", yamlFile, "name: node", "name: other", runner.RegistryInvalid},
		{"unsupported input type", yamlFile, "type: list(string)", "type: list(object)", runner.RegistryInvalid},
		{"default of the wrong type", yamlFile, "default: 1", "default: one", runner.RegistryInvalid},
		{"capability names unknown input", yamlFile, "input: size", "input: sise", runner.RegistryInvalid},
		{"capability equals of the wrong type", yamlFile, "equals: 2", "equals: two", runner.RegistryInvalid},
		{"stack without instances", "stacks/s.yaml", "", "name: s\nversion: 1.0.0\ninstances: []\n", runner.RegistryInvalid},
		{"stack name differs from file", "stacks/s.yaml", "", strings.Replace(stack, "name: s", "name: t", 1), runner.RegistryInvalid},
		{"unclosed block", tfFile, "resource \"terraform_data\" \"this\" {\n  input = var.text\n}", "resource \"terraform_data\" \"this\" {\n  input = var.text\n", runner.RegistryTerraformBroken},
		{"invalid expression", tfFile, "value = var.size", "value = var.size +", runner.RegistryTerraformBroken},
		{"stack named like a module", "stacks/node.yaml", "", strings.Replace(stack, "name: s", "name: node", 1), runner.RegistryDuplicate},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			files := withNode(nil)
			switch {
			case tt.new == removed:
				delete(files, tt.file)
			case tt.old == "":
				files[tt.file] = tt.new
			default:
				if !strings.Contains(files[tt.file], tt.old) {
					t.Fatalf("test case is stale: %s does not contain %q", tt.file, tt.old)
				}
				files[tt.file] = strings.Replace(files[tt.file], tt.old, tt.new, 1)
			}
			reg, err := Load(writeRegistry(t, files))
			if err == nil {
				t.Fatalf("Load accepted the registry (%d modules, %d stacks); want %s", len(reg.Modules()), len(reg.Stacks()), tt.want)
			}
			if got := runner.ReasonOf(err); got != tt.want {
				t.Errorf("reason = %s, want %s (error: %v)", got, tt.want, err)
			}
		})
	}
}

// TestLoadKeepsAliasedSections: a section written as an alias of another
// (outputs: *inputs) is that mapping, in its order. Reading the order from
// a second parse of the file lost it: the alias node has no keys.
func TestLoadKeepsAliasedSections(t *testing.T) {
	fsys := fstest.MapFS{"modules/m/module.yaml": {Data: []byte("name: m\nversion: 1.0.0\ninputs: &fields\n  b: {type: string}\n  a: {type: number}\noutputs: *fields\n")}}
	reg, err := load(fsys, false)
	if err != nil {
		t.Fatal(err)
	}
	m, _ := reg.Module("m")
	want := []Output{{Name: "b", Type: Type{Kind: "string"}}, {Name: "a", Type: Type{Kind: "number"}}}
	if diff := cmp.Diff(want, m.Outputs); diff != "" {
		t.Errorf("outputs (-want +got):\n%s", diff)
	}
	if len(m.Inputs) != 2 || m.Inputs[0].Name != "b" || m.Inputs[1].Name != "a" {
		t.Errorf("inputs %+v, want b then a", m.Inputs)
	}
}
