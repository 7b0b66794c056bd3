package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/runner/terraform"
	"github.com/nova-platform/nova/stages/apply"
	"github.com/nova-platform/nova/stages/plan"
	"github.com/nova-platform/nova/stages/schema"
)

// version is set at release build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `nova — GitOps pipeline runner

Usage:
  nova validate [flags]   check the contract and resolve its stack
  nova plan     [flags]   validate, then plan with Terraform and write a plan bundle
  nova apply    [flags]   apply a plan bundle from 'nova plan' once the gate allows it
  nova run      [flags]   validate, plan, gate and apply in one go
  nova version            print the version

Run 'nova <command> -h' for the flags. Exit codes: 0 pass, 1 verdict fail,
2 tool or configuration error, 3 awaiting approval.
`

// run is nova's whole life short of os.Exit: it returns the exit code.
func run(ctx context.Context, env Env) int {
	if len(env.Args) == 0 && env.Getenv("GITHUB_ACTIONS") == "true" {
		env.Args = actionArgs(env.Getenv)
	}
	if len(env.Args) == 0 {
		fmt.Fprint(env.Stderr, usage)
		return ExitError
	}
	cmd := env.Args[0]
	switch cmd {
	case "version", "--version":
		fmt.Fprintf(env.Stdout, "nova %s\n", version)
		return ExitPass
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return ExitPass
	case "validate", "plan", "apply", "run":
	default:
		fmt.Fprintf(env.Stderr, "nova: unknown command %q\n\n%s", cmd, usage)
		return ExitError
	}
	cfg, err := parseConfig(cmd, env.Args[1:], env)
	if errors.Is(err, flag.ErrHelp) {
		return ExitPass
	}
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintf(env.Stderr, "nova %s: %s: %v\n", cmd, runner.ReasonOf(err), err)
		} else if err != errUsage {
			fmt.Fprintf(env.Stderr, "nova %s: %v\n", cmd, err)
		}
		return ExitError
	}
	return execute(ctx, cfg, env)
}

// execute wires the stages for the command and runs them.
func execute(ctx context.Context, cfg Config, env Env) int {
	rep := newReporter(cfg, env)
	runID := local.NewRunID(time.Now())
	st := &runner.State{
		RunID:        runID,
		Dir:          cfg.Dir,
		ContractPath: cfg.ContractPath,
		EnvOverride:  cfg.EnvOverride,
		Commit:       cfg.Commit,
		RunDir:       filepath.Join(local.RunsDir(cfg.Dir), runID),
	}
	stages, err := buildStages(cfg, env)
	if err != nil {
		return rep.abort(err)
	}
	events := local.NewEventLog(filepath.Join(st.RunDir, "events.jsonl"))
	p := runner.Pipeline{
		Stages:   stages,
		Events:   runner.NewEmitter(events, cfg.Source, runID, nil),
		OnResult: rep.stage,
	}
	rep.start(st)
	out := p.Run(ctx, st)
	code := exitCode(out.Verdict)
	rep.finish(out, st, events.Path(), code)
	return code
}

func buildStages(cfg Config, env Env) ([]runner.Stage, error) {
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return nil, err
	}
	validate := schema.New(reg)
	if cfg.Command == "validate" {
		return []runner.Stage{validate}, nil
	}
	tfPath, err := cfg.terraformPath()
	if err != nil {
		return nil, err
	}
	var tfLog io.Writer
	if cfg.Verbose {
		tfLog = env.Stderr
	}
	pc := plan.Config{
		Registry:      reg,
		Terraform:     terraform.Options{ExecPath: tfPath, Env: cfg.TerraformEnv, Log: tfLog},
		StateDir:      cfg.StateDir,
		BackendType:   cfg.BackendType,
		BackendConfig: cfg.BackendConfig,
	}
	switch cfg.Command {
	case "plan":
		return []runner.Stage{validate, plan.New(pc)}, nil
	case "apply":
		return []runner.Stage{validate, &apply.Bundle{Dir: cfg.Bundle, RunsDir: local.RunsDir(cfg.Dir)}, runner.Gate{}, apply.New(pc)}, nil
	}
	return []runner.Stage{validate, plan.New(pc), runner.Gate{}, apply.New(pc)}, nil
}

func loadRegistry(dir string) (*registry.Registry, error) {
	if dir == "" {
		return registry.Load(registry.Embedded())
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, runner.Errorf(runner.ConfigInvalid, "--registry: %w", err)
	}
	return registry.Load(os.DirFS(dir))
}
