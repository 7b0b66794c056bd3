package policy

import (
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/stages/policy/checkov"
	"github.com/nova-platform/nova/stages/policy/kyvernojson"
	"github.com/nova-platform/nova/stages/policy/rego"
)

// Engines builds the engines cfg lists, in its order, for the repository at
// repoDir, and rego first when cfg does not list it. env is nova's
// environment; each external tool sees only its allowlisted part
// (external.Environ). Building compiles the Rego once for the run; it fails
// only for a configuration that cannot work (a policy dir that is not a
// directory) or a broken build.
func Engines(ctx context.Context, repoDir string, cfg Config, env []string) ([]runner.PolicyEngine, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	names := cfg.Engines
	if !slices.Contains(names, EngineRego) {
		// The platform rules always run: .nova/config.yml belongs to the
		// change being judged, and a pull request must not be able to
		// switch off the rules that judge it. engines only chooses the
		// external engines, and where rego runs among them.
		names = append([]string{EngineRego}, names...)
	}
	var out []runner.PolicyEngine
	for _, name := range names {
		switch name {
		case EngineRego:
			e, err := regoEngine(ctx, repoDir, cfg)
			if err != nil {
				return nil, err
			}
			out = append(out, e)
		case EngineCheckov:
			out = append(out, checkov.New(cfg.CheckovPath, env))
		case EngineKyverno:
			// The policies directory is handed to kyverno-json by path;
			// it must not lead out of the checkout.
			if cfg.KyvernoPolicies != "" {
				if root, err := checkout.OpenDir(repoDir, cfg.KyvernoPolicies); runner.ReasonOf(err) == runner.PathOutsideCheckout {
					return nil, err
				} else if err == nil {
					root.Close()
				}
			}
			out = append(out, kyvernojson.New(cfg.KyvernoPath, filepath.Join(repoDir, cfg.KyvernoPolicies), cfg.KyvernoPreProcess, env))
		}
	}
	return out, nil
}

func regoEngine(ctx context.Context, repoDir string, cfg Config) (*rego.Engine, error) {
	opts := []rego.Option{rego.WithNamespaces(cfg.Namespaces, cfg.ContractNamespaces)}
	// Opened through the checkout's root: neither the policy dir itself
	// nor a link inside it can lead Nova to read files outside the
	// checkout.
	root, err := checkout.OpenDir(repoDir, cfg.PolicyDir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		// No consumer policies: the platform rules alone.
	case runner.ReasonOf(err) == runner.PathOutsideCheckout:
		return nil, err
	case err != nil:
		return nil, runner.Errorf(runner.PolicyConfigInvalid, "opening policy dir %s: %w", cfg.PolicyDir, err)
	default:
		defer root.Close()
		opts = append(opts, rego.WithConsumerPolicies(root.FS(), cfg.PolicyDir))
	}
	return rego.New(ctx, opts...)
}
