package main

import (
	"context"
	"errors"
	"flag"
	"fmt"

	"github.com/nova-platform/nova/runner"
)

// version is set at release build time with -ldflags "-X main.version=…".
var version = "dev"

const usage = `nova — GitOps pipeline runner

Usage:
  nova validate [flags]   check the contract and resolve its stack
  nova policy   [flags]   validate, then evaluate policy and NFRs (text, json, sarif, junit)
  nova explain  [flags]   validate, evaluate, and explain the confidence score
  nova plan     [flags]   evaluate, then plan with Terraform and write a plan bundle
  nova apply    [flags]   apply a plan bundle from 'nova plan' once the gate allows it
  nova run      [flags]   evaluate, plan, gate and apply in one go
  nova plan|run --destroy [--env E]   plan (and apply, once approved) the destroy
                          of what the contract deployed in E: dr, prod, qa, dev
  nova drift    [flags]   compare live infrastructure with what was applied (exit 1: drift)
  nova validate|explain|plan|run --all|--changed [--parallel N]
                          the same for every contract under --dir, or those
                          the change from --base to --head touches, at once
  nova matrix   --all|--changed   the selected contracts as a JSON matrix
  nova summary  --from DIR | --statuses   one summary comment per environment from a fan-out's
                          --results files or the head's statuses (--selection: rows for the missing)
  nova approve  --env E --as NAME     approve the newest plan for E as NAME (a signed local claim)
  nova reject   --env E --as NAME --reason TEXT   reject it
  nova evidence verify|resolve   check the evidence repo, or resolve an indeterminate apply
  nova unlock   --env dev --reason TEXT [--contract ID]   release the environment a pull request holds
  nova break-glass request|approve|revoke|review --env E …   the emergency path around E's approvals
  nova rollback --env E --to CHANGE   plan, gate and apply the contract as it was at a change E applied
  nova init     --forge github|gitea [--dir D] [--stack S]   scaffold a contract, approvers and the workflow
  nova init     --forge github|gitea --fanout [--max-jobs K]   one fan-out workflow for every contract
  nova pin      [--dir D]   pin Nova by commit in the workflows' prod and dr jobs
  nova evidence query|export     ask the verified evidence, or export its fact tables
  nova report   --out FILE       an HTML report of promotions, approvals, failures, confidence
  nova version            print the version

apply, run, approve, reject, rollback, evidence resolve and unlock take
--check: say what would happen and what the gate would decide, change and
record nothing, exit as the real command would.

Run 'nova <command> -h' for the flags. Exit codes: 0 pass, 1 verdict fail,
2 tool or configuration error, 3 awaiting approval; over many contracts, the
worst of theirs (2 before 1 before 3 before 0).
`

// run is nova's whole life short of os.Exit: it reads the configuration
// once, masks the secrets it found, runs the command and reports. The
// error it returns has been reported already; it only carries what the
// exit code is made from.
func run(ctx context.Context, env Env) error {
	cfg, err := readConfig(env)
	// Masks go out before any other line, including an error about the
	// configuration that might quote a value.
	mask(env.Stdout, cfg.Forge, cfg.Secrets)
	switch {
	case errors.Is(err, errNoCommand):
		fmt.Fprint(env.Stderr, usage)
		return err
	case errors.Is(err, errUnknownCommand) && cfg.Command == "break-glass":
		fmt.Fprintf(env.Stderr, "nova break-glass: %v\n\n%s", err, breakGlassUsage)
		return err
	case errors.Is(err, errUnknownCommand) && cfg.Command == "evidence":
		fmt.Fprintf(env.Stderr, "nova evidence: %v\n\n%s", err, evidenceUsage)
		return err
	case errors.Is(err, errUnknownCommand):
		fmt.Fprintf(env.Stderr, "nova: %v\n\n%s", err, usage)
		return err
	case errors.Is(err, flag.ErrHelp), errors.Is(err, errUsage):
		return err
	case err != nil:
		fmt.Fprintf(env.Stderr, "nova %s: %s: %v\n", cfg.displayName(), runner.ReasonOf(err), err)
		return err
	}
	switch cfg.Command {
	case "version", "--version":
		fmt.Fprintf(env.Stdout, "nova %s\n", version)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, usage)
		return nil
	case "evidence-help":
		fmt.Fprint(env.Stdout, evidenceUsage)
		return nil
	case "break-glass-help":
		fmt.Fprint(env.Stdout, breakGlassUsage)
		return nil
	case "break-glass":
		return breakGlassCommand(ctx, cfg, env)
	case "policy":
		return policyCommand(ctx, cfg, env)
	case "verify":
		return evidenceVerify(ctx, cfg, env)
	case "resolve":
		return evidenceResolve(ctx, cfg, env)
	case "unlock":
		return unlockCommand(ctx, cfg, env)
	case "query":
		return evidenceQuery(ctx, cfg, env)
	case "export":
		return evidenceExport(ctx, cfg, env)
	case "report":
		return reportCommand(ctx, cfg, env)
	case "approve", "reject":
		return approveCommand(ctx, cfg, env)
	case "init", "pin":
		command := initCommand
		if cfg.Command == "pin" {
			command = pinCommand
		}
		if err := command(ctx, cfg, env); err != nil {
			return failed(env, cfg, err)
		}
		return nil
	case "matrix":
		return matrixCommand(ctx, cfg, env)
	case "summary":
		return summaryCommand(ctx, cfg, env)
	}
	return execute(ctx, cfg, env)
}

// failed reports an error that stopped a command before it reached a
// verdict, and returns it for the exit code.
func failed(env Env, cfg Config, err error) error {
	fmt.Fprintf(env.Stderr, "nova %s: %s: %v\n", cfg.displayName(), runner.ReasonOf(err), err)
	return err
}
