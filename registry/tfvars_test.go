package registry

import (
	"fmt"
	"io/fs"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/hashicorp/terraform-config-inspect/tfconfig"

	"github.com/nova-platform/nova/runner"
)

// The reader in tfvars.go replaced tfconfig in checkTerraform. These tests
// hold it to tfconfig, the reader module.yaml files were written against:
// the same variables, types, required flags, defaults and sensitivity, the
// same outputs, and the same pass or fail, on the shipped modules and on a
// corpus of declarations. tfconfig is a test dependency only.

// compareWithTFConfig reads dir both ways and reports every difference.
func compareWithTFConfig(t *testing.T, fsys fs.FS, dir string) {
	t.Helper()
	want, diags := tfconfig.LoadModuleFromFilesystem(tfconfig.WrapFS(fsys), dir)
	got, err := readTerraformInterface(fsys, dir)
	if diags.HasErrors() || err != nil {
		if !diags.HasErrors() {
			t.Errorf("tfconfig reads %s, nova refuses it: %v", dir, err)
		} else if err == nil {
			t.Errorf("tfconfig refuses %s (%v), nova reads it", dir, diags.Err())
		}
		return
	}
	if w, g := slices.Sorted(mapKeys(want.Variables)), slices.Sorted(mapKeys(got.Variables)); !slices.Equal(w, g) {
		t.Errorf("variables: tfconfig %v, nova %v", w, g)
	}
	for name, wv := range want.Variables {
		gv := got.Variables[name]
		if gv == nil {
			continue
		}
		if gv.Type != wv.Type {
			t.Errorf("variable %s: type %q, tfconfig %q", name, gv.Type, wv.Type)
		}
		if gv.Required != wv.Required {
			t.Errorf("variable %s: required %t, tfconfig %t", name, gv.Required, wv.Required)
		}
		// The same Go value, not only the same JSON: checkTerraform's
		// sameJSON must see what it saw with tfconfig.
		if !reflect.DeepEqual(gv.Default, wv.Default) || !sameJSON(gv.Default, wv.Default) {
			t.Errorf("variable %s: default %#v, tfconfig %#v", name, gv.Default, wv.Default)
		}
		if gv.Sensitive != wv.Sensitive {
			t.Errorf("variable %s: sensitive %t, tfconfig %t", name, gv.Sensitive, wv.Sensitive)
		}
	}
	if w, g := slices.Sorted(mapKeys(want.Outputs)), slices.Sorted(mapKeys(got.Outputs)); !slices.Equal(w, g) {
		t.Errorf("outputs: tfconfig %v, nova %v", w, g)
	}
	for name, wo := range want.Outputs {
		if gv := got.Outputs[name]; gv != nil && gv.Sensitive != wo.Sensitive {
			t.Errorf("output %s: sensitive %t, tfconfig %t", name, gv.Sensitive, wo.Sensitive)
		}
	}
}

func mapKeys[V any](m map[string]V) func(func(string) bool) {
	return func(yield func(string) bool) {
		for k := range m {
			if !yield(k) {
				return
			}
		}
	}
}

func TestTerraformInterfaceMatchesTFConfigOnShippedModules(t *testing.T) {
	fsys := Embedded()
	entries, err := fs.ReadDir(fsys, "modules")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) == 0 {
		t.Fatal("no shipped modules")
	}
	for _, e := range entries {
		dir := "modules/" + e.Name() + "/terraform"
		t.Run(e.Name(), func(t *testing.T) {
			compareWithTFConfig(t, fsys, dir)
			got, err := readTerraformInterface(fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			// A module with no variables would compare equal however
			// badly variables were read.
			if len(got.Variables)+len(got.Outputs) == 0 {
				t.Errorf("%s declares nothing", dir)
			}
		})
	}
}

