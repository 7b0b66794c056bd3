package terraform

import (
	"context"
	"os"

	"github.com/nova-platform/nova/runner"
)

var _ runner.EngineVersioner = (*Engine)(nil)

// EngineVersion implements runner.EngineVersioner: "terraform <version>",
// as the binary reports it. The version is part of what a change is, so a
// change applied by one Terraform is never taken as applied by another.
// It costs a `terraform version` of its own: the run's workspace, which
// asks too, does not exist yet when the change is named, and a run that
// answers with a receipt never opens one.
func (e *Engine) EngineVersion(ctx context.Context) (string, error) {
	w, err := New(os.TempDir(), e.Terraform)
	if err != nil {
		return "", err
	}
	if err := w.supported(ctx, runner.TerraformNotFound, "naming the change"); err != nil {
		return "", err
	}
	v, _, err := w.tf.Version(ctx, false)
	if err != nil {
		return "", runner.Errorf(runner.TerraformNotFound, "asking %s its version: %s", e.Terraform.ExecPath, tail(errorText(err), 20))
	}
	return "terraform " + v.String(), nil
}
