package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/infracost"
	"github.com/nova-platform/nova/stages/nfr"
	"github.com/nova-platform/nova/stages/policy"
	"github.com/nova-platform/nova/stages/policy/report"
	"github.com/nova-platform/nova/stages/schema"
)

const policyUsage = `Usage: nova policy [flags]

Validates the contract, then evaluates policy (built-in Rego rules, the
repository's .nova/policy/, checkov and kyverno-json when installed) and the
contract's NFRs, and prints every policy record. With --plan, plan-level
rules run too, over the given 'terraform show -json' output.

Exit codes: 0 pass, 1 blocked (a critical failure, or an invalid contract),
2 tool or configuration error, or a check that could not be evaluated.

Flags:
`

// policyCommand runs `nova policy`. No events are recorded: it reports and
// changes nothing.
func policyCommand(ctx context.Context, cfg Config, env Env) error {
	pc, err := policyConfig(cfg)
	if err != nil {
		return failed(env, cfg, err)
	}
	st, stages, err := policyStages(ctx, cfg, pc, env)
	if err != nil {
		return failed(env, cfg, err)
	}
	opts := reportOptions(cfg)
	p := runner.Pipeline{Stages: stages, OnResult: func(res runner.Result) { progress(env.Stderr, res, opts.Locate) }}
	out := p.Run(ctx, st)
	format, _ := report.ParseFormat(cfg.Output)
	if err := writePolicyReport(cfg, format, env, st, opts); err != nil {
		return failed(env, cfg, fmt.Errorf("writing the %s report: %w", cfg.Output, err))
	}
	// An evaluation with an engine or rule that could not run is
	// incomplete: "nothing blocked" is then not a pass but "could not
	// decide", which is what exit 2 means.
	if out.Verdict == runner.Pass && slices.ContainsFunc(st.PCRs, func(p runner.PCR) bool { return p.Result == runner.PCRError }) {
		fmt.Fprintln(env.Stderr, "nova policy: some checks could not be evaluated (error records above); the evaluation is incomplete")
		return verdict(runner.Errored, runner.PolicyEngineError)
	}
	return verdict(out.Verdict, out.Reason)
}

// policyConfig is the consumer's .nova/config.yml with the command line's
// overrides: flags win over the file, which wins over the defaults.
func policyConfig(cfg Config) (policy.Config, error) {
	pc, err := policy.LoadConfig(cfg.Dir)
	if err != nil {
		return pc, err
	}
	f := cfg.Policy
	if f.Engines != "" {
		pc.Engines = strings.Split(f.Engines, ",")
	}
	pc.PolicyDir = firstNonEmpty(f.PolicyDir, pc.PolicyDir)
	pc.CheckovPath = firstNonEmpty(f.CheckovPath, pc.CheckovPath)
	pc.KyvernoPath = firstNonEmpty(f.KyvernoPath, pc.KyvernoPath)
	pc.InfracostPath = firstNonEmpty(f.Infracost, pc.InfracostPath)
	return pc, pc.Validate()
}

// policyStages wires validate, policy and nfr (and plan-policy with
// --plan) for one evaluation. No events are recorded: `nova policy` reports
// and changes nothing.
func policyStages(ctx context.Context, cfg Config, pc policy.Config, env Env) (*runner.State, []runner.Stage, error) {
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return nil, nil, err
	}
	engines, err := policy.Engines(ctx, cfg.Dir, pc, env.Environ)
	if err != nil {
		return nil, nil, err
	}
	st := &runner.State{Dir: cfg.Dir, ContractPath: cfg.ContractPath, EnvOverride: cfg.EnvOverride}
	stages := []runner.Stage{
		schema.New(reg),
		policy.New(engines, runner.PrePlan),
		nfr.New(reg, nfr.WithCost(&infracost.Estimator{Bin: pc.InfracostPath, APIKey: cfg.InfracostKey, Env: env.Environ, Engine: renderer(reg)})),
	}
	if cfg.Policy.PlanFile != "" {
		plan, err := os.ReadFile(cfg.Policy.PlanFile)
		if err != nil {
			return nil, nil, runner.Errorf(runner.ConfigInvalid, "--plan: %w", err)
		}
		if !json.Valid(plan) {
			return nil, nil, runner.Errorf(runner.ConfigInvalid, "--plan %s is not JSON; give the output of terraform show -json", cfg.Policy.PlanFile)
		}
		st.PlanJSON = plan
		stages = append(stages, policy.New(engines, runner.PostPlan))
	}
	return st, stages, nil
}

// progress prints one line per stage, and the findings of one that did not
// pass, on stderr: stdout carries the report. A finding about a contract
// field is shown at its line.
func progress(w io.Writer, res runner.Result, locate report.Locator) {
	fmt.Fprintf(w, "  %-11s %-5s %s\n", res.Stage, res.Verdict, oneLine(res.Summary))
	if res.Verdict != runner.Pass {
		writeFindings(w, res.Findings, locate)
	}
}

// reportOptions places records in the contract file, as the repository
// names it; an unreadable contract places none (the schema stage reports
// why).
func reportOptions(cfg Config) report.Options {
	file := filepath.ToSlash(cfg.ContractPath)
	opts := report.Options{ContractFile: file, Version: version}
	if data, err := os.ReadFile(filepath.Join(cfg.Dir, cfg.ContractPath)); err == nil {
		opts.Locate = report.ContractLocator(file, data)
	}
	return opts
}

// writePolicyReport renders the records, and in GitHub or Gitea Actions
// annotates the contract with the failing ones. Annotations go to stdout,
// where the runner reads workflow commands, unless the report itself is a
// machine-readable document on stdout.
func writePolicyReport(cfg Config, format report.Format, env Env, st *runner.State, opts report.Options) (err error) {
	w := env.Stdout
	if cfg.Policy.OutFile != "" {
		f, err := os.Create(cfg.Policy.OutFile)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}()
		w = f
	}
	if err := report.Write(w, format, st.PCRs, opts); err != nil {
		return err
	}
	if cfg.Forge != NoForge && (cfg.Policy.OutFile != "" || format == report.Text) {
		return report.WriteAnnotations(env.Stdout, st.PCRs, opts.Locate)
	}
	return nil
}
