package main

import (
	"errors"
	"flag"
	"fmt"
	"github.com/nova-platform/nova/runner/forgehttp"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/policy/report"
	"github.com/nova-platform/nova/stages/schema"
	"github.com/nova-platform/nova/templates"
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
	// Now is the clock of the events a command records, of the gate's
	// timeouts and of break-glass grants; nil means time.Now. Tests set
	// it to let time pass without waiting.
	Now func() time.Time
	// ForgeRetry bounds and performs the waits of the forge's API client
	// (a rate limit's Retry-After); zero fields take forgehttp's defaults.
	// Tests set its Sleep to see a wait without waiting.
	ForgeRetry forgehttp.Policy
	// Pause, when set, is called at the named points of a command where
	// another run may interleave (pause* constants): tests run a second
	// command there to drive a race step by step, without sleeping.
	Pause func(point string)
}

// Config is every input of one nova invocation, read once from the command
// line and the environment by readConfig. Nothing else in nova reads flags
// or environment variables.
type Config struct {
	// Command is validate, policy, explain, plan, apply, run, drift,
	// matrix, init, pin, verify, resolve, query or export (the last four
	// are `nova evidence …`), report, version or help.
	Command string

	Dir          string
	ContractPath string
	EnvOverride  runner.Environment
	Output       string
	RegistryDir  string
	StateDir     string
	// TerraformPath and TofuPath are the flags' values; enginePaths
	// resolves them.
	TerraformPath, TofuPath string
	// EngineOverride replaces the contract's engine (--engine).
	EngineOverride string
	// StatePassphrase is what OpenTofu derives the key of an encrypted
	// state from ($NOVA_STATE_PASSPHRASE); never passed on in terraform's
	// environment, and masked.
	StatePassphrase string
	BackendType     string
	BackendConfig   []string
	Commit          string
	// Base is the trusted base the approver config is read from.
	Base   string
	Bundle string
	// ExpectDigest is the plan digest the bundle must carry: the one the
	// plan job published, so an artifact swapped on the way is refused.
	ExpectDigest string
	// ApproversPath is the approver config, relative to Dir.
	ApproversPath string
	// Destroy plans (and, for run, applies) the contract's destroy
	// instead of its changes (--destroy).
	Destroy bool
	// UntilMerge (--until-merge) plans and gates guarded environments on
	// the pull request and applies nothing there; Merged (--merged) runs
	// on the merged commit and applies the plan approved on the pull
	// request only when it is that very plan (runner.MergeCheck).
	UntilMerge, Merged bool
	// MergeQueue (--merge-queue, run only) checks a merge queue's commit
	// against the change approved on the pull request (runner.QueueCheck):
	// secretless, it plans nothing and records nothing.
	MergeQueue bool
	Verbose    bool
	// LockTimeout is how long a run waits for the run lock and terraform's
	// state lock; TerraformTimeout bounds each terraform command.
	LockTimeout, TerraformTimeout time.Duration
	// TrustedKeysFile holds armored OpenPGP keys that verify commits for
	// the provenance input.
	TrustedKeysFile string
	// InfracostKey lets the nfr stage estimate cost.
	InfracostKey string

	// Policy holds `nova policy`'s own flags.
	Policy PolicyFlags
	// Evidence is where events go and how they are signed.
	Evidence EvidenceConfig
	// Verify and Resolve hold the evidence subcommands' flags, Approve
	// those of `nova approve` and `nova reject`.
	Verify  VerifyFlags
	Resolve ResolveFlags
	Approve ApproveFlags
	// Unlock holds `nova unlock`'s flags.
	Unlock UnlockFlags
	// BreakGlass holds `nova break-glass`'s flags.
	BreakGlass BreakGlassFlags
	// Init and Pin hold `nova init`'s and `nova pin`'s flags.
	Init InitFlags
	Pin  PinFlags
	// Select runs many contracts under Dir instead of one (many.go).
	Select SelectFlags
	// MaxJobs is how many jobs nova matrix fans out to at most
	// (--max-jobs).
	MaxJobs int
	// Audit holds the flags of `nova evidence query|export` and `nova
	// report`; they verify as Verify says.
	Audit AuditFlags

	// Source is the CloudEvents source of this run's events; ForgeRun the
	// forge's workflow run id.
	Source   string
	ForgeRun string
	// Forge is the CI system nova runs in, if any; OutputFile and
	// SummaryFile are its runner's step output and job summary files, and
	// ForgeAPI says how to reach its API.
	Forge    Forge
	ForgeAPI ForgeConfig
	// SummaryComments reports a many-run in one summary comment per
	// environment whatever its number of contracts (--summary): a job of
	// a fan-out whose change touches more than ten (summary comments).
	SummaryComments bool
	// ResultsFile is where a job of a sharded fan-out writes its
	// contracts' results for the fan-out's summary job (--results): it
	// then posts no comment of its own, only statuses and check runs.
	ResultsFile string
	// ResultsFrom is the directory `nova summary` reads the results
	// files of a fan-out's jobs from (--from).
	ResultsFrom string
	// SelectionFile is where `nova matrix` writes the matrix too, and
	// where `nova summary` reads it back: the summary lists every
	// selected contract, with or without a result.
	SelectionFile string
	// FromStatuses makes `nova summary` read the results from the
	// commit's statuses the jobs set, not from files (Gitea).
	FromStatuses bool
	OutputFile   string
	SummaryFile  string
	// WorkDir is where nova was started, for shorter paths in messages;
	// Workspace the runner's workspace (GITHUB_WORKSPACE), which step
	// outputs and annotations are relative to.
	WorkDir, Workspace string
	// Actor is who runs nova: the forge user, else the local user.
	Actor string
	// TerraformEnv is the environment terraform runs with.
	TerraformEnv map[string]string
	// Secrets are values that must never be printed; in a forge's runner
	// they are masked before anything else is written.
	Secrets []string

	// Check is --check: the command runs as it would and says what it
	// would do, changing and recording nothing (check.go).
	Check bool
	// Rollback holds `nova rollback`'s flags.
	Rollback RollbackFlags
}

// PolicyFlags are the flags only `nova policy` has.
type PolicyFlags struct {
	OutFile, PlanFile                                       string
	Engines, PolicyDir, CheckovPath, KyvernoPath, Infracost string
}

