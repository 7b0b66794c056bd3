package terraform

import (
	"context"
	"fmt"
	"os"
	"sync"

	"github.com/hashicorp/go-version"

	"github.com/nova-platform/nova/runner"
)

var _ runner.EngineVersioner = (*Engine)(nil)

// known holds the version each terraform binary reported, for the
// process: the binary does not change under a running Nova, so a run that
// named its change (EngineVersion) does not ask again when its workspace
// starts (Workspace.supported).
var known sync.Map // exec path → *version.Version

// EngineVersion implements runner.EngineVersioner: "terraform <version>",
// as the binary reports it. The version is part of what a change is, so a
// change applied by one Terraform is never taken as applied by another.
func (e *Engine) EngineVersion(ctx context.Context) (string, error) {
	if v, ok := known.Load(e.Terraform.ExecPath); ok {
		return "terraform " + v.(*version.Version).String(), nil
	}
	w, err := New(os.TempDir(), e.Terraform)
	if err != nil {
		return "", err
	}
	if err := w.supported(ctx, runner.TerraformNotFound, "naming the change"); err != nil {
		return "", err
	}
	v, ok := known.Load(e.Terraform.ExecPath)
	if !ok {
		return "", runner.Errorf(runner.InternalError, "%s reported no version", e.Terraform.ExecPath)
	}
	return fmt.Sprintf("terraform %s", v.(*version.Version)), nil
}
