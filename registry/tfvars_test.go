package registry

import (
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// tfView is what checkTerraform reads of a module's terraform/ directory.
type tfView struct {
	Variables map[string]tfVarView
	Outputs   map[string]bool // sensitive
}

type tfVarView struct {
	Type      string
	Required  bool
	Default   any
	Sensitive bool
}

func readView(t *testing.T, fsys fs.FS, dir string) (tfView, error) {
	t.Helper()
	mod, err := readTerraformInterface(fsys, dir)
	if err != nil {
		return tfView{}, err
	}
	v := tfView{Variables: map[string]tfVarView{}, Outputs: map[string]bool{}}
	for name, tv := range mod.Variables {
		v.Variables[name] = tfVarView{tv.Type, tv.Required, tv.Default, tv.Sensitive}
	}
	for name, o := range mod.Outputs {
		v.Outputs[name] = o.Sensitive
	}
	return v, nil
}

func TestTerraformInterfaceReadsShippedModules(t *testing.T) {
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
			got, err := readView(t, fsys, dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Variables)+len(got.Outputs) == 0 {
				t.Errorf("%s declares nothing", dir)
			}
		})
	}
}

// The module is read as Terraform assembles it: .tf and .tf.json files
// alike, then override files in lexical order, each changing only the
// attributes it sets.
func TestTerraformInterfaceReadsModules(t *testing.T) {
	cases := []struct {
		name  string
		files map[string]string
		want  tfView
	}{{
		name: "HCL",
		files: map[string]string{"main.tf": `
variable "name" {
  type        = string
  description = "The name."
  validation {
    condition     = length(var.name) > 0
    error_message = "name must not be empty."
  }
}
variable "tags" {
  type    = map(string)
  default = { a = "x", "b-c" = "${"y"}" }
}
variable "secret" {
  default   = null
  sensitive = true
}
variable "legacy" {
  type = "list"
}
output "name" {
  value = var.name
}
output "secret" {
  value     = var.secret
  sensitive = true
}
`},
		want: tfView{
			Variables: map[string]tfVarView{
				"name":   {Type: "string", Required: true},
				"tags":   {Type: "map(string)", Default: map[string]any{"a": "x", "b-c": "y"}},
				"secret": {Sensitive: true},
				"legacy": {Type: "list", Required: true},
			},
			Outputs: map[string]bool{"name": false, "secret": true},
		},
	}, {
		name: "JSON",
		files: map[string]string{"main.tf.json": `{
  "variable": {
    "name": {"type": "string"},
    "items": {"type": "list(number)", "default": [1, 2]},
    "secret": {"type": "string", "default": "", "sensitive": true}
  },
  "output": {
    "name": {"value": "${var.name}"},
    "secret": {"value": "${var.secret}", "sensitive": true}
  }
}`},
		want: tfView{
			Variables: map[string]tfVarView{
				"name":   {Type: "string", Required: true},
				"items":  {Type: "list(number)", Default: []any{1.0, 2.0}},
				"secret": {Type: "string", Default: "", Sensitive: true},
			},
			Outputs: map[string]bool{"name": false, "secret": true},
		},
	}, {
		name: "HCL and JSON together",
		files: map[string]string{
			"a.tf":      "variable \"a\" {}\n",
			"b.tf.json": `{"variable": {"b": {"default": 1}}, "output": {"c": {"value": 1}}}`,
		},
		want: tfView{
			Variables: map[string]tfVarView{"a": {Required: true}, "b": {Default: 1.0}},
			Outputs:   map[string]bool{"c": false},
		},
	}, {
		name: "override files merge, in lexical order",
		files: map[string]string{
			"main.tf": `
variable "a" {
  type      = string
  default   = "base"
  sensitive = true
}
variable "b" {
  type = number
}
variable "c" {
  type    = list(string)
  default = []
}
output "o" {
  value     = var.a
  sensitive = true
}
output "p" {
  value = 1
}
`,
			// Only default: type and sensitive stay the base's.
			"a_override.tf": "variable \"a\" {\n  default = \"first\"\n}\n",
			// Sorted after a_override.tf, so its default wins.
			"override.tf": "variable \"a\" {\n  default = \"last\"\n}\n\nvariable \"b\" {\n  default = 2\n}\n",
			"x_override.tf.json": `{
  "variable": {"c": {"type": "set(string)", "sensitive": true}},
  "output": {"o": {"description": "sensitive stays"}, "p": {"sensitive": true}}
}`,
		},
		want: tfView{
			Variables: map[string]tfVarView{
				"a": {Type: "string", Default: "last", Sensitive: true},
				"b": {Type: "number", Default: 2.0},
				"c": {Type: "set(string)", Default: []any{}, Sensitive: true},
			},
			Outputs: map[string]bool{"o": true, "p": true},
		},
	}, {
		name: "skips what Terraform skips",
		files: map[string]string{
			".hidden.tf": "variable \"a\" {", "main.tf~": "variable \"b\" {", "#main.tf#": "{",
			"README.md": "variable \"x\" {}\n", "sub/d.tf": "variable \"d\" {}\n",
			"main.tf": "variable \"c\" {}\n",
		},
		want: tfView{Variables: map[string]tfVarView{"c": {Required: true}}, Outputs: map[string]bool{}},
	}, {
		name:  "windows line ends",
		files: map[string]string{"main.tf": "variable \"a\" {\r\n  type    = list(string)\r\n  default = [\"x\"]\r\n}\r\n"},
		want:  tfView{Variables: map[string]tfVarView{"a": {Type: "list(string)", Default: []any{"x"}}}, Outputs: map[string]bool{}},
	}}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{}
			for f, src := range tt.files {
				fsys["m/"+f] = &fstest.MapFile{Data: []byte(src)}
			}
			got, err := readView(t, fsys, "m")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("interface (-want +got):\n%s", diff)
			}
		})
	}
}