// typeForms are type constraints in every form Terraform accepts.
var typeForms = []string{
	"string", "number", "bool", "any",
	`"string"`, `"list"`, `"map"`,
	"list(string)", "set(number)", "map(bool)", "list(list(map(string)))",
	"map( string )", "list(\n    string\n  )",
	"object({ a = string, b = optional(number, 3) })",
	"object({\n    name = string\n    tags = optional(map(string), {})\n    nested = optional(object({ x = list(any) }))\n  })",
	"tuple([string, number, bool])",
	"(string)", `"list(string)"`, "list( # a comment\n    string\n  )", "map(string) # trailing comment",
}

// defaultForms are defaults of every JSON kind and several spellings.
var defaultForms = []string{
	"null", `""`, `"text"`, `"quote \" and \\ backslash"`, `"${"interp"}olated"`, `"%{if true}yes%{endif}"`,
	"0", "1", "-1", "1.5", "1e3", "12345678901234567890", "0.1", "3.141592653589793238",
	"true", "false",
	"[]", "[1, 2, 3]", `["a", null, true]`, "[[1], [2, [3]]]",
	"{}", `{ a = 1, "b-c" = "x" }`, "{ a = { b = { c = [1, { d = null }] } } }",
	"<<EOT\nline one\nline two\nEOT", "<<-EOT\n    indented\n      more\n    EOT",
	"1 + 2", "!false", "true ? [1] : [2]", `{ for k in ["a", "b"] : k => "${k}!" }`,
}

