package terraform

import (
	"github.com/hashicorp/go-version"

	"github.com/nova-platform/nova/runner"
)

// flavour is what differs between the engines this adapter runs. OpenTofu
// forked Terraform's CLI and kept it: the same commands, flags, JSON
// (`version -json` still says terraform_version) and diagnostics, so
// terraform-exec runs both and only these facts tell them apart.
type flavour struct {
	// name is the contract's name of the engine and the first word of its
	// version label ("opentofu 1.12.6").
	name string
	// program is the binary's usual name, as a user would type it.
	program string
	// flag is Nova's flag that names the binary.
	flag string
	// min is the oldest version Nova runs: terraform 0.15.4 has every flag
	// Nova passes (-json for plan and apply, plan -refresh-only);
	// OpenTofu's first release (1.6.0) already had them.
	min *version.Version
	// encryption is the first version that encrypts state, nil when none
	// does.
	encryption *version.Version
}

var flavours = map[string]flavour{
	runner.EngineTerraform: {name: runner.EngineTerraform, program: "terraform", flag: "--terraform",
		min: version.Must(version.NewVersion("0.15.4"))},
	runner.EngineOpenTofu: {name: runner.EngineOpenTofu, program: "tofu", flag: "--tofu",
		min:        version.Must(version.NewVersion("1.6.0")),
		encryption: version.Must(version.NewVersion("1.7.0"))},
}

// flavourOf is the flavour of an engine name; "" is terraform, as in a
// contract that names none.
func flavourOf(engine string) (flavour, error) {
	if engine == "" {
		engine = runner.EngineTerraform
	}
	f, ok := flavours[engine]
	if !ok {
		return flavour{}, runner.Errorf(runner.ConfigInvalid, "engine %q is not one Nova runs (terraform, opentofu)", engine)
	}
	return f, nil
}

// options is how the contract's engine runs: its binary, the contract's
// version constraint, and for encrypted state the key provider in the
// engine's environment.
func (e *Engine) options(c *runner.Contract) (Options, error) {
	f, err := flavourOf(c.EngineName())
	if err != nil {
		return Options{}, err
	}
	opts := e.Terraform
	if f.name == runner.EngineOpenTofu {
		opts.ExecPath = e.OpenTofu
	}
	if opts.ExecPath == "" {
		return Options{}, runner.Errorf(runner.TerraformNotFound, "the contract's engine is %s and no %s binary was found: put %s on PATH or pass %s", f.name, f.program, f.program, f.flag)
	}
	opts.Engine, opts.VersionConstraint = f.name, c.EngineVersion
	if c.Encrypted() {
		if f.encryption == nil {
			return Options{}, runner.Errorf(runner.StateEncryptionUnsupported, "the contract's backend encrypts its state (backend.encryption), which %s cannot do: use engine: opentofu", f.name)
		}
		if opts.keyProvider, err = keyProvider(e.StatePassphrase); err != nil {
			return Options{}, err
		}
	}
	return opts, nil
}

// versionLabel names an engine at a version: "terraform 1.11.4".
func versionLabel(engine string, v *version.Version) string {
	f, _ := flavourOf(engine)
	return f.name + " " + v.String()
}
