package registry

import (
	"fmt"
	"io/fs"
	"path"
	"strings"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclparse"
	"github.com/hashicorp/terraform-config-inspect/tfconfig"
)

// readTerraformInterface reads the variables and outputs declared by the
// module in dir, the way Terraform assembles a module: every .tf and
// .tf.json file, then the override files in lexical order, each of which
// changes only the attributes it sets.
//
// tfconfig reads each file, but is not asked to read the directory, whose
// answer differs from Terraform's where module.yaml's check depends on it:
// it replaces a declaration with its override instead of merging (an
// override that sets only default would drop the base's type and
// sensitive), keeps the last of two declarations Terraform refuses, and
// falls back on the HCL v1 parser for files Terraform 0.12 and later refuse.
//
// The error, when not nil, names each problem's file and line.
func readTerraformInterface(fsys fs.FS, dir string) (*tfconfig.Module, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	var primary, override []string
	var diags hcl.Diagnostics
	for _, e := range entries {
		name := e.Name()
		file := path.Join(dir, name)
		if e.IsDir() || ignoredTerraformFile(name) {
			continue
		}
		base, ok := strings.CutSuffix(name, ".tf")
		if !ok {
			base, ok = strings.CutSuffix(name, ".tf.json")
		}
		switch {
		case strings.HasSuffix(name, ".tfstack.hcl"), strings.HasSuffix(name, ".tfcomponent.hcl"):
			// tfconfig would read these as module files; Terraform does not.
			diags = append(diags, unsupportedFile(file, "Terraform Stacks files do not belong in a module's terraform/ directory."))
		case strings.HasSuffix(name, ".tofu"), strings.HasSuffix(name, ".tofu.json"):
			// OpenTofu reads these, in place of a .tf of the same name;
			// Terraform and this check do not. A module reads the same
			// under both engines, or module.yaml's agreement would hold
			// for one of them only.
			diags = append(diags, unsupportedFile(file, "OpenTofu-only files (.tofu, .tofu.json) do not belong in a registry module: it must read the same under Terraform and OpenTofu."))
		case !ok:
			// not a Terraform configuration file
		case base == "override" || strings.HasSuffix(base, "_override"):
			override = append(override, file)
		default:
			primary = append(primary, file)
		}
	}
	mod := tfconfig.NewModule(dir)
	parser := hclparse.NewParser()
	for i, file := range append(primary, override...) {
		fileDiags, err := readTerraformFile(fsys, parser, file, mod, i >= len(primary))
		if err != nil {
			return nil, err
		}
		diags = append(diags, fileDiags...)
	}
	if diags.HasErrors() {
		return nil, diags
	}
	return mod, nil
}

// unsupportedFile refuses a file of a module's terraform/ directory.
func unsupportedFile(file, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  "Unsupported file",
		Detail:   detail,
		Subject:  &hcl.Range{Filename: file, Start: hcl.InitialPos, End: hcl.InitialPos},
	}
}

// ignoredTerraformFile reports the editor and hidden files Terraform skips.
func ignoredTerraformFile(name string) bool {
	return strings.HasPrefix(name, ".") || strings.HasSuffix(name, "~") ||
		strings.HasPrefix(name, "#") && strings.HasSuffix(name, "#")
}

// declarationSchema finds the blocks whose attributes an override file
// replaces one by one. Their labels and attributes are checked by tfconfig.
var declarationSchema = &hcl.BodySchema{Blocks: []hcl.BlockHeaderSchema{
	{Type: "variable", LabelNames: []string{"name"}},
	{Type: "output", LabelNames: []string{"name"}},
}}

// overriddenSchema lists the attributes checkTerraform reads, which are the
// ones an override can change.
var overriddenSchema = &hcl.BodySchema{Attributes: []hcl.AttributeSchema{
	{Name: "type"}, {Name: "default"}, {Name: "sensitive"},
}}

// readTerraformFile adds one file's variables and outputs to mod: as new
// declarations from a primary file, as changes to existing ones from an
// override file.
func readTerraformFile(fsys fs.FS, parser *hclparse.Parser, file string, mod *tfconfig.Module, isOverride bool) (hcl.Diagnostics, error) {
	src, err := fs.ReadFile(fsys, file)
	if err != nil {
		return nil, err
	}
	var f *hcl.File
	var diags hcl.Diagnostics
	if strings.HasSuffix(file, ".json") {
		f, diags = parser.ParseJSON(src, file)
	} else {
		f, diags = parser.ParseHCL(src, file)
	}
	if f == nil {
		return diags, nil
	}
	one := tfconfig.NewModule(mod.Path)
	diags = append(diags, tfconfig.LoadModuleFromFile(f, one)...)
	// tfconfig has reported what is wrong with these blocks already.
	content, _, _ := f.Body.PartialContent(declarationSchema)
	seen := map[string]bool{}
	for _, b := range content.Blocks {
		name, key := b.Labels[0], b.Type+"."+b.Labels[0]
		_, declared := mod.Variables[name]
		if b.Type == "output" {
			_, declared = mod.Outputs[name]
		}
		switch {
		case seen[key] || !isOverride && declared:
			diags = append(diags, declarationDiag(b, "Duplicate %s declaration", "The %s %q is declared more than once; Terraform refuses a module that declares it twice."))
			continue
		case isOverride && !declared:
			diags = append(diags, declarationDiag(b, "Missing base %s declaration to override", "There is no %s named %q. An override file can only override a declaration in a primary configuration file."))
			continue
		}
		seen[key] = true
		if !isOverride {
			if b.Type == "variable" {
				mod.Variables[name] = one.Variables[name]
			} else {
				mod.Outputs[name] = one.Outputs[name]
			}
			continue
		}
		set, _, _ := b.Body.PartialContent(overriddenSchema)
		if b.Type == "output" {
			if set.Attributes["sensitive"] != nil {
				mod.Outputs[name].Sensitive = one.Outputs[name].Sensitive
			}
			continue
		}
		base, over := mod.Variables[name], one.Variables[name]
		if set.Attributes["type"] != nil {
			base.Type = over.Type
		}
		if set.Attributes["default"] != nil {
			base.Default, base.Required = over.Default, false
		}
		if set.Attributes["sensitive"] != nil {
			base.Sensitive = over.Sensitive
		}
	}
	return diags, nil
}

// declarationDiag reports a problem with block b, in Terraform's words;
// summary and detail take the block type, detail the name too.
func declarationDiag(b *hcl.Block, summary, detail string) *hcl.Diagnostic {
	return &hcl.Diagnostic{
		Severity: hcl.DiagError,
		Summary:  fmt.Sprintf(summary, b.Type),
		Detail:   fmt.Sprintf(detail, b.Type, b.Labels[0]),
		Subject:  b.DefRange.Ptr(),
	}
}