func TestTerraformInterfaceMatchesTFConfigOnCorpus(t *testing.T) {
	var types, defaults strings.Builder
	for i, ty := range typeForms {
		fmt.Fprintf(&types, "variable \"t%d\" {\n  type = %s\n}\n\n", i, ty)
	}
	for i, def := range defaultForms {
		fmt.Fprintf(&defaults, "variable \"d%d\" {\n  default = %s\n}\n\n", i, def)
	}
	cases := map[string]map[string]string{
		"types":    {"variables.tf": types.String()},
		"defaults": {"variables.tf": defaults.String()},
		"sensitivity": {"main.tf": `
variable "plain" {}
variable "secret" {
  type      = string
  sensitive = true
}
variable "open" {
  sensitive = false
}
variable "quoted" {
  sensitive = "true"
}
output "plain" {
  value = 1
}
output "secret" {
  value     = var.secret
  sensitive = true
}
output "open" {
  value     = var.open
  sensitive = false
}
`},
		"full declarations": {"variables.tf": `
variable "name" {
  type        = string
  description = "The name."
  nullable    = false
  ephemeral   = false
  deprecated  = "Use label."

  validation {
    condition     = length(var.name) > 0
    error_message = "name must not be empty."
  }
  validation {
    condition     = can(regex("^[a-z]+$", var.name))
    error_message = "lower case only."
  }
}

variable "count_of" {
  type     = number
  default  = 3
  nullable = true
}
`, "outputs.tf": `
output "name" {
  description = "The name, again."
  value       = var.name
  depends_on  = [terraform_data.this]
  precondition {
    condition     = var.name != ""
    error_message = "empty"
  }
}

output "sum" {
  value     = var.count_of + 1
  sensitive = false
}
`, "main.tf": `
terraform {
  required_version = ">= 1.5.0"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "~> 5.0"
    }
  }
}

locals {
  x = var.name
}

resource "terraform_data" "this" {
  input = local.x
}

data "aws_caller_identity" "me" {
  provider = aws.east
}

module "child" {
  source = "./child"
}

moved {
  from = terraform_data.old
  to   = terraform_data.this
}
`},
		"empty":      {"main.tf": ""},
		"no tf":      {"README.md": "variable \"x\" {}\n", "notes.txt": "hi"},
		"ignored":    {".hidden.tf": "variable \"a\" {", "main.tf~": "variable \"b\" {", "#main.tf#": "{", "main.tf": "variable \"c\" {}\n"},
		"many files": {"a.tf": "variable \"a\" {}\n", "b.tf": "variable \"b\" {\n  default = 1\n}\n", "c.tf": "output \"c\" {\n  value = 1\n}\n", "sub/d.tf": "variable \"d\" {}\n"},
		// Terraform refuses this; tfconfig and nova both read it as a
		// variable without a default.
		"default as a block": {"main.tf": "variable \"a\" {\n  default {\n  }\n}\n"},
		"windows line ends":  {"main.tf": "variable \"a\" {\r\n  type    = list(string)\r\n  default = [\"x\"]\r\n}\r\n"},
	}
	broken := map[string]string{
		"unclosed block":           "variable \"a\" {\n",
		"bad expression":           "output \"a\" {\n  value = 1 +\n}\n",
		"variable with two labels": "variable \"a\" \"b\" {\n}\n",
		"resource with one label":  "resource \"x\" {\n}\n",
		"default uses a function":  "variable \"a\" {\n  default = upper(\"a\")\n}\n",
		"default uses a variable":  "variable \"a\" {\n  default = var.b\n}\n",
		"sensitive null":           "variable \"a\" {\n  sensitive = null\n}\n",
		"sensitive a number":       "output \"a\" {\n  value     = 1\n  sensitive = 1\n}\n",
		"output sensitive var":     "output \"a\" {\n  value     = 1\n  sensitive = var.s\n}\n",
		"description a list":       "variable \"a\" {\n  description = [\"x\"]\n}\n",
		"description null":         "output \"a\" {\n  value       = 1\n  description = null\n}\n",
		"attribute twice":          "variable \"a\" {\n  type = string\n  type = number\n}\n",
		"unterminated heredoc":     "variable \"a\" {\n  default = <<EOT\nx\n}\n",
		"stray character":          "variable \"a\" {\n  default = 1\n}\n@\n",
		"default calls tolist":     "variable \"a\" {\n  default = tolist([])\n}\n",
		"default names a local":    "variable \"a\" {\n  default = local.x\n}\n",
		"unterminated string":      "variable \"a\" {\n  default = \"x\n}\n",
	}
	for name, src := range broken {
		cases["broken: "+name] = map[string]string{"ok.tf": "variable \"fine\" {}\n", "z.tf": src}
	}
	for name, files := range cases {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for f, src := range files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte(src)}
			}
			compareWithTFConfig(t, fsys, "m")
			_, err := readTerraformInterface(fsys, "m")
			if strings.HasPrefix(name, "broken: ") {
				// The message must lead the author to the file and line.
				if err == nil || !strings.Contains(err.Error(), "m/z.tf:") {
					t.Errorf("error %v does not name m/z.tf and a line", err)
				}
			} else if err != nil {
				t.Errorf("reading: %v", err)
			}
		})
	}
}

