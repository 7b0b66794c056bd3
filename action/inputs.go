package main

import (
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// actionInput is one input of the container action. The table below is
// the one source of action.yml's inputs and docs/action.md (tests fail
// when either drifts), and of how each input reaches nova: as a flag of
// the command, or, for secrets and settings read from the environment, as
// the variable it stands for.
type actionInput struct {
	Name        string
	Default     string
	Description string
	// Flag is the command-line flag the input becomes, for the commands
	// that have it; Lines makes one flag per non-empty line.
	Flag  string
	Lines bool
	// Bool inputs are true or false and become --flag=true|false, as a
	// boolean flag takes no separate value.
	Bool bool
	// Choices are the values of an input that names its flag: value v
	// becomes --v.
	Choices []string
	// Env is the variable the input stands in for when the input is set.
	Env string
	// Secret inputs are masked before anything is printed and never
	// become command-line arguments.
	Secret bool
}

// actionCommands are the values of the command input.
var actionCommands = []string{"validate", "policy", "explain", "plan", "apply", "run", "drift", "matrix", "summary", "approve", "reject", "rollback", "break-glass", "verify"}

// actionBreakGlass are the values of the break-glass input and the
// command line each becomes: in a job the actor is always the forge's
// (the dispatch's sender, the comment's poster), never an input.
var actionBreakGlass = map[string][]string{
	runner.BreakGlassRequestAction: {"break-glass", runner.BreakGlassRequestAction, "--from-event"},
	breakGlassCommentAction:        {"break-glass", breakGlassCommentAction},
}

var actionInputs = []actionInput{
	{Name: "command", Default: "run", Description: "What nova does: " + strings.Join(actionCommands, ", ") + " (verify is `nova evidence verify`)."},
	{Name: "dir", Default: ".", Flag: "--dir", Description: "The consumer checkout, relative to the workspace."},
	{Name: "contract", Default: ".nova/contract.yml", Flag: "--contract", Description: "The contract file, relative to dir."},
	{Name: "environment", Flag: "--env", Description: "Override the contract's environment (dev, qa, prod or dr); it may only raise the guard."},
	{Name: "bundle", Flag: "--bundle", Description: "For apply: the plan bundle directory the plan job uploaded (default: the newest for the contract)."},
	{Name: "digest", Flag: "--digest", Description: "For apply: refuse a bundle whose plan digest is not this one (the plan job's plan-digest output). For approve and reject: a prefix of the plan digest decided on."},
	{Name: "reason", Flag: "--reason", Description: "For reject: why the plan is rejected. For break-glass request: what the emergency is."},
	{Name: "break-glass", Description: "For command break-glass (docs/break-glass.md): request asks for a grant for environment, as the user who dispatched the workflow (the event's sender); comment acts on the `/nova break-glass approve|revoke <request>` comment the issue_comment event delivered, as its poster."},
	{Name: "to", Flag: "--to", Description: "For rollback: the change to return the environment to (its id, or its first hex digits); one the environment applied."},
	{Name: "check", Default: "false", Flag: "--check", Bool: true, Description: "For apply, run, approve, reject and rollback: say what would happen and what the gate would decide, change and record nothing; the exit code is the real command's."},
	{Name: "backend", Flag: "--backend", Description: "Terraform backend type, overriding the contract's."},
	{Name: "backend-config", Flag: "--backend-config", Lines: true, Description: "Terraform -backend-config entries, one key=value per line."},
	{Name: "base", Flag: "--base", Description: "The trusted base commit or ref the approver config is read from (default: the pull request's base, else the default branch)."},
	{Name: "lock-timeout", Flag: "--lock-timeout", Description: "How long to wait for another run of the same contract and environment, such as 5m (default: fail at once with STATE_LOCKED)."},
	{Name: "terraform-timeout", Flag: "--terraform-timeout", Description: "Interrupt a terraform command that runs longer, such as 30m (default 2h); a timed-out apply is recorded as an unknown outcome."},
	{Name: "operation", Choices: []string{"destroy"}, Description: "For plan and run: destroy plans the destroy of everything the contract deployed in the environment, through the gate (docs/destroy.md). Empty plans the contract's changes."},
	{Name: "merge", Choices: []string{"until-merge", "merged", "merge-queue"}, Description: "For plan, apply and run, when environments apply after merge (docs/apply-after-merge.md): until-merge on the pull request (guarded environments plan and wait for approval, nothing is applied there), merged on the push to the default branch (only the plan approved on the pull request is applied), merge-queue (run only) on a merge_group run: fails with MERGE_PLAN_STALE when the queue's commit is not the change approved on the pull request, with no secrets, planning and recording nothing. Empty applies before merge."},
	{Name: "select", Choices: []string{"all", "changed"}, Description: "Run many contracts under dir instead of one: all, or changed (those the pull request's change touches). Empty runs the one contract."},
	{Name: "parallel", Flag: "--parallel", Description: "With select, how many contracts run at once (default: the runner's CPUs)."},
	{Name: "shard", Flag: "--shard", Description: "Run the contracts of one job of a sharded fan-out, as many as select runs: the `shard` field of the job's nova matrix entry, a JSON list of contracts relative to dir (docs/monorepo.md)."},
	{Name: "max-jobs", Default: fmt.Sprint(DefaultMaxJobs), Flag: "--max-jobs", Description: "For matrix: at most this many jobs (GitHub refuses a matrix of more than 256). Past it, the contracts are packed into this many shards, balanced by the modules they resolve to, each job running its shard."},
	{Name: "head", Flag: "--head", Description: "With select changed, the head of the change (default: the pull request's head)."},
	{Name: "summary", Default: "false", Flag: "--summary", Bool: true, Description: "With select: report the contracts in one summary comment per environment however few they are, each contract's report in a check run on GitHub; past 10 contracts in one job it is the default. Set it on the jobs of a fan-out whose change touches more than 10 contracts (docs/forge-limits.md)."},
	{Name: "results-file", Flag: "--results", Description: "With select, in a job of a fan-out reported in one summary (the matrix entry's `summary`): write the contracts' results to this JSON file for the fan-out's summary job and post no comment, only commit statuses and check runs (docs/monorepo.md)."},
	{Name: "from", Flag: "--from", Description: "For summary: the directory of the results files the fan-out's jobs wrote (results-file), at any depth; one summary comment per pull request and environment is posted from them."},
	{Name: "selection-file", Flag: "--selection", Description: "For matrix: write the matrix to this file too, for the fan-out's summary job. For summary: that file; each selected contract with no result (its job failed before writing one, or did not run) is a row saying so, and the summary fails with FANOUT_RESULT_MISSING."},
	{Name: "approvers", Default: runner.ApproversFile, Flag: "--approvers", Description: "The approver config, relative to dir, read from the trusted base."},
	{Name: "output", Default: "text", Flag: "--output", Description: "Report format on stdout: text or json (policy also sarif and junit)."},
	{Name: "report-file", Flag: "--out", Description: "For policy: write the report to this file, relative to the workspace (for a SARIF upload)."},
	{Name: "evidence-repo", Flag: "--evidence-repo", Description: "The evidence repository: a path or an https URL (default: a local bare repo inside the runner, lost with it)."},
	{Name: "evidence-branch", Env: "NOVA_EVIDENCE_BRANCH", Description: "The branch of the evidence repository (default: main)."},
	{Name: "evidence-token", Env: "NOVA_EVIDENCE_TOKEN", Secret: true, Description: "Token that pushes to an https evidence-repo."},
	{Name: "signing-key", Env: "NOVA_SIGNING_KEY", Secret: true, Description: "PEM (cosign) private key that signs events."},
	{Name: "signing-key-password", Env: "NOVA_SIGNING_KEY_PASSWORD", Secret: true, Description: "Password of signing-key."},
	{Name: "keyless", Env: "NOVA_KEYLESS", Description: "true: sign events and attestations with a short-lived Fulcio certificate for the job's OIDC token (the job needs `id-token: write`) instead of signing-key; `.nova/signers.yml` on the default branch, read through the forge's API, names the workflows whose signatures count."},
	{Name: "fulcio-url", Env: "NOVA_FULCIO_URL", Description: "Keyless: the Fulcio that certifies the job's token (default: Sigstore's public https://fulcio.sigstore.dev)."},
	{Name: "fulcio-root", Env: "NOVA_FULCIO_ROOT", Description: "Keyless: the PEM root (and intermediates) of that Fulcio, which keyless signatures must chain to."},
	{Name: "rekor-url", Env: "NOVA_REKOR_URL", Description: "Keyless: upload every event signature to this Rekor transparency log (e.g. Sigstore's public https://rekor.sigstore.dev) and keep its entry in the event's bundle. Off when empty (the default): a private forge's jobs often cannot reach a public log, and a public log publishes the workflow's identity."},
	{Name: "rekor-public-key", Env: "NOVA_REKOR_PUBLIC_KEY", Description: "Keyless: the PEM public key of that Rekor; log entries in keyless bundles are checked with it, and the upload refuses answers it did not sign."},
	{Name: "commit-key", Env: "NOVA_COMMIT_KEY", Secret: true, Description: "Armored OpenPGP private key that signs evidence commits."},
	{Name: "commit-key-passphrase", Env: "NOVA_COMMIT_KEY_PASSPHRASE", Secret: true, Description: "Passphrase of commit-key."},
	{Name: "evidence-public-key", Env: "NOVA_EVIDENCE_PUBLIC_KEY", Description: "For verify: the public key (cosign.pub format) events must be signed with."},
	{Name: "commit-public-key", Env: "NOVA_COMMIT_PUBLIC_KEY", Description: "For verify: the armored OpenPGP public key evidence commits must be signed with."},
	{Name: "gitea-token", Env: "NOVA_FORGE_TOKEN", Secret: true, Description: "Token for Gitea's API, when running on Gitea (wins over github-token)."},
	{Name: "github-token", Default: "${{ github.token }}", Env: "NOVA_FORGE_TOKEN", Secret: true, Description: "Token for GitHub's API: reads reviews and teams, writes the pull request comment, commit status and deployment. On Gitea the runner fills it with Gitea's token."},
	{Name: "infracost-api-key", Env: "INFRACOST_API_KEY", Secret: true, Description: "Lets the nfr stage estimate cost with infracost."},
	{Name: "state-passphrase", Env: "NOVA_STATE_PASSPHRASE", Secret: true, Description: "Passphrase (16 characters or more) OpenTofu derives the state's key from, for a contract whose backend encrypts (backend.encryption); the plan and the apply job need the same one."},
}

// actionOutputs are the outputs every command sets, documented in
// action.yml and docs/action.md.
var actionOutputDocs = []struct{ Name, Description string }{
	{"verdict", "pass, fail, error or awaiting_approval."},
	{"exit-code", "0 pass, 1 verdict fail, 2 tool or configuration error, 3 awaiting approval."},
	{"reason", "The reason code of the stage that stopped the run (docs/reason-codes.md)."},
	{"run-id", "This run's id; its events are in .nova/runs/<run-id>/events.jsonl."},
	{"plan-digest", "sha256 binding the plan to its engine and version, the contract and commit; approvals name it."},
	{"confidence", "The last confidence score (three decimals), when one was computed."},
	{"bundle-dir", "The plan bundle to hand to the apply job, relative to the workspace."},
	{"receipt", "When the environment applied this change before and nothing since, the id of that apply's event: nothing was planned, and nothing needs approving or applying."},
	{"contracts", "With select, how many contracts ran (verdict and exit-code are then the worst of them)."},
	{"matrix", `For command matrix, the JSON matrix ({"include":[{"name","shard","dir","contract","id","environment","operation","summary"}]}) for strategy.matrix: one entry per contract, or per shard past max-jobs (docs/monorepo.md).`},
}

// inputVariable is the variable the runner passes an input in.
func inputVariable(name string) string {
	return "INPUT_" + strings.ToUpper(strings.ReplaceAll(name, " ", "_"))
}

// secretInputVariables are the variables of the secret inputs, for the
// masks.
func secretInputVariables() []string {
	var out []string
	for _, in := range actionInputs {
		if in.Secret {
			out = append(out, inputVariable(in.Name))
		}
	}
	return out
}

// actionGetenv lays the inputs that stand for variables over the
// environment: an input that is set wins, as a value given in the workflow
// is the more specific one. Of two inputs for one variable the first in
// the table wins: gitea-token before github-token, whose default is always
// set.
func actionGetenv(getenv func(string) string) func(string) string {
	return func(key string) string {
		for _, in := range actionInputs {
			if in.Env == key {
				if v := getenv(inputVariable(in.Name)); strings.TrimSpace(v) != "" {
					return v
				}
			}
		}
		return getenv(key)
	}
}

// actionCommand is the command line the command input names.
func actionCommand(getenv func(string) string) ([]string, error) {
	cmd := strings.TrimSpace(getenv(inputVariable("command")))
	bg := strings.TrimSpace(getenv(inputVariable("break-glass")))
	switch {
	case cmd == "break-glass":
		line, ok := actionBreakGlass[bg]
		if !ok {
			return nil, runner.Errorf(runner.ConfigInvalid, "input break-glass %q: command break-glass wants break-glass: request or comment", bg)
		}
		return slices.Clone(line), nil
	case bg != "":
		return nil, runner.Errorf(runner.ConfigInvalid, "input break-glass does not apply to command %s: set command: break-glass", firstNonEmpty(cmd, "run"))
	case cmd == "":
		return []string{"run"}, nil
	case cmd == "verify":
		return []string{"evidence", "verify"}, nil
	case slices.Contains(actionCommands, cmd):
		return []string{cmd}, nil
	}
	return nil, runner.Errorf(runner.ConfigInvalid, "input command %q: want one of %s", cmd, strings.Join(actionCommands, ", "))
}

// actionFlags turns the inputs into flags of the command whose flags fs
// holds, so action mode and CLI mode share one parser and one set of
// defaults. An input the command has no flag for is left out while it has
// its default (the runner passes every input, defaults included) and is
// an error when a workflow set it, as silently ignoring it would run
// something else than the workflow says.
func actionFlags(fs *flag.FlagSet, command string, getenv func(string) string) ([]string, error) {
	var args []string
	for _, in := range actionInputs {
		v := strings.TrimSpace(getenv(inputVariable(in.Name)))
		if len(in.Choices) > 0 && v != "" {
			if !slices.Contains(in.Choices, v) {
				return nil, runner.Errorf(runner.ConfigInvalid, "input %s %q: want one of %s", in.Name, v, strings.Join(in.Choices, ", "))
			}
			if fs.Lookup(v) == nil {
				return nil, runner.Errorf(runner.ConfigInvalid, "input %s does not apply to command %s", in.Name, command)
			}
			args = append(args, "--"+v)
			continue
		}
		if in.Flag == "" {
			continue
		}
		if v == "" || (v == in.Default && fs.Lookup(in.Flag[2:]) == nil) {
			continue
		}
		if fs.Lookup(in.Flag[2:]) == nil {
			return nil, runner.Errorf(runner.ConfigInvalid, "input %s does not apply to command %s", in.Name, command)
		}
		if in.Bool {
			if v != "true" && v != "false" {
				return nil, runner.Errorf(runner.ConfigInvalid, "input %s %q: want true or false", in.Name, v)
			}
			args = append(args, in.Flag+"="+v)
			continue
		}
		if !in.Lines {
			args = append(args, in.Flag, v)
			continue
		}
		for _, line := range strings.Split(v, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				args = append(args, in.Flag, line)
			}
		}
	}
	return args, nil
}

