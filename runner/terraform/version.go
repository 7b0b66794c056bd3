package terraform

import (
	"context"

	"github.com/hashicorp/go-version"

	"github.com/nova-platform/nova/runner"
)

// supported refuses to run what under an engine Nova does not run, or
// one the contract's engineVersion excludes. The first command of a
// workspace asks the binary its version (terraform-exec keeps the answer
// for the workspace, and asks again only after a probe that failed); the
// refusal of a binary too old carries the command's reason, since the
// command did not run.
func (w *Workspace) supported(ctx context.Context, reason runner.Reason, what string) error {
	v, err := w.version(ctx, reason, what)
	if err != nil {
		return err
	}
	f := w.flavour
	switch {
	case v.LessThan(f.min):
		return runner.Errorf(reason, "%s: %s is %s %s; Nova needs %s or later", what, w.opts.ExecPath, f.name, v, f.min)
	case w.opts.keyProvider != "" && v.LessThan(f.encryption):
		return runner.Errorf(runner.EngineVersionUnsatisfied, "%s: %s is %s %s, which cannot encrypt state; the contract's backend.encryption needs %s or later", what, w.opts.ExecPath, f.name, v, f.encryption)
	}
	return checkConstraint(w.opts.VersionConstraint, f, v)
}

// version is the binary's version, as terraform-exec reads it from
// `version -json` (OpenTofu answers in Terraform's format).
func (w *Workspace) version(ctx context.Context, reason runner.Reason, what string) (*version.Version, error) {
	v, _, err := w.tf.Version(ctx, false)
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, wrap(ctx, reason, what, err)
	case err != nil:
		// Said in words only: a probe that failed is never an
		// interruption of the command it precedes, and an apply that
		// never started must not be taken for one of unknown outcome.
		return nil, runner.Errorf(reason, "%s: asking %s its version: %s", what, w.opts.ExecPath, tail(errorText(err), 20))
	}
	return v, nil
}

// checkConstraint holds v to the contract's engineVersion, if any.
func checkConstraint(constraint string, f flavour, v *version.Version) error {
	if constraint == "" {
		return nil
	}
	c, err := version.NewConstraint(constraint)
	if err != nil {
		// The schema stage refuses such a contract; this is defence in
		// depth for a caller that skipped it.
		return runner.Errorf(runner.ContractFieldValue, "engineVersion %q is not a version constraint: %v", constraint, err)
	}
	if !c.Check(v) {
		return runner.Errorf(runner.EngineVersionUnsatisfied, "the contract asks for %s %s (engineVersion) and the %s binary is %s", f.name, constraint, f.program, v)
	}
	return nil
}

// Engine names the workspace's engine at its exact version ("opentofu
// 1.12.6"), as the plan digest binds it. It costs nothing once a command
// has run: the version was asked then.
func (w *Workspace) Engine(ctx context.Context) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	v, err := w.version(ctx, runner.TerraformShowFailed, w.named("version"))
	if err != nil {
		return "", err
	}
	return versionLabel(w.flavour.name, v), nil
}