// Where tfconfig accepts a directory that Terraform would refuse or read
// differently, nova refuses it and says which file and why. Each case
// confirms tfconfig's behaviour too, so the list stays a list of real
// differences.
func TestTerraformInterfaceRefusesWhatTFConfigMisreads(t *testing.T) {
	cases := []struct {
		name, file, src, want string
	}{
		{"override file", "main_override.tf", "variable \"a\" {\n  default = 2\n}\n", "override files are not supported"},
		{"plain override file", "override.tf", "variable \"a\" {\n  default = 2\n}\n", "override files are not supported"},
		{"JSON file", "extra.tf.json", `{"variable": {"b": {"type": "string"}}}`, "JSON files are not supported"},
		{"stack file", "x.tfstack.hcl", "variable \"b\" {}\n", "Stacks files"},
		{"component file", "x.tfcomponent.hcl", "variable \"b\" {}\n", "Stacks files"},
		{"variable declared twice", "z.tf", "variable \"a\" {\n  default = 2\n}\n", "Duplicate variable declaration"},
		{"output declared twice", "z.tf", "output \"o\" {\n  value = 2\n}\n", "Duplicate output declaration"},
		// tfconfig falls back on the HCL v1 parser for these, which skips
		// blocks without labels and reads neither deprecated nor a
		// variable's sensitive attribute.
		{"variable without label", "z.tf", "variable {\n}\n", "Missing name for variable"},
		{"output without label", "z.tf", "output {\n  value = 1\n}\n", "Missing name for output"},
		{"module without label", "z.tf", "module {\n}\n", "Missing name for module"},
		{"deprecated a map", "z.tf", "variable \"b\" {\n  deprecated = {}\n}\n", "string required"},
		{"sensitive not a bool", "z.tf", "variable \"b\" {\n  sensitive = \"maybe\"\n}\n", "a bool is required"},
		{"HCL v1 only: interpolated default", "z.tf", "variable \"b\" {\n  default = \"${var.a}\"\n}\n", "Variables not allowed"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"m/main.tf":    {Data: []byte("variable \"a\" {\n  default = 1\n}\n\noutput \"o\" {\n  value = 1\n}\n")},
				"m/" + tt.file: {Data: []byte(tt.src)},
			}
			if _, diags := tfconfig.LoadModuleFromFilesystem(tfconfig.WrapFS(fsys), "m"); diags.HasErrors() {
				t.Fatalf("tfconfig refuses this too (%v); the case belongs in the corpus test", diags.Err())
			}
			_, err := readTerraformInterface(fsys, "m")
			if err == nil {
				t.Fatal("nova reads it")
			}
			if !strings.Contains(err.Error(), "m/"+tt.file+":") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name m/%s and say %q", err, tt.file, tt.want)
			}
		})
	}
}

// The reader checks the labels of terraform, provider, resource, data and
// module blocks but not their attributes, which tfconfig partly checks:
// they are no part of a module's interface, and terraform init and plan
// refuse them with Terraform's own messages. These cases confirm that the
// difference is what tfvars.go says it is, and no wider.
func TestTerraformInterfaceLeavesOtherBlocksToTerraform(t *testing.T) {
	cases := map[string]string{
		"required_version a list":        "terraform {\n  required_version = [\"1\"]\n}\n",
		"required_providers a list":      "terraform {\n  required_providers {\n    aws = [1]\n  }\n}\n",
		"provider version a variable":    "provider \"aws\" {\n  version = var.v\n}\n",
		"resource provider not a name":   "resource \"a\" \"b\" {\n  provider = 1 + 1\n}\n",
		"module source calls a function": "module \"m\" {\n  source = upper(\"x\")\n}\n",
	}
	for name, src := range cases {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{"m/main.tf": {Data: []byte("variable \"a\" {}\n" + src)}}
			if _, diags := tfconfig.LoadModuleFromFilesystem(tfconfig.WrapFS(fsys), "m"); !diags.HasErrors() {
				t.Errorf("tfconfig reads it; the case belongs in the corpus test")
			}
			got, err := readTerraformInterface(fsys, "m")
			if err != nil {
				t.Fatalf("nova refuses it: %v", err)
			}
			if got.Variables["a"] == nil {
				t.Errorf("variable a not read: %+v", got)
			}
		})
	}
}

// Load refuses a module the reader refuses with REGISTRY_TERRAFORM_INVALID,
// naming the module and the file.
func TestLoadRefusesUnreadableTerraformFiles(t *testing.T) {
	for _, file := range []string{"main_override.tf", "vars.tf.json", "broken.tf"} {
		t.Run(file, func(t *testing.T) {
			_, err := Load(writeRegistry(t, withNode(map[string]string{
				"modules/node/terraform/" + file: "variable \"extra\" {\n",
			})))
			if got := runner.ReasonOf(err); got != runner.RegistryTerraformBroken {
				t.Fatalf("reason = %s, want %s (error: %v)", got, runner.RegistryTerraformBroken, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "module node") || !strings.Contains(msg, "modules/node/terraform/"+file+":1,") {
				t.Errorf("error %q does not name the module and the file's line", msg)
			}
		})
	}
}