// VerifyFlags are `nova evidence verify`'s flags.
type VerifyFlags struct {
	KeyFiles, CommitKeyFiles []string
	Witness                  string
	Contract                 string
	// Since makes the verification incremental: only what came after
	// this witnessed head.
	Since string
}

// ApproveFlags are the flags of `nova approve` and `nova reject`.
type ApproveFlags struct {
	// Digest is a prefix of the plan digest to decide on (default: the
	// newest plan of the environment).
	Digest string
	// Reason explains a rejection.
	Reason string
}

// AuditFlags are the flags of the commands that answer from verified
// evidence: `nova evidence query`, `nova evidence export`, `nova report`.
type AuditFlags struct {
	// The query's filters; each may be given several times.
	Contracts, Environments, Types, Approvers, Reasons []string
	Since, Until                                       string
	// Format is export's file format; Out export's directory or report's
	// file.
	Format, Out string
	// Reindex rebuilds the index from a full verification.
	Reindex bool
	// OpenReviews keeps only the break-glass uses whose post-incident
	// review is open.
	OpenReviews bool
}

// ResolveFlags are `nova evidence resolve`'s flags.
type ResolveFlags struct {
	Contract string
	Env      runner.Environment
	Outcome  string
	Note     string
}

// Commands and the groups of flags they take.
var (
	pipelineCommands = []string{"validate", "explain", "plan", "apply", "run", "drift", "rollback"}
	approveCommands  = []string{"approve", "reject"}
	contractCommands = slices.Concat(pipelineCommands, []string{"policy"}, approveCommands)
	// manyCommands can run every contract under --dir (--all) or those a
	// change touches (--changed); matrix only lists them.
	manyCommands     = []string{"validate", "explain", "plan", "run", "matrix"}
	auditCommands    = []string{"query", "export", "report"}
	evidenceCommands = slices.Concat(pipelineCommands, []string{"verify", "resolve", "unlock", "break-glass"}, approveCommands, auditCommands)
	// repoCommands read an evidence repo named by their one argument.
	repoCommands = slices.Concat([]string{"verify"}, auditCommands)
)

type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// errUsage marks a command-line mistake already explained on stderr.
var errUsage = errors.New("usage")

// readConfig reads the command line (or, in a forge's runner without
// arguments, the action's inputs) and the environment into a Config.
func readConfig(env Env) (Config, error) {
	args := env.Args
	forge := detectForge(env.Getenv)
	// Secrets are known before anything can go wrong, so that even an
	// error about the configuration is printed after the masks.
	secretValues := secrets(env.Getenv, "")
	// Without arguments in a forge's runner nova is the container action:
	// its inputs say what to do.
	actionMode := len(args) == 0 && forge != NoForge
	if actionMode {
		env.Getenv = actionGetenv(env.Getenv)
		var err error
		if args, err = actionCommand(env.Getenv); err != nil {
			return Config{Forge: forge, Secrets: secretValues}, err
		}
	}
	if len(args) == 0 {
		return Config{}, errNoCommand
	}
	cfg := Config{Command: args[0], Forge: forge, Secrets: secretValues}
	args = args[1:]
	switch cfg.Command {
	case "version", "--version", "help", "-h", "--help":
		return cfg, nil
	case "evidence":
		if len(args) == 0 || slices.Contains([]string{"help", "-h", "--help"}, args[0]) {
			return Config{Command: "evidence-help"}, nil
		}
		if !slices.Contains([]string{"verify", "resolve", "query", "export"}, args[0]) {
			return cfg, fmt.Errorf("%w %q", errUnknownCommand, args[0])
		}
		cfg.Command, args = args[0], args[1:]
	case "break-glass":
		if len(args) == 0 || slices.Contains([]string{"help", "-h", "--help"}, args[0]) {
			return Config{Command: "break-glass-help"}, nil
		}
		if !isBreakGlassAction(args[0]) {
			return cfg, fmt.Errorf("%w %q", errUnknownCommand, args[0])
		}
		cfg.BreakGlass.Action, args = args[0], args[1:]
	case "init", "pin", "report", "unlock", "summary":
	default:
		if !slices.Contains(contractCommands, cfg.Command) && cfg.Command != "matrix" {
			return cfg, fmt.Errorf("%w %q", errUnknownCommand, cfg.Command)
		}
	}
	fs := flag.NewFlagSet("nova "+cfg.displayName(), flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	f := cfg.flags(fs, env.Getenv)
	if cfg.Command == "policy" {
		fs.Usage = func() {
			fmt.Fprint(env.Stderr, policyUsage)
			fs.PrintDefaults()
		}
	}
	if actionMode {
		extra, err := actionFlags(fs, cfg.Command, env.Getenv)
		if err != nil {
			return cfg, err
		}
		args = append(args, extra...)
	}
	if slices.Contains(repoCommands, cfg.Command) {
		// The repo may come before the flags (`verify ./repo --contract X`),
		// where flag would stop reading.
		args = reorderArgs(fs, args)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, flag.ErrHelp
		}
		return cfg, errUsage
	}
	positional := fs.Args()
	if slices.Contains(repoCommands, cfg.Command) && len(positional) > 0 {
		f.evidenceRepo, positional = firstNonEmpty(positional[0], f.evidenceRepo), positional[1:]
	}
	cfg.Secrets = secrets(env.Getenv, f.evidenceRepo)
	if len(positional) > 0 {
		fmt.Fprintf(env.Stderr, "nova %s: unexpected argument %q\n", cfg.displayName(), positional[0])
		return cfg, errUsage
	}
	if err := cfg.complete(f, env); err != nil {
		return cfg, err
	}
	cfg.ForgeAPI.Retry = env.ForgeRetry
	return cfg, nil
}

// rawFlags are flag values that need checking or resolving before they
// become part of the Config.
type rawFlags struct {
	env, evidenceRepo, branch, resolveEnv, forge string
	backendConfig, keyFiles, commitKeys          listFlag
	signers, fulcioRoot, rekorKey                string
	requireLog                                   bool
}

// listVar registers a repeatable flag whose values may also be given
// comma-separated (--env qa,prod).
func listVar(fs *flag.FlagSet, dst *[]string, name, usage string) {
	fs.Func(name, usage, func(v string) error {
		for _, part := range strings.Split(v, ",") {
			if part = strings.TrimSpace(part); part != "" {
				*dst = append(*dst, part)
			}
		}
		return nil
	})
}