// A directory Terraform would refuse is refused, and the error leads the
// author to the file and line.
func TestTerraformInterfaceRefuses(t *testing.T) {
	cases := []struct {
		name, file, src, want string
	}{
		{"unclosed block", "z.tf", "variable \"a\" {\n", "Unclosed configuration block"},
		{"bad expression", "z.tf", "output \"a\" {\n  value = 1 +\n}\n", "Invalid expression"},
		{"broken JSON", "z.tf.json", `{"variable": {"b": }}`, "Missing JSON value"},
		{"variable with two labels", "z.tf", "variable \"a\" \"b\" {\n}\n", "Extraneous label for variable"},
		{"variable without label", "z.tf", "variable {\n}\n", "Missing name for variable"},
		{"resource with one label", "z.tf", "resource \"x\" {\n}\n", "Missing name for resource"},
		{"default uses a function", "z.tf", "variable \"a\" {\n  default = upper(\"a\")\n}\n", "Function calls not allowed"},
		{"default uses a variable", "z.tf", "variable \"b\" {\n  default = var.a\n}\n", "Variables not allowed"},
		{"interpolated default", "z.tf", "variable \"b\" {\n  default = \"${var.a}\"\n}\n", "Variables not allowed"},
		{"sensitive not a bool", "z.tf", "variable \"b\" {\n  sensitive = \"maybe\"\n}\n", "a bool is required"},
		{"output sensitive a variable", "z.tf", "output \"p\" {\n  value     = 1\n  sensitive = var.s\n}\n", "Variables not allowed"},
		{"description a list", "z.tf", "variable \"b\" {\n  description = [\"x\"]\n}\n", "string required"},
		{"variable declared twice", "z.tf", "variable \"a\" {\n  default = 2\n}\n", "Duplicate variable declaration"},
		{"output declared twice", "z.tf", "output \"o\" {\n  value = 2\n}\n", "Duplicate output declaration"},
		{"declared twice in one file", "z.tf", "variable \"b\" {}\nvariable \"b\" {}\n", "Duplicate variable declaration"},
		{"override of nothing", "z_override.tf", "variable \"b\" {\n  default = 2\n}\n", "Missing base variable declaration"},
		{"override of no output", "override.tf.json", `{"output": {"p": {"sensitive": true}}}`, "Missing base output declaration"},
		{"broken override", "z_override.tf", "variable \"a\" {\n  sensitive = 3\n}\n", "bool required"},
		{"stack file", "x.tfstack.hcl", "variable \"b\" {}\n", "Stacks files"},
		{"component file", "x.tfcomponent.hcl", "variable \"b\" {}\n", "Stacks files"},
		{"OpenTofu-only file", "main.tofu", "variable \"a\" {}\n", "OpenTofu-only files"},
		{"OpenTofu-only JSON file", "x.tofu.json", `{"variable": {"b": {}}}`, "OpenTofu-only files"},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{
				"m/main.tf":    {Data: []byte("variable \"a\" {\n  default = 1\n}\n\noutput \"o\" {\n  value = 1\n}\n")},
				"m/" + tt.file: {Data: []byte(tt.src)},
			}
			_, err := readTerraformInterface(fsys, "m")
			if err == nil {
				t.Fatal("read without error")
			}
			if !strings.Contains(err.Error(), "m/"+tt.file+":") || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q does not name m/%s and say %q", err, tt.file, tt.want)
			}
		})
	}
}

