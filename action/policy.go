package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
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

// policyConfig is the input of `nova policy`. It has its own flags rather
// than parseConfig's: it writes SARIF and JUnit, needs no commit and runs
// no Terraform.
type policyConfig struct {
	Dir, ContractPath, RegistryDir, PlanFile, OutFile string
	EnvOverride                                       runner.Environment
	Output                                            report.Format
	Policy                                            policy.Config
	InfracostKey                                      string
	Annotate                                          bool
}

const policyUsage = `Usage: nova policy [flags]

Validates the contract, then evaluates policy (built-in Rego rules, the
repository's .nova/policy/, checkov and kyverno-json when installed) and the
contract's NFRs, and prints every policy record. With --plan, plan-level
rules run too, over the given 'terraform show -json' output.

Exit codes: 0 pass, 1 blocked (a critical failure, or an invalid contract),
2 tool or configuration error, or a check that could not be evaluated.

Flags:
`

// policyCommand runs `nova policy` and returns the exit code.
func policyCommand(ctx context.Context, args []string, env Env) int {
	cfg, err := parsePolicyConfig(args, env)
	if errors.Is(err, flag.ErrHelp) {
		return ExitPass
	}
	if err != nil {
		if !errors.Is(err, errUsage) {
			fmt.Fprintf(env.Stderr, "nova policy: %s: %v\n", runner.ReasonOf(err), err)
		} else if err != errUsage {
			fmt.Fprintf(env.Stderr, "nova policy: %v\n", err)
		}
		return ExitError
	}
	st, stages, err := policyStages(ctx, cfg, env)
	if err != nil {
		fmt.Fprintf(env.Stderr, "nova policy: %s: %v\n", runner.ReasonOf(err), err)
		return ExitError
	}
	opts := reportOptions(cfg)
	p := runner.Pipeline{Stages: stages, OnResult: func(res runner.Result) { progress(env.Stderr, res, opts.Locate) }}
	out := p.Run(ctx, st)
	if err := writePolicyReport(cfg, env, st, opts); err != nil {
		fmt.Fprintf(env.Stderr, "nova policy: writing the %s report: %v\n", cfg.Output, err)
		return ExitError
	}
	code := exitCode(out.Verdict)
	// An evaluation with an engine or rule that could not run is
	// incomplete: "nothing blocked" is then not a pass but "could not
	// decide", which is what exit 2 means.
	if code == ExitPass && slices.ContainsFunc(st.PCRs, func(p runner.PCR) bool { return p.Result == runner.PCRError }) {
		fmt.Fprintln(env.Stderr, "nova policy: some checks could not be evaluated (error records above); the evaluation is incomplete")
		code = ExitError
	}
	return code
}