// flags declares the flags of cfg.Command on fs: one table of every flag
// nova has, each registered for the commands that use it, with its default
// from the environment where it has one.
func (cfg *Config) flags(fs *flag.FlagSet, getenv func(string) string) *rawFlags {
	f := &rawFlags{}
	cmd := cfg.Command
	if slices.Contains(contractCommands, cmd) {
		fs.StringVar(&cfg.Dir, "dir", ".", "the consumer checkout")
		fs.StringVar(&cfg.ContractPath, "contract", schema.DefaultContractPath, "contract file, relative to --dir")
		fs.StringVar(&f.env, "env", "", "override the contract's environment (dev|qa|prod|dr); it may only raise the guard")
		fs.StringVar(&cfg.RegistryDir, "registry", getenv("NOVA_REGISTRY"), "registry directory (default: the registry built into nova)")
	}
	switch {
	case cmd == "policy":
		fs.StringVar(&cfg.Output, "output", "text", "output format: text, json, sarif or junit")
		fs.StringVar(&cfg.Policy.OutFile, "out", "", "write the report to this file instead of stdout")
		fs.StringVar(&cfg.Policy.PlanFile, "plan", "", "'terraform show -json' output: also run the plan-level rules")
		fs.StringVar(&cfg.Policy.Engines, "engines", "", "comma-separated engines, overriding .nova/config.yml (rego, checkov, kyverno)")
		fs.StringVar(&cfg.Policy.PolicyDir, "policy-dir", "", "consumer policy directory, relative to --dir (default .nova/policy)")
		fs.StringVar(&cfg.Policy.CheckovPath, "checkov", "", "checkov binary (default: checkov on PATH)")
		fs.StringVar(&cfg.Policy.KyvernoPath, "kyverno-json", "", "kyverno-json binary (default: kyverno-json on PATH)")
		fs.StringVar(&cfg.Policy.Infracost, "infracost", "", "infracost binary (default: infracost on PATH; needs INFRACOST_API_KEY)")
	case cmd == "verify":
		fs.StringVar(&cfg.Output, "output", "text", "text or json")
	case cmd == "matrix":
		// Always JSON: the matrix a workflow reads.
		cfg.Output = "json"
		fs.StringVar(&cfg.Dir, "dir", ".", "the repository root to look for contracts under")
		fs.StringVar(&cfg.RegistryDir, "registry", getenv("NOVA_REGISTRY"), "registry directory (default: the registry built into nova)")
		fs.StringVar(&cfg.Base, "base", getenv("NOVA_BASE"), "base commit or ref of the change --changed looks at (default: the pull request's base)")
	case cmd == "query":
		fs.StringVar(&cfg.Output, "output", "table", "table, jsonl or csv")
	case cmd == "export" || cmd == "report":
		// They write files: --format and --out say which.
	default:
		fs.StringVar(&cfg.Output, "output", "text", "output format: text or json")
	}
	if slices.Contains(pipelineCommands, cmd) {
		fs.StringVar(&cfg.StateDir, "state-dir", getenv("NOVA_STATE_DIR"), "root of local Terraform state (default: $XDG_STATE_HOME/nova/state)")
		fs.StringVar(&cfg.TerraformPath, "terraform", getenv("NOVA_TERRAFORM"), "terraform binary (default: terraform on PATH)")
		fs.StringVar(&cfg.TofuPath, "tofu", getenv("NOVA_TOFU"), "OpenTofu binary, for contracts with engine: opentofu (default: tofu on PATH)")
		fs.StringVar(&cfg.EngineOverride, "engine", "", "override the contract's engine: terraform or opentofu")
		fs.StringVar(&cfg.BackendType, "backend", "", "Terraform backend type, overriding the contract's")
		fs.Var(&f.backendConfig, "backend-config", "Terraform -backend-config key=value (repeatable)")
		fs.StringVar(&cfg.Commit, "commit", "", "commit being deployed (default: $NOVA_COMMIT, $GITHUB_SHA, or HEAD of --dir)")
		fs.BoolVar(&cfg.Verbose, "verbose", false, "stream terraform output to stderr")
		fs.StringVar(&cfg.TrustedKeysFile, "trusted-keys", getenv("NOVA_TRUSTED_KEYS"), "armored OpenPGP public keys that verify commit signatures")
		fs.StringVar(&cfg.Base, "base", getenv("NOVA_BASE"), "trusted base commit or ref the approver config is read from, and the base of the change --changed looks at (default: the pull request's base, else the default branch)")
		fs.DurationVar(&cfg.LockTimeout, "lock-timeout", 0, "how long to wait for another run holding this contract and environment (0: fail at once with STATE_LOCKED)")
		fs.DurationVar(&cfg.TerraformTimeout, "terraform-timeout", 2*time.Hour, "interrupt a terraform command running longer (0: never); a timed-out apply is an unknown outcome")
	}
	if slices.Contains(pipelineCommands, cmd) || slices.Contains(approveCommands, cmd) {
		fs.StringVar(&cfg.ApproversPath, "approvers", runner.ApproversFile, "approver config, relative to --dir, read from the trusted base")
	}
	if slices.Contains(manyCommands, cmd) {
		fs.BoolVar(&cfg.Select.All, "all", false, "run every contract under --dir (.nova/contract.yml, .nova/*.contract.yml)")
		fs.BoolVar(&cfg.Select.Changed, "changed", false, "run the contracts under --dir that the change from --base to --head touches")
		fs.StringVar(&cfg.Select.Head, "head", getenv("NOVA_HEAD"), "head commit or ref of the change --changed looks at (default: the pull request's head, else HEAD)")
		fs.IntVar(&cfg.Select.Parallel, "parallel", runtime.NumCPU(), "with --all, --changed or --shard, how many contracts run at once")
		if cmd != "matrix" {
			fs.StringVar(&cfg.Select.ShardList, "shard", "", "run the contracts of one job of a sharded fan-out: the shard of its nova matrix entry (a JSON list of contracts relative to --dir)")
			fs.IntVar(&cfg.Select.Job, "job", 0, "run the shard of job N (from 1) of the matrix in --selection, nothing if it has fewer jobs, and, if its entry says summary, post no comment: a workflow whose number of jobs is fixed (Gitea cannot expand a matrix from a job's output)")
			fs.StringVar(&cfg.SelectionFile, "selection", "", "with --job, the matrix nova matrix --selection wrote")
		}
	}
	if cmd == "summary" {
		fs.StringVar(&cfg.ResultsFrom, "from", "", "the directory of the results files the jobs of a fan-out wrote (--results), at any depth")
		fs.StringVar(&cfg.SelectionFile, "selection", "", "the fan-out's matrix as nova matrix --selection wrote it: each selected contract without a result is a row saying so, and fails the summary")
		fs.BoolVar(&cfg.FromStatuses, "statuses", false, "read the selected contracts' results from the pull request head's commit statuses (nova/<id>/<env>) the jobs set, not from --from's files: for a forge whose jobs cannot pass files (Gitea); needs --selection")
	}
	if cmd == "matrix" {
		fs.StringVar(&cfg.SelectionFile, "selection", "", "write the matrix to this file too, for the fan-out's summary job (nova summary --selection)")
		fs.IntVar(&cfg.MaxJobs, "max-jobs", DefaultMaxJobs, "at most this many jobs: past it, the contracts are packed into this many shards, balanced by the modules they resolve to")
	}
	if slices.Contains(manyCommands, cmd) && cmd != "matrix" {
		fs.BoolVar(&cfg.SummaryComments, "summary", false, "report the selected contracts in one summary comment per environment however few they are (the jobs of a fan-out whose change touches more than 10 contracts); past 10 in one job, the default")
		fs.StringVar(&cfg.ResultsFile, "results", "", "write the selected contracts' results to this JSON file for the fan-out's `nova summary`, and post no comment: commit statuses and check runs only (the jobs of a fan-out whose change is reported in one summary)")
	}
	if cmd == "plan" || cmd == "run" {
		fs.BoolVar(&cfg.Destroy, "destroy", false, "plan the destroy of everything the contract deployed in the environment (through the gate: dr, then prod, qa, dev)")
	}
	if cmd == "plan" || cmd == "run" || cmd == "apply" {
		fs.BoolVar(&cfg.UntilMerge, "until-merge", false, "apply after merge, on the pull request: guarded environments plan and wait for approval, and nothing is applied there (dev still applies)")
		fs.BoolVar(&cfg.Merged, "merged", false, "apply after merge, on the merged commit: apply the plan approved on the pull request only if the merge is that very plan; otherwise plan again and wait (MERGE_PLAN_STALE)")
	}
	if cmd == "run" {
		fs.BoolVar(&cfg.MergeQueue, "merge-queue", false, "apply after merge, on a merge queue's commit (merge_group): fail with MERGE_PLAN_STALE when it is not the change approved on the pull request; reads the evidence, plans, applies and records nothing")
	}
	if cmd == "rollback" {
		fs.StringVar(&cfg.Rollback.To, "to", "", "the change to return to: its id, or its first hex digits (required; one --env applied)")
	}
	if cmd == "apply" {
		fs.StringVar(&cfg.Bundle, "bundle", "", "plan bundle from `nova plan` (default: the newest for this contract)")
		fs.StringVar(&cfg.ExpectDigest, "digest", "", "refuse the bundle unless its plan digest is this one (the plan job's plan-digest output)")
	}
	if slices.Contains(checkCommands, cmd) {
		fs.BoolVar(&cfg.Check, "check", false, "say what would happen and what the gate would decide; change and record nothing (exit code as the real command's)")
	}
	if slices.Contains(evidenceCommands, cmd) {
		fs.StringVar(&f.evidenceRepo, "evidence-repo", "", "evidence repo path or URL (default: $NOVA_EVIDENCE_REPO, else a local bare repo)")
	}
	if slices.Contains(repoCommands, cmd) {
		fs.StringVar(&f.branch, "branch", "", "evidence branch (default: $NOVA_EVIDENCE_BRANCH or main)")
		fs.Var(&f.keyFiles, "key", "event public key, cosign.pub format (repeatable; default: $NOVA_EVIDENCE_PUBLIC_KEY, else the local key)")
		fs.Var(&f.commitKeys, "commit-key", "allowed OpenPGP public key for commits, armored (repeatable; default: $NOVA_COMMIT_PUBLIC_KEY, else the local key)")
		fs.StringVar(&cfg.Verify.Witness, "witness", "", "file of heads this machine pushed, to detect force-pushes (default: the local store's witness, when present)")
		fs.StringVar(&f.signers, "signers", "", "keyless: the default branch's .nova/signers.yml naming whose keyless signatures count (default: $NOVA_SIGNERS_FILE)")
		fs.StringVar(&f.fulcioRoot, "fulcio-root", "", "keyless: PEM file of the Fulcio CA keyless signatures chain to (default: $NOVA_FULCIO_ROOT / $NOVA_FULCIO_ROOT_FILE)")
		fs.StringVar(&f.rekorKey, "rekor-public-key", "", "keyless: PEM file of the Rekor log's public key; the log entries keyless signatures carry are checked with it (default: $NOVA_REKOR_PUBLIC_KEY / $NOVA_REKOR_PUBLIC_KEY_FILE)")
		fs.BoolVar(&f.requireLog, "require-tlog", false, "keyless: a keyless signature without a Rekor entry does not count (default: $NOVA_REKOR_REQUIRED)")
	}
	if slices.Contains(auditCommands, cmd) {
		listVar(fs, &cfg.Audit.Contracts, "contract", "only this contract (repeatable)")
		fs.BoolVar(&cfg.Audit.Reindex, "reindex", false, "rebuild the index by verifying every event (after accepting a rewritten history)")
	}
	switch cmd {
	case "query":
		listVar(fs, &cfg.Audit.Environments, "env", "only events of this environment (repeatable)")
		listVar(fs, &cfg.Audit.Types, "type", "only events of this type, patterns allowed: nova.apply.* (repeatable)")
		listVar(fs, &cfg.Audit.Approvers, "approver", "only events naming this approver: approvals, rejections, refusals, authorizations, resolutions (repeatable)")
		listVar(fs, &cfg.Audit.Reasons, "reason", "only events carrying this reason code (repeatable)")
		fs.BoolVar(&cfg.Audit.OpenReviews, "open-reviews", false, "only break-glass uses (nova.breakglass.used) whose post-incident review is not recorded yet")
		fs.StringVar(&cfg.Audit.Since, "since", "", "only events at or after: RFC 3339, YYYY-MM-DD, or an age such as 90d")
		fs.StringVar(&cfg.Audit.Until, "until", "", "only events before: RFC 3339, YYYY-MM-DD, or an age")
	case "export":
		fs.StringVar(&cfg.Audit.Format, "format", "jsonl", "jsonl or csv")
		fs.StringVar(&cfg.Audit.Out, "out", "", "directory to write one file per table into (required)")
	case "report":
		fs.StringVar(&cfg.Audit.Out, "out", "report.html", "the HTML file to write")
	}
	switch cmd {
	case "init":
		fs.StringVar(&cfg.Dir, "dir", ".", "the directory the contract is for (the workflow goes to its repository's root)")
		fs.StringVar(&f.forge, "forge", "", "github or gitea: the workflow to write (required)")
		fs.StringVar(&cfg.Init.Stack, "stack", "hello", "the registry stack the contract deploys")
		fs.StringVar(&cfg.Init.Name, "name", "", "short name of the contract in workflow and job names (default: the directory's name)")
		fs.BoolVar(&cfg.Init.Force, "force", false, "overwrite files that exist")
		fs.BoolVar(&cfg.Init.Keyless, "keyless", false, "GitHub: sign evidence with Fulcio certificates for the jobs' id-token, not a signing-key secret (docs/evidence.md)")
		fs.StringVar(&cfg.Init.ApplyOn, "apply-on", "pr", "pr: guarded environments apply on the pull request once approved; merge: they are planned and approved on the pull request and applied after it is merged (docs/apply-after-merge.md)")
		fs.StringVar(&cfg.RegistryDir, "registry", getenv("NOVA_REGISTRY"), "registry directory (default: the registry built into nova)")
		fs.StringVar(&cfg.Init.NovaURL, "nova-url", "", "Gitea: URL of the nova release binary the workflow fetches")
		fs.StringVar(&cfg.Init.NovaSHA256, "nova-sha256", "", "Gitea: sha256 the fetched binary must have")
		fs.StringVar(&cfg.Init.NovaSource, "nova-source", "", "Gitea: git URL nova is built from when no release binary is given (default: "+novaSource+")")
		fs.StringVar(&cfg.Init.NovaCommit, "nova-commit", "", "Gitea: commit of nova to build (default: the commit this nova was built from)")
		fs.StringVar(&cfg.Init.NovaReleases, "nova-releases", "", "Gitea: where nova's releases are downloaded from, a mirror's address (default: "+novaReleases+")")
		fs.BoolVar(&cfg.Init.Fanout, "fanout", false, "write one fan-out workflow for every contract under --dir instead (no contract, no approvers): the pull request's contracts run in at most --max-jobs jobs, reported in one summary per environment past 10 (docs/monorepo.md)")
		fs.IntVar(&cfg.MaxJobs, "max-jobs", 0, "with --fanout, at most this many jobs (default: 256 on GitHub; 8 on Gitea, where they are fixed jobs that each start whatever the change)")
	case "pin":
		fs.StringVar(&cfg.Dir, "dir", ".", "a directory of the repository whose workflows are pinned")
		fs.StringVar(&cfg.Pin.Source, "source", novaSource, "git remote the tags are resolved at")
	case "verify":
		fs.StringVar(&cfg.Verify.Contract, "contract", "", "check only this contract's events (commits are always all checked)")
		fs.StringVar(&cfg.Verify.Since, "since", "", "check only what came after this head (a full commit hash the witness lists, verified before)")
	case "approve", "reject":
		fs.StringVar(&cfg.Actor, "as", "", "who decides: a member of the environment's approver group (default: $USER)")
		fs.StringVar(&cfg.Approve.Digest, "digest", "", "a prefix of the plan digest decided on (default: the newest plan of the environment)")
		fs.StringVar(&cfg.Base, "base", getenv("NOVA_BASE"), "trusted base commit or ref the approver config is read from (default: the default branch)")
		if cmd == "reject" {
			fs.StringVar(&cfg.Approve.Reason, "reason", "", "why the plan is rejected (required)")
		}
	case "unlock":
		cfg.unlockFlags(fs, f)
	case "break-glass":
		cfg.breakGlassFlags(fs, f, getenv)
	case "resolve":
		fs.StringVar(&f.branch, "branch", "", "evidence branch (default: $NOVA_EVIDENCE_BRANCH or main)")
		fs.StringVar(&cfg.Resolve.Contract, "contract", "", "contract id (required)")
		fs.StringVar(&f.resolveEnv, "env", "", "environment of the indeterminate apply (required)")
		fs.StringVar(&cfg.Resolve.Outcome, "outcome", "", "what the operator found: applied or not-applied (required)")
		fs.StringVar(&cfg.Resolve.Note, "note", "", "how it was established (required)")
		fs.StringVar(&cfg.Actor, "as", "", "who resolves (default: $GITHUB_ACTOR or $USER)")
	}
	return f
}

