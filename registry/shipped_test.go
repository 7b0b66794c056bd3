package registry

import (
	"os"
	"os/exec"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-config-inspect/tfconfig"

	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// The AWS modules shipped with Nova must all meet the platform's baseline:
// the same provider and Terraform constraints, tags on every resource, and
// encryption at rest under a customer-managed key that the NFR stage can see.
func TestShippedAWSModules(t *testing.T) {
	reg, err := Load(Embedded())
	if err != nil {
		t.Fatalf("loading the shipped registry: %v", err)
	}
	str := Type{Kind: "string"}
	for _, name := range []string{"s3-bucket", "dynamodb-table", "ecs-service"} {
		t.Run(name, func(t *testing.T) {
			m, ok := reg.Module(name)
			if !ok {
				t.Fatalf("module %s is not shipped", name)
			}
			tm, diags := tfconfig.LoadModuleFromFilesystem(tfconfig.WrapFS(Embedded()), m.Dir+"/terraform")
			if diags.HasErrors() {
				t.Fatal(diags.Err())
			}
			if diff := cmp.Diff([]string{">= 1.5.0"}, tm.RequiredCore); diff != "" {
				t.Errorf("required_version (-want +got):\n%s", diff)
			}
			aws := tm.RequiredProviders["aws"]
			if aws == nil || aws.Source != "hashicorp/aws" || !slices.Equal(aws.VersionConstraints, []string{"~> 5.0"}) {
				t.Errorf("required_providers.aws = %+v, want hashicorp/aws ~> 5.0", aws)
			}
			if in, ok := m.Input("tags"); !ok || in.Type.String() != "map(string)" || !in.HasDefault {
				t.Errorf("tags input = %+v, want an optional map(string)", in)
			}
			if in, ok := m.Input("kms_key_arn"); !ok || in.Type != str {
				t.Errorf("kms_key_arn input = %+v, want a string", in)
			}
			enc := Capability{NFR: "encryptionAtRest", Input: "kms_key_arn", NotEmpty: true}
			if !slices.ContainsFunc(m.Capabilities, func(c Capability) bool {
				c.Description = ""
				return cmp.Equal(c, enc)
			}) {
				t.Errorf("capabilities %+v lack %+v", m.Capabilities, enc)
			}
		})
	}
}

// The engines' formatters need no provider, so they run wherever the
// engines are installed; a shipped module reads the same to both, so each
// finds it formatted.
func TestShippedModulesAreFormatted(t *testing.T) {
	for _, engine := range terraformtest.Engines {
		t.Run(engine, func(t *testing.T) {
			bin := terraformtest.Binary(t, engine)
			cmd := exec.CommandContext(t.Context(), bin, "fmt", "-check", "-recursive", "-list=true", "modules")
			cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+os.DevNull)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s fmt -check: %v\nunformatted files:\n%s\nrun: %s fmt -recursive registry/modules", terraformtest.Program(engine), err, out, terraformtest.Program(engine))
			}
		})
	}
}