func parsePolicyConfig(args []string, env Env) (policyConfig, error) {
	var cfg policyConfig
	fs := flag.NewFlagSet("nova policy", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	fs.Usage = func() {
		fmt.Fprint(env.Stderr, policyUsage)
		fs.PrintDefaults()
	}
	var envName, output, engines, policyDir, checkovPath, kyvernoPath, infracostPath string
	fs.StringVar(&cfg.Dir, "dir", ".", "the consumer checkout")
	fs.StringVar(&cfg.ContractPath, "contract", schema.DefaultContractPath, "contract file, relative to --dir")
	fs.StringVar(&envName, "env", "", "override the contract's environment (dev|qa|prod|dr)")
	fs.StringVar(&output, "output", "text", "output format: text, json, sarif or junit")
	fs.StringVar(&cfg.OutFile, "out", "", "write the report to this file instead of stdout")
	fs.StringVar(&cfg.PlanFile, "plan", "", "'terraform show -json' output: also run the plan-level rules")
	fs.StringVar(&cfg.RegistryDir, "registry", env.Getenv("NOVA_REGISTRY"), "registry directory (default: the registry built into nova)")
	fs.StringVar(&engines, "engines", "", "comma-separated engines, overriding "+policy.ConfigFile+" (rego, checkov, kyverno)")
	fs.StringVar(&policyDir, "policy-dir", "", "consumer policy directory, relative to --dir (default .nova/policy)")
	fs.StringVar(&checkovPath, "checkov", "", "checkov binary (default: checkov on PATH)")
	fs.StringVar(&kyvernoPath, "kyverno-json", "", "kyverno-json binary (default: kyverno-json on PATH)")
	fs.StringVar(&infracostPath, "infracost", "", "infracost binary (default: infracost on PATH; needs INFRACOST_API_KEY)")
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	var err error
	if cfg.Output, err = report.ParseFormat(output); err != nil {
		return cfg, runner.Errorf(runner.ConfigInvalid, "--output: %w", err)
	}
	if cfg.EnvOverride, err = parseEnvironment(envName); err != nil {
		return cfg, err
	}
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return cfg, runner.Errorf(runner.ConfigInvalid, "--dir: %w", err)
	}
	if cfg.Policy, err = policy.LoadConfig(cfg.Dir); err != nil {
		return cfg, err
	}
	// Flags win over the file, which wins over the defaults.
	if engines != "" {
		cfg.Policy.Engines = strings.Split(engines, ",")
	}
	cfg.Policy.PolicyDir = firstNonEmpty(policyDir, cfg.Policy.PolicyDir)
	cfg.Policy.CheckovPath = firstNonEmpty(checkovPath, cfg.Policy.CheckovPath)
	cfg.Policy.KyvernoPath = firstNonEmpty(kyvernoPath, cfg.Policy.KyvernoPath)
	cfg.Policy.InfracostPath = firstNonEmpty(infracostPath, cfg.Policy.InfracostPath)
	if err := cfg.Policy.Validate(); err != nil {
		return cfg, err
	}
	cfg.InfracostKey = env.Getenv("INFRACOST_API_KEY")
	cfg.Annotate = env.Getenv("GITHUB_ACTIONS") == "true" || env.Getenv("GITEA_ACTIONS") == "true"
	return cfg, nil
}

// policyStages wires validate, policy and nfr (and plan-policy with
// --plan) for one evaluation. No events are recorded: `nova policy` reports
// and changes nothing.
func policyStages(ctx context.Context, cfg policyConfig, env Env) (*runner.State, []runner.Stage, error) {
	reg, err := loadRegistry(cfg.RegistryDir)
	if err != nil {
		return nil, nil, err
	}
	engines, err := policy.Engines(ctx, cfg.Dir, cfg.Policy, env.Environ)
	if err != nil {
		return nil, nil, err
	}
	st := &runner.State{Dir: cfg.Dir, ContractPath: cfg.ContractPath, EnvOverride: cfg.EnvOverride}
	stages := []runner.Stage{
		schema.New(reg),
		policy.New(engines, runner.PrePlan),
		nfr.New(reg, nfr.WithCost(&infracost.Estimator{Bin: cfg.Policy.InfracostPath, APIKey: cfg.InfracostKey, Env: env.Environ, Engine: renderer(reg)})),
	}
	if cfg.PlanFile != "" {
		plan, err := os.ReadFile(cfg.PlanFile)
		if err != nil {
			return nil, nil, runner.Errorf(runner.ConfigInvalid, "--plan: %w", err)
		}
		if !json.Valid(plan) {
			return nil, nil, runner.Errorf(runner.ConfigInvalid, "--plan %s is not JSON; give the output of terraform show -json", cfg.PlanFile)
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
func reportOptions(cfg policyConfig) report.Options {
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
func writePolicyReport(cfg policyConfig, env Env, st *runner.State, opts report.Options) (err error) {
	w := env.Stdout
	if cfg.OutFile != "" {
		f, err := os.Create(cfg.OutFile)
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
	if err := report.Write(w, cfg.Output, st.PCRs, opts); err != nil {
		return err
	}
	if cfg.Annotate && (cfg.OutFile != "" || cfg.Output == report.Text) {
		return report.WriteAnnotations(env.Stdout, st.PCRs, opts.Locate)
	}
	return nil
}