// complete checks the flags and fills in what derives from them and the
// environment.
func (cfg *Config) complete(f *rawFlags, env Env) error {
	getenv := env.Getenv
	var err error
	if cfg.EnvOverride, err = parseEnvironment("--env", f.env); err != nil {
		return err
	}
	if e := cfg.EngineOverride; e != "" && !slices.Contains(runner.Engines, e) {
		return runner.Errorf(runner.ConfigInvalid, "--engine %q: want %s", e, strings.Join(runner.Engines, " or "))
	}
	cfg.StatePassphrase = getenv("NOVA_STATE_PASSPHRASE")
	switch cfg.Command {
	case "policy":
		if _, err := report.ParseFormat(cfg.Output); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "--output: %w", err)
		}
	case "query", "export", "report":
		if err := cfg.checkAudit(); err != nil {
			return err
		}
	default:
		if cfg.Output != "text" && cfg.Output != "json" {
			return runner.Errorf(runner.ConfigInvalid, "--output %q: want text or json", cfg.Output)
		}
	}
	if cfg.Select.Job != 0 {
		if err := cfg.Select.pickJob(cfg.SelectionFile); err != nil {
			return err
		}
	}
	if err := cfg.Select.check(cfg.Command); err != nil {
		return err
	}
	switch {
	case cfg.Command != "summary":
	case cfg.FromStatuses && (cfg.ResultsFrom != "" || cfg.SelectionFile == ""):
		return runner.Errorf(runner.ConfigInvalid, "nova summary --statuses reads the results from the commit's statuses for the contracts of --selection: give --selection, and no --from")
	case !cfg.FromStatuses && cfg.ResultsFrom == "":
		return runner.Errorf(runner.ConfigInvalid, "nova summary: --from names the directory of the fan-out's results files (or --statuses, with --selection, reads the commit's statuses)")
	}
	if cfg.ResultsFile != "" && !cfg.Select.Many() {
		return runner.Errorf(runner.ConfigInvalid, "--results writes the results of the contracts --all, --changed or --shard select: give one")
	}
	if cfg.ResultsFile != "" {
		if cfg.ResultsFile, err = filepath.Abs(cfg.ResultsFile); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "--results: %w", err)
		}
	}
	if cfg.Command == "matrix" && cfg.MaxJobs < 1 {
		return runner.Errorf(runner.ConfigInvalid, "--max-jobs %d: want at least 1", cfg.MaxJobs)
	}
	if cfg.Destroy && cfg.Select.Many() {
		// One command must not take every contract away: --changed
		// already destroys the ones a change deletes, and only those.
		return runner.Errorf(runner.ConfigInvalid, "--destroy destroys the one contract --dir and --contract name; with --all or --changed it would take every selected contract away (--changed alone destroys the contracts the change deletes)")
	}
	if cfg.UntilMerge && cfg.Merged {
		return runner.Errorf(runner.ConfigInvalid, "--until-merge is the pull request's run and --merged the merged commit's: give one")
	}
	if cfg.MergeQueue && (cfg.UntilMerge || cfg.Merged || cfg.Destroy || cfg.Select.Many()) {
		return runner.Errorf(runner.ConfigInvalid, "--merge-queue checks one contract's queued commit: not with --until-merge, --merged, --destroy, --all or --changed")
	}
	if cfg.MergeQueue {
		// It records nothing and holds no key: check mode's overlay
		// keeps its events in memory.
		cfg.Check = true
	}
	if (cfg.UntilMerge || cfg.Merged) && cfg.Destroy {
		// A destroy is planned and applied through the gate as it is;
		// holding it for a merge is not built.
		return runner.Errorf(runner.ConfigInvalid, "--destroy runs through the gate on its own: not with --until-merge or --merged")
	}
	if slices.Contains(contractCommands, cfg.Command) || cfg.Command == "matrix" || cfg.Command == "init" || cfg.Command == "pin" {
		if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "--dir: %w", err)
		}
	}
	// Terraform runs in the rendered root module, not here: a bundle named
	// relative to the working directory (as the plan job's bundle-dir
	// output is, to the workspace) would be looked for there.
	if cfg.Bundle != "" {
		if cfg.Bundle, err = filepath.Abs(cfg.Bundle); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "--bundle: %w", err)
		}
	}
	if cfg.ApproversPath != "" && !filepath.IsLocal(cfg.ApproversPath) {
		return runner.Errorf(runner.ConfigInvalid, "--approvers %q: want a path inside --dir", cfg.ApproversPath)
	}
	cfg.BackendConfig = f.backendConfig
	if cfg.LockTimeout < 0 || cfg.TerraformTimeout < 0 {
		return runner.Errorf(runner.ConfigInvalid, "--lock-timeout and --terraform-timeout may not be negative")
	}
	cfg.Verify.KeyFiles, cfg.Verify.CommitKeyFiles = f.keyFiles, f.commitKeys
	if cfg.Actor == "" {
		cfg.Actor = firstNonEmpty(getenv("GITHUB_ACTOR"), getenv("USER"), "unknown")
	}
	cfg.InfracostKey = getenv("INFRACOST_API_KEY")
	cfg.OutputFile, cfg.SummaryFile, cfg.WorkDir = getenv("GITHUB_OUTPUT"), getenv("GITHUB_STEP_SUMMARY"), getenv("PWD")
	cfg.Workspace = getenv("GITHUB_WORKSPACE")
	if cfg.WorkDir == "" {
		// Docker does not set PWD in a container action.
		cfg.WorkDir, _ = os.Getwd()
	}
	cfg.Source = "urn:nova:local"
	if server, repo, runID := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID"); server != "" && repo != "" && runID != "" {
		cfg.Source = server + "/" + repo + "/actions/runs/" + runID
	}
	cfg.ForgeRun = getenv("GITHUB_RUN_ID")
	if cfg.ForgeAPI, err = readForgeConfig(cfg.Forge, getenv); err != nil {
		return err
	}
	if cfg.Base == "" {
		cfg.Base = cfg.ForgeAPI.BaseSHA
	}
	if slices.Contains(evidenceCommands, cfg.Command) {
		if cfg.Evidence, err = readEvidenceConfig(f.evidenceRepo, f.branch, getenv); err != nil {
			return err
		}
		if cfg.MergeQueue && cfg.Forge != NoForge && cfg.Evidence.Local {
			// A job's own empty repository holds no approval: every
			// queue entry would pass, having compared nothing.
			return runner.Errorf(runner.ConfigInvalid, "--merge-queue compares the queue's commit with the approvals in the evidence repository, and no evidence-repo is set (NOVA_EVIDENCE_REPO)")
		}
		if err := cfg.keylessFlags(f, env.ForgeRetry); err != nil {
			return err
		}
	}
	if cfg.Command == "init" {
		switch cfg.Init.Forge = Forge(f.forge); cfg.Init.Forge {
		case GitHub, Gitea:
		default:
			return runner.Errorf(runner.ConfigInvalid, "--forge %q: want github or gitea", f.forge)
		}
		if cfg.Init.Keyless && cfg.Init.Forge != GitHub {
			return runner.Errorf(runner.ConfigInvalid, "--keyless: only GitHub hands jobs the OIDC token keyless signing needs; on Gitea events are signed with a key")
		}
		if cfg.Init.ApplyOn != "pr" && cfg.Init.ApplyOn != templates.ApplyOnMerge {
			return runner.Errorf(runner.ConfigInvalid, "--apply-on %q: want pr or merge", cfg.Init.ApplyOn)
		}
		switch {
		case !cfg.Init.Fanout && cfg.MaxJobs != 0:
			return runner.Errorf(runner.ConfigInvalid, "--max-jobs bounds the jobs of --fanout: give --fanout")
		case cfg.Init.Fanout && (cfg.Init.Keyless || cfg.Init.ApplyOn != "pr"):
			return runner.Errorf(runner.ConfigInvalid, "--fanout: the fan-out signs with a key and applies on the pull request; --keyless and --apply-on merge are for one contract's workflows")
		case cfg.Init.Fanout && cfg.MaxJobs == 0 && cfg.Init.Forge == Gitea:
			cfg.MaxJobs = defaultGiteaFanoutJobs
		case cfg.Init.Fanout && cfg.MaxJobs == 0:
			cfg.MaxJobs = DefaultMaxJobs
		}
		if cfg.Init.Fanout && (cfg.MaxJobs < 1 || cfg.MaxJobs > DefaultMaxJobs) {
			return runner.Errorf(runner.ConfigInvalid, "--max-jobs %d: want 1 to %d", cfg.MaxJobs, DefaultMaxJobs)
		}
	}
	if cfg.Command == "resolve" {
		if err := cfg.checkResolve(f.resolveEnv); err != nil {
			return err
		}
	}
	if cfg.Command == "unlock" {
		if err := cfg.checkUnlock(); err != nil {
			return err
		}
	}
	if cfg.Command == "break-glass" {
		if err := cfg.checkBreakGlass(); err != nil {
			return err
		}
	}
	if cfg.Command == "rollback" {
		if err := cfg.checkRollback(); err != nil {
			return err
		}
	}
	if slices.Contains(approveCommands, cfg.Command) {
		switch {
		case cfg.EnvOverride == "" || cfg.EnvOverride.Autonomous():
			return runner.Errorf(runner.ConfigInvalid, "--env is required: the environment approved (qa, prod or dr)")
		case cfg.Command == "reject" && strings.TrimSpace(cfg.Approve.Reason) == "":
			return runner.Errorf(runner.ConfigInvalid, "--reason is required: say why the plan is rejected")
		}
		if cfg.Commit, err = local.HeadCommit(cfg.Dir); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "reading the commit of %s: %w", cfg.Dir, err)
		}
	}
	if !slices.Contains(pipelineCommands, cfg.Command) {
		return nil
	}
	if cfg.StateDir == "" {
		if cfg.StateDir, err = local.StateDir(getenv); err != nil {
			return runner.Errorf(runner.ConfigInvalid, "%w", err)
		}
	}
	// Terraform would only fail much later, mid-init, with a message
	// about a file the user never named.
	if err := os.MkdirAll(cfg.StateDir, 0o700); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "--state-dir %s cannot hold state: %w", cfg.StateDir, err)
	}
	head, err := local.HeadCommit(cfg.Dir)
	if err != nil {
		return runner.Errorf(runner.ConfigInvalid, "reading the commit of %s: %w", cfg.Dir, err)
	}
	eventSHA, err := cfg.eventCommit(getenv("GITHUB_SHA"), head)
	if err != nil {
		return err
	}
	if cfg.Commit == "" {
		cfg.Commit = firstNonEmpty(getenv("NOVA_COMMIT"), eventSHA, head)
	}
	if err := checkCommit(cfg.Dir, cfg.Commit, head, []string{eventSHA, cfg.ForgeAPI.HeadSHA}); err != nil {
		return err
	}
	cfg.TerraformEnv = map[string]string{}
	for _, kv := range env.Environ {
		if k, v, ok := strings.Cut(kv, "="); ok && !novaSecret(k) {
			cfg.TerraformEnv[k] = v
		}
	}
	return nil
}

