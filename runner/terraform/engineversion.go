package terraform

import (
	"context"
	"os"

	"github.com/nova-platform/nova/runner"
)

var _ runner.EngineVersioner = (*Engine)(nil)

// EngineVersion implements runner.EngineVersioner: the contract's engine
// and its exact version as the binary reports it ("terraform 1.11.4",
// "opentofu 1.12.6"). The version is part of what a change is, so a change
// applied by one engine or version is never taken as applied by another;
// the contract's engineVersion is checked here, before anything else
// runs. It costs a `version` of its own: the run's workspace, which asks
// too, does not exist yet when the change is named, and a run that
// answers with a receipt never opens one.
func (e *Engine) EngineVersion(ctx context.Context, c *runner.Contract) (string, error) {
	opts, err := e.options(c)
	if err != nil {
		return "", err
	}
	w, err := New(os.TempDir(), opts)
	if err != nil {
		return "", err
	}
	if err := w.supported(ctx, runner.TerraformNotFound, "naming the change"); err != nil {
		return "", err
	}
	return w.Engine(ctx)
}