// A registry module may be written in JSON, or adjusted by an override
// file: Load checks module.yaml against what Terraform would read.
func TestLoadReadsJSONAndOverrideModules(t *testing.T) {
	const nodeJSON = `{
  "variable": {
    "text": {"type": "string"},
    "size": {"type": "number", "default": 1},
    "items": {"type": "list(string)", "default": []},
    "labels": {"type": "map(string)", "default": {}},
    "data": {"type": "any", "default": null},
    "secret": {"type": "string", "default": "", "sensitive": true}
  },
  "resource": {"terraform_data": {"this": {"input": "${var.text}"}}},
  "output": {
    "text": {"value": "${terraform_data.this.output}"},
    "size": {"value": "${var.size}"},
    "token": {"value": "${sha256(var.secret)}", "sensitive": true}
  }
}`
	const tfMain = "modules/node/terraform/main.tf"
	cases := []struct {
		name  string
		files map[string]string
		want  runner.Reason // "" when Load accepts the module
	}{
		{"JSON module", map[string]string{tfMain: removedFile, tfMain + ".json": nodeJSON}, ""},
		{"override that keeps the interface", map[string]string{
			"modules/node/terraform/main_override.tf": "variable \"size\" {\n  description = \"Overridden.\"\n}\n\noutput \"token\" {\n  description = \"Still sensitive.\"\n}\n",
		}, ""},
		{"override that changes a type", map[string]string{
			"modules/node/terraform/override.tf": "variable \"size\" {\n  type = string\n}\n",
		}, runner.RegistryModuleMismatch},
		{"override that changes a default", map[string]string{
			"modules/node/terraform/main_override.tf.json": `{"variable": {"size": {"default": 5}}}`,
		}, runner.RegistryModuleMismatch},
		{"override that makes an output public", map[string]string{
			"modules/node/terraform/main_override.tf": "output \"token\" {\n  sensitive = false\n}\n",
		}, runner.RegistryModuleMismatch},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			files := withNode(tt.files)
			for name, src := range files {
				if src == removedFile {
					delete(files, name)
				}
			}
			_, err := Load(writeRegistry(t, files))
			if tt.want == "" {
				if err != nil {
					t.Fatalf("Load: %v", err)
				}
				return
			}
			if got := runner.ReasonOf(err); got != tt.want {
				t.Fatalf("reason = %q, want %q (error: %v)", got, tt.want, err)
			}
		})
	}
}

// removedFile marks a file of nodeModule a case deletes.
const removedFile = "\x00removed"

// Load refuses a module the reader refuses with REGISTRY_TERRAFORM_INVALID,
// naming the module and the file.
func TestLoadRefusesUnreadableTerraformFiles(t *testing.T) {
	for _, tt := range []struct{ file, src string }{
		{"broken.tf", "variable \"extra\" {\n"},
		{"broken.tf.json", `{"variable": `},
		{"twice.tf", "variable \"text\" {}\n"},
		{"main_override.tf", "variable \"extra\" {}\n"},
	} {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Load(writeRegistry(t, withNode(map[string]string{
				"modules/node/terraform/" + tt.file: tt.src,
			})))
			if got := runner.ReasonOf(err); got != runner.RegistryTerraformBroken {
				t.Fatalf("reason = %s, want %s (error: %v)", got, runner.RegistryTerraformBroken, err)
			}
			if msg := err.Error(); !strings.Contains(msg, "module node") || !strings.Contains(msg, "modules/node/terraform/"+tt.file+":1,") {
				t.Errorf("error %q does not name the module and the file's line", msg)
			}
		})
	}
}