// keylessFlags applies verify's --signers, --fulcio-root,
// --rekor-public-key and --require-tlog, and says
// where .nova/signers.yml is read: in a forge's job from the trusted base
// through the forge's API (from the checkout's git history without a
// token), as the approver config is; elsewhere from --signers, else the
// checkout's trusted base. retry is how the forge's API is retried.
func (cfg *Config) keylessFlags(f *rawFlags, retry forgehttp.Policy) error {
	k := &cfg.Evidence.Keyless
	if f.signers != "" {
		k.SignersFile = f.signers
	}
	if f.fulcioRoot != "" {
		b, err := os.ReadFile(f.fulcioRoot)
		if err != nil {
			return runner.Errorf(runner.SignersConfigInvalid, "--fulcio-root: %w", err)
		}
		k.Root = string(b)
	}
	if f.rekorKey != "" {
		b, err := os.ReadFile(f.rekorKey)
		if err != nil {
			return runner.Errorf(runner.ConfigInvalid, "--rekor-public-key: %w", err)
		}
		k.RekorKey = string(b)
	}
	if f.requireLog {
		k.RequireLog = true
	}
	if cfg.Forge != NoForge {
		// Whoever edits a workflow decides what its steps check out and
		// pass: a file or branch named there could be the change's own,
		// naming the change's workflow. Refused, not ignored, so a
		// workflow relying on it learns it does not count.
		if k.SignersFile != "" {
			return runner.Errorf(runner.SignersConfigInvalid, "signers / NOVA_SIGNERS_FILE / --signers: in a forge's job %s is read from the default branch through the forge's API, never from a file the job names (the file is for verifying outside a forge); remove it", keyless.SignersFile)
		}
		if k.DefaultRef != "" {
			return runner.Errorf(runner.SignersConfigInvalid, "default-branch / NOVA_DEFAULT_BRANCH: in a forge's job the identities of %s default to the ref of the branch it is read from, never one the job names; remove it", keyless.SignersFile)
		}
		if fc := cfg.ForgeAPI; fc.Token != "" && fc.Owner != "" {
			fc.Retry = retry
			k.Forge = &forgeSigners{forge: cfg.Forge, api: fc, dir: cfg.Dir}
			return nil
		}
	}
	trusted := cfg.localApprovers()
	k.Trusted = &trusted
	return nil
}

