package terraform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

var _ runner.EngineVersioner = (*Engine)(nil)

// EngineVersion implements runner.EngineVersioner: "terraform <version>",
// as the binary reports it. The version is part of what a change is, so
// a plan applied by one Terraform is never taken as applied by another.
func (e *Engine) EngineVersion(ctx context.Context) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, e.Terraform.ExecPath, "version", "-json")
	cmd.Env = environ(e.Terraform.Env)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", runner.Errorf(runner.TerraformNotFound, "asking %s its version: %v\n%s", e.Terraform.ExecPath, err, stderr.String())
	}
	var out tfjson.VersionOutput
	if err := json.Unmarshal(stdout.Bytes(), &out); err != nil || out.Version == "" {
		return "", runner.Errorf(runner.TerraformNotFound, "%s does not report its version as JSON", e.Terraform.ExecPath)
	}
	if err := versionProblem(e.Terraform.ExecPath, out.Version); err != nil {
		return "", runner.Errorf(runner.TerraformNotFound, "%w", err)
	}
	return fmt.Sprintf("terraform %s", out.Version), nil
}
