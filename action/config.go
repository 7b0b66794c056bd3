package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/schema"
)

// Env is everything nova reads from its process: arguments, environment,
// standard streams. main builds it; tests inject their own.
type Env struct {
	Args   []string
	Getenv func(string) string
	// Environ is the full environment, passed on to terraform.
	Environ []string
	Stdout  io.Writer
	Stderr  io.Writer
}

// Config is every input of a nova invocation, read once. Nothing below
// action/ reads flags or the environment.
type Config struct {
	Command       string
	Dir           string
	ContractPath  string
	EnvOverride   runner.Environment
	Output        string
	RegistryDir   string
	StateDir      string
	TerraformPath string
	BackendType   string
	BackendConfig []string
	Commit        string
	Bundle        string
	Verbose       bool
	// TrustedKeysFile holds armored OpenPGP keys that verify commits for
	// the provenance input.
	TrustedKeysFile string
	// InfracostKey lets the nfr stage estimate cost.
	InfracostKey string
	// EvidenceRepo overrides $NOVA_EVIDENCE_REPO; empty with neither set
	// means local mode's bare repo under the data dir.
	EvidenceRepo string
	// Source is the CloudEvents source of this run's events.
	Source string
	// TerraformEnv is the environment terraform runs with.
	TerraformEnv map[string]string
}

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// errUsage marks a command-line mistake: exit code 2, with usage printed.
var errUsage = errors.New("usage")

// parseConfig reads the command line and environment into a Config.
func parseConfig(cmd string, args []string, env Env) (Config, error) {
	cfg := Config{Command: cmd}
	fs := flag.NewFlagSet("nova "+cmd, flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var envName string
	var backendConfig listFlag
	fs.StringVar(&cfg.Dir, "dir", ".", "the consumer checkout")
	fs.StringVar(&cfg.ContractPath, "contract", schema.DefaultContractPath, "contract file, relative to --dir")
	fs.StringVar(&envName, "env", "", "override the contract's environment (dev|qa|prod|dr)")
	fs.StringVar(&cfg.Output, "output", "text", "output format: text or json")
	fs.StringVar(&cfg.RegistryDir, "registry", env.Getenv("NOVA_REGISTRY"), "registry directory (default: the registry built into nova)")
	fs.StringVar(&cfg.StateDir, "state-dir", env.Getenv("NOVA_STATE_DIR"), "root of local Terraform state (default: $XDG_STATE_HOME/nova/state)")
	fs.StringVar(&cfg.TerraformPath, "terraform", env.Getenv("NOVA_TERRAFORM"), "terraform binary (default: terraform on PATH)")
	fs.StringVar(&cfg.BackendType, "backend", "", "Terraform backend type, overriding the contract's")
	fs.Var(&backendConfig, "backend-config", "Terraform -backend-config key=value (repeatable)")
	fs.StringVar(&cfg.Commit, "commit", "", "commit being deployed (default: $NOVA_COMMIT, $GITHUB_SHA, or HEAD of --dir)")
	fs.BoolVar(&cfg.Verbose, "verbose", false, "stream terraform output to stderr")
	fs.StringVar(&cfg.EvidenceRepo, "evidence-repo", "", "evidence repo path or URL (default: $NOVA_EVIDENCE_REPO, else a local bare repo)")
	fs.StringVar(&cfg.TrustedKeysFile, "trusted-keys", env.Getenv("NOVA_TRUSTED_KEYS"), "armored OpenPGP public keys that verify commit signatures")
	if cmd == "apply" {
		fs.StringVar(&cfg.Bundle, "bundle", "", "plan bundle from `nova plan` (default: the newest for this contract)")
	}
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	cfg.BackendConfig = backendConfig
	var err error
	if cfg.EnvOverride, err = parseEnvironment(envName); err != nil {
		return cfg, err
	}
	if cfg.Output != "text" && cfg.Output != "json" {
		return cfg, runner.Errorf(runner.ConfigInvalid, "--output %q: want text or json", cfg.Output)
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return cfg, runner.Errorf(runner.ConfigInvalid, "--dir: %w", err)
	}
	if cfg.StateDir == "" {
		if cfg.StateDir, err = local.StateDir(env.Getenv); err != nil {
			return cfg, runner.Errorf(runner.ConfigInvalid, "%w", err)
		}
	}
	if cfg.Commit == "" {
		cfg.Commit = firstNonEmpty(env.Getenv("NOVA_COMMIT"), env.Getenv("GITHUB_SHA"))
	}
	if cfg.Commit == "" {
		if cfg.Commit, err = local.HeadCommit(cfg.Dir); err != nil {
			return cfg, runner.Errorf(runner.ConfigInvalid, "reading the commit of %s: %w", cfg.Dir, err)
		}
	}
	cfg.Source = "urn:nova:local"
	if server, repo, runID := env.Getenv("GITHUB_SERVER_URL"), env.Getenv("GITHUB_REPOSITORY"), env.Getenv("GITHUB_RUN_ID"); server != "" && repo != "" && runID != "" {
		cfg.Source = server + "/" + repo + "/actions/runs/" + runID
	}
	cfg.InfracostKey = env.Getenv("INFRACOST_API_KEY")
	cfg.TerraformEnv = map[string]string{}
	for _, kv := range env.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok && !novaSecret(k) {
			cfg.TerraformEnv[k] = v
		}
	}
	return cfg, nil
}

// novaSecret reports whether an environment variable belongs to Nova
// itself — its signing keys, their passwords, the evidence token. Terraform
// runs module code (provisioners, external data sources) and needs the
// cloud's credentials, never the keys that make Nova's evidence trustworthy.
func novaSecret(name string) bool {
	return strings.HasPrefix(name, "NOVA_") || strings.HasPrefix(name, "COSIGN_")
}

// parseFlags parses args, telling -h (flag.ErrHelp) from a mistake
// (errUsage), and refuses stray positional arguments.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return flag.ErrHelp
		}
		return errUsage
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("%w: unexpected argument %q", errUsage, fs.Arg(0))
	}
	return nil
}

// parseEnvironment reads --env; empty means "the contract's own".
func parseEnvironment(name string) (runner.Environment, error) {
	env := runner.Environment(name)
	if name != "" && !env.Valid() {
		return "", runner.Errorf(runner.ConfigInvalid, "--env %q: want dev, qa, prod or dr", name)
	}
	return env, nil
}

// terraformPath finds the terraform binary only for commands that run it,
// so `nova validate` works on a machine without terraform.
func (c Config) terraformPath() (string, error) {
	if c.TerraformPath != "" {
		p, err := exec.LookPath(c.TerraformPath)
		if err != nil {
			return "", runner.Errorf(runner.TerraformNotFound, "--terraform %s: %w", c.TerraformPath, err)
		}
		return p, nil
	}
	p, err := exec.LookPath("terraform")
	if err != nil {
		return "", runner.Errorf(runner.TerraformNotFound, "terraform is not on PATH; install Terraform >= 1.5 or pass --terraform")
	}
	return p, nil
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