// localApprovers reads the approver config from the trusted base in the
// checkout's git history: --base, else the default branch. On a forge
// the pull request's base is never it: a pull request may be opened
// against a branch its author controls. (With a token, the forge's own
// trusted base is read instead: forgeApprovers.)
func (cfg Config) localApprovers() local.TrustedApprovers {
	base := cfg.Base
	if cfg.Forge != NoForge && base == cfg.ForgeAPI.BaseSHA {
		base = ""
	}
	return local.TrustedApprovers{Dir: cfg.Dir, Base: base, Path: cfg.ApproversPath}
}

func (cfg *Config) checkResolve(envName string) error {
	var err error
	if cfg.Resolve.Env, err = parseEnvironment("--env", envName); err != nil {
		return err
	}
	switch {
	case cfg.Resolve.Contract == "":
		return runner.Errorf(runner.ConfigInvalid, "--contract is required")
	case cfg.Resolve.Env == "":
		return runner.Errorf(runner.ConfigInvalid, "--env is required: want dev, qa, prod or dr")
	case cfg.Resolve.Outcome != runner.ResolvedApplied && cfg.Resolve.Outcome != runner.ResolvedNotApplied:
		return runner.Errorf(runner.ConfigInvalid, "--outcome %q: want applied or not-applied", cfg.Resolve.Outcome)
	case cfg.Resolve.Note == "":
		return runner.Errorf(runner.ConfigInvalid, "--note is required: say how the outcome was established")
	}
	return nil
}

