package terraform

import (
	"context"

	"github.com/hashicorp/go-version"

	"github.com/nova-platform/nova/runner"
)

// minVersion is the oldest terraform Nova runs: the first with every flag
// it passes (-json for plan and apply, plan -refresh-only).
var minVersion = version.Must(version.NewVersion("0.15.4"))

// supported refuses to run what under a terraform Nova does not run. The
// first command of a workspace asks the binary its version (terraform-exec
// keeps the answer for the workspace, and asks again only after a probe
// that failed); the refusal carries the command's reason, since the
// command did not run.
func (w *Workspace) supported(ctx context.Context, reason runner.Reason, what string) error {
	v, _, err := w.tf.Version(ctx, false)
	switch {
	case err != nil && ctx.Err() != nil:
		return wrap(ctx, reason, what, err)
	case err != nil:
		// Said in words only: a probe that failed is never an
		// interruption of the command it precedes, and an apply that
		// never started must not be taken for one of unknown outcome.
		return runner.Errorf(reason, "%s: asking %s its version: %s", what, w.opts.ExecPath, tail(errorText(err), 20))
	case v.LessThan(minVersion):
		return runner.Errorf(reason, "%s: %s is terraform %s; Nova needs %s or later", what, w.opts.ExecPath, v, minVersion)
	}
	return nil
}