// actionYAMLInputs renders the inputs section of action.yml.
func actionYAMLInputs() string {
	var b strings.Builder
	b.WriteString("inputs:\n")
	for _, in := range actionInputs {
		fmt.Fprintf(&b, "  %s:\n    description: %s\n    default: %s\n", in.Name, yamlString(in.Description), yamlString(in.Default))
	}
	b.WriteString("\noutputs:\n")
	for _, out := range actionOutputDocs {
		fmt.Fprintf(&b, "  %s:\n    description: %s\n", out.Name, yamlString(out.Description))
	}
	return b.String()
}

// yamlString quotes s as a YAML double-quoted scalar, which JSON's string
// syntax is a subset of.
func yamlString(s string) string {
	return fmt.Sprintf("%q", s)
}

// actionMarkdown renders docs/action.md.
func actionMarkdown() string {
	var b strings.Builder
	b.WriteString("# The Nova action\n\n")
	b.WriteString("Generated from `action/inputs.go` by `make docs`; a test fails when it is stale.\n\n")
	b.WriteString("```yaml\n- uses: nova-platform/nova@v1\n  with:\n    command: plan\n    dir: infra/app\n```\n\n")
	b.WriteString("The action runs nova's container as GitHub runs container actions: the workspace is the working directory, ")
	b.WriteString("inputs arrive as `INPUT_*`, outputs and the job summary go to the runner's files, and findings become annotations ")
	b.WriteString("on the contract, with paths relative to the repository root. Secret inputs are masked with `::add-mask::` before ")
	b.WriteString("nova prints anything and reach nova as environment variables, never as arguments. ")
	b.WriteString("An input that the command does not use is an error when set to anything but its default.\n\n")
	b.WriteString("A job's home lives as long as the job: without `evidence-repo` the events and the keys made to sign them are lost ")
	b.WriteString("with it (nova says so on stderr), and without a backend in the contract or the `backend` input so is the Terraform state. ")
	b.WriteString("The workflows `nova init` writes pass `evidence-repo` from a repository variable; the backend belongs in the contract (`backend:`).\n\n")
	b.WriteString("One image runs both engines: it carries `terraform` (HashiCorp's static build) and `tofu` (OpenTofu, built static from the Go module proxy), ")
	b.WriteString("and each contract's `engine` picks one, so no workflow chooses an image, a tag or a setup step by engine. ")
	b.WriteString("OpenTofu is what that costs: 115.0 MB of the image's 246.9 MB (131.9 MB without it), 34.1 MB of gzip to pull ")
	b.WriteString("(`docker image inspect --format '{{.Size}}'` of `make image` with and without its `COPY tofu`; `gzip -6` of the binary). ")
	b.WriteString("A second tag would save that for contracts on Terraform, at the price of workflows that read the contract to choose their image before nova reads it. ")
	b.WriteString("The workflows pass `state-passphrase` from the secret `NOVA_STATE_PASSPHRASE`, for contracts whose state OpenTofu encrypts.\n\n")
	b.WriteString("## Inputs\n\n| input | default | secret | becomes | description |\n|---|---|---|---|---|\n")
	for _, in := range actionInputs {
		becomes := "`" + in.Flag + "`"
		if len(in.Choices) > 0 {
			becomes = "`--" + strings.Join(in.Choices, "` or `--") + "`"
		}
		if in.Env != "" {
			becomes = "`$" + in.Env + "`"
		}
		if in.Name == "command" {
			becomes = "the command"
		}
		def := ""
		if in.Default != "" {
			def = "`" + in.Default + "`"
		}
		secret := ""
		if in.Secret {
			secret = "yes"
		}
		fmt.Fprintf(&b, "| `%s` | %s | %s | %s | %s |\n", in.Name, def, secret, becomes, docCell(in.Description))
	}
	b.WriteString("\n## Outputs\n\n| output | description |\n|---|---|\n")
	for _, out := range actionOutputDocs {
		fmt.Fprintf(&b, "| `%s` | %s |\n", out.Name, docCell(out.Description))
	}
	b.WriteString("\n## Exit codes\n\n0 pass, 1 verdict fail, 2 tool or configuration error, 3 awaiting approval: the step fails on anything but 0, ")
	b.WriteString("so a job that may wait for approval (`run` in qa, prod or dr without one) sets `continue-on-error` and reads the `verdict` output.\n")
	return b.String()
}

// docCell keeps one of the descriptions above, which are Nova's own
// Markdown, inside a table cell of docs/action.md. Text from a change goes
// through templates.EscapeMarkdown instead.
func docCell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