// eventCommit is the commit the workflow's event says the run is about
// (GITHUB_SHA), when it says one. A workflow started from the default
// branch's copy (pull_request_target, issue_comment, workflow_run) gets
// the default branch's head there, which is not the change: the change is
// the pull request's head, which the workflow must have checked out. A
// checkout of anything else would be planned, reported and approved as
// the pull request.
func (cfg Config) eventCommit(sha, head string) (string, error) {
	fc := cfg.ForgeAPI
	if !slices.Contains(defaultBranchEvents, fc.EventName) {
		return sha, nil
	}
	if cfg.Merged {
		// The run is about the commit that merged the pull request, not
		// its head, and it must be what is checked out.
		if fc.MergedSHA == "" {
			return "", runner.Errorf(runner.CommitMismatch, "--merged runs the commit that merged a pull request, and the %s event names no merged pull request (run it on pull_request_target closed, when merged)", fc.EventName)
		}
		if head != "" && !strings.EqualFold(head, fc.MergedSHA) {
			return "", runner.Errorf(runner.CommitMismatch, "pull request #%d was merged as %s, but %s has %s checked out: check out its merge_commit_sha", fc.PullRequest, fc.MergedSHA, cfg.Dir, head)
		}
		return fc.MergedSHA, nil
	}
	if head != "" && fc.HeadSHA != "" && !strings.EqualFold(head, fc.HeadSHA) {
		return "", runner.Errorf(runner.CommitMismatch, "the %s event is about pull request #%d, whose head is %s, but %s has %s checked out: check out the pull request's head (actions/checkout with ref: its head sha)", fc.EventName, fc.PullRequest, fc.HeadSHA, cfg.Dir, head)
	}
	return "", nil
}

// checkCommit refuses to bind a plan to a commit that is not what --dir
// holds: given as it is, an old bundle could be applied at a newer HEAD
// whose contract bytes happen to be equal. In a git checkout the commit
// must be HEAD, or an ancestor of it that the forge's event names (a pull
// request's head under the merge commit a workflow checks out). Outside a
// git checkout there is nothing to compare with.
func checkCommit(dir, commit, head string, named []string) error {
	if head == "" || commit == head {
		return nil
	}
	if slices.Contains(named, commit) {
		if ok, err := local.IsAncestor(dir, commit); err == nil && ok {
			return nil
		}
	}
	return runner.Errorf(runner.CommitMismatch, "commit %s is not what %s has checked out (HEAD is %s); plan and apply the commit that is checked out", commit, dir, head)
}

// displayName is the command as the user typed it.
func (cfg Config) displayName() string {
	if slices.Contains([]string{"verify", "resolve", "query", "export"}, cfg.Command) {
		return "evidence " + cfg.Command
	}
	if cfg.Command == "break-glass" {
		return "break-glass " + cfg.BreakGlass.Action
	}
	return cfg.Command
}

// novaSecret reports whether an environment variable belongs to Nova
// itself — its signing keys, their passwords, the evidence token. Terraform
// runs module code (provisioners, external data sources) and needs the
// cloud's credentials, never the keys that make Nova's evidence trustworthy
// nor the action's inputs, which carry them in action mode.
func novaSecret(name string) bool {
	return strings.HasPrefix(name, "NOVA_") || strings.HasPrefix(name, "COSIGN_") || strings.HasPrefix(name, "INPUT_")
}

// parseEnvironment reads an environment flag; empty means unset.
func parseEnvironment(flagName, name string) (runner.Environment, error) {
	env := runner.Environment(name)
	if name != "" && !env.Valid() {
		return "", runner.Errorf(runner.ConfigInvalid, "%s %q: want dev, qa, prod or dr", flagName, name)
	}
	return env, nil
}

// enginePaths finds the engines' binaries only for commands that run
// them, so `nova validate` works on a machine without either. A binary
// named by flag must exist; one looked for on PATH may be missing, as a
// machine needs only the engine its contracts name: the engine refuses a
// contract whose engine has no binary, naming it.
func (cfg Config) enginePaths() (terraform, tofu string, err error) {
	find := func(flagName, given, program string) (string, error) {
		if given == "" {
			p, _ := exec.LookPath(program)
			return p, nil
		}
		p, err := exec.LookPath(given)
		if err != nil {
			return "", runner.Errorf(runner.TerraformNotFound, "%s %s: %w", flagName, given, err)
		}
		return p, nil
	}
	if terraform, err = find("--terraform", cfg.TerraformPath, "terraform"); err != nil {
		return "", "", err
	}
	if tofu, err = find("--tofu", cfg.TofuPath, "tofu"); err != nil {
		return "", "", err
	}
	return terraform, tofu, nil
}

// reorderArgs moves positional arguments after the flags, which flag stops
// at.
func reorderArgs(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := strings.TrimLeft(a, "-")
			if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && !strings.Contains(name, "=") && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		positional = append(positional, a)
	}
	return append(flags, positional...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

func firstNonEmpty(vals ...string) string {
	for _, v := range vals {
		if v != "" {
			return v
		}
	}
	return ""
}
