package main

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// helloID is examples/hello's contract id.
const helloContractID = "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90"

// world is what a command may change: the evidence repo's refs, the
// outbox, the Terraform state and the plan bundles. A check must leave
// all of it byte for byte as it was.
func (c *consumer) world() string {
	c.t.Helper()
	paths, err := evidence.DefaultLocalPaths(func(k string) string { return c.env[k] })
	if err != nil {
		c.t.Fatal(err)
	}
	var lines []string
	if repo, err := git.PlainOpen(paths.Repo); err == nil {
		refs, err := repo.References()
		if err != nil {
			c.t.Fatal(err)
		}
		_ = refs.ForEach(func(r *plumbing.Reference) error {
			lines = append(lines, "ref "+r.String())
			return nil
		})
	}
	hashFiles := func(root, what string, keep func(path string) bool) {
		_ = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !keep(path) {
				return nil
			}
			b, err := os.ReadFile(path)
			if err != nil {
				c.t.Fatal(err)
			}
			sum := sha256.Sum256(b)
			lines = append(lines, what+" "+path+" "+hex.EncodeToString(sum[:]))
			return nil
		})
	}
	hashFiles(paths.StateBase, "outbox", func(p string) bool {
		return strings.Contains(p, string(filepath.Separator)+"outbox"+string(filepath.Separator))
	})
	hashFiles(c.stateDir, "state", func(p string) bool {
		return strings.HasSuffix(p, ".tfstate") || strings.HasSuffix(p, ".tfstate.backup")
	})
	runs, _ := os.ReadDir(filepath.Join(c.dir, ".nova", "runs"))
	for _, r := range runs {
		lines = append(lines, "run "+r.Name())
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// TestCheckModeChangesNothing runs every mutating command with --check
// and then for real, on examples/hello with real Terraform: the check
// leaves the evidence repo, the outbox, the state and the bundles as they
// were, exits with the code the real command then exits with, and says
// what the real command then does (the plan it applies, the approval it
// records, the resolution, the release).
func TestCheckModeChangesNothing(t *testing.T) {
	ctx := t.Context()
	terraformtest.Binary(t, runner.EngineTerraform)
	c := &consumer{t: t, dir: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir(), "USER": "dev-author"}}
	if err := os.CopyFS(c.dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	repo := newSignedRepo(t, c.dir)
	repo.commit("hello", ".")
	wrapper, mode := modeTerraform(t, t.TempDir(), "Error: refused")
	c.extra = []string{"--trusted-keys", repo.Keys, "--terraform", wrapper}

	// pipeline runs a pipeline command checked, then for real.
	pipeline := func(want int, args ...string) (check, real runView) {
		t.Helper()
		before := c.world()
		code, check, stderr := c.nova(ctx, append(slices.Clone(args), "--check")...)
		if after := c.world(); after != before {
			t.Fatalf("nova %s --check changed the world:\nbefore:\n%s\nafter:\n%s", strings.Join(args, " "), before, after)
		}
		if code != want || !check.Check || check.EventsFile != "" {
			t.Fatalf("nova %s --check: exit %d (reason %s, check %v, events %q), want %d\n%+v\n%s", strings.Join(args, " "), code, check.Reason, check.Check, check.EventsFile, want, check.Stages, stderr)
		}
		realCode, real, stderr := c.nova(ctx, args...)
		if realCode != code || real.Reason != check.Reason {
			t.Fatalf("nova %s: exit %d reason %s, but its check said exit %d reason %s\n%s", strings.Join(args, " "), realCode, real.Reason, code, check.Reason, stderr)
		}
		return check, real
	}
	// decide runs a command that records a decision, checked, then for
	// real, and returns the check's output.
	run1 := func(args []string) (int, string) {
		if args[0] != "evidence" {
			args = append(args, "--dir", c.dir)
		}
		var stdout, stderr bytes.Buffer
		code := exitCode(run(ctx, Env{Args: args, Getenv: func(k string) string { return c.env[k] }, Stdout: &stdout, Stderr: &stderr}))
		return code, stdout.String() + stderr.String()
	}
	decide := func(want int, args ...string) string {
		t.Helper()
		before := c.world()
		code, out := run1(append(slices.Clone(args), "--check"))
		if after := c.world(); after != before {
			t.Fatalf("nova %s --check changed the world:\nbefore:\n%s\nafter:\n%s", strings.Join(args, " "), before, after)
		}
		if code != want {
			t.Fatalf("nova %s --check: exit %d, want %d\n%s", strings.Join(args, " "), code, want, out)
		}
		if realCode, realOut := run1(args); realCode != code {
			t.Fatalf("nova %s: exit %d, but its check said %d\n%s", strings.Join(args, " "), realCode, code, realOut)
		}
		return out
	}
	applies := func(check, real runView) {
		t.Helper()
		if check.PlanDigest == "" || check.PlanDigest != real.PlanDigest || stage(check, "check").Verdict != runner.Pass || stage(real, "apply").Verdict != runner.Pass {
			t.Errorf("the check said %s %v, the real run applied %s %v", check.PlanDigest, verdicts(check), real.PlanDigest, verdicts(real))
		}
		if !strings.Contains(stage(check, "check").Summary, "would apply plan "+runner.ShortDigest(real.PlanDigest)) {
			t.Errorf("the check says %q", stage(check, "check").Summary)
		}
	}

	applies(pipeline(ExitPass, "run"))
	if check, _ := pipeline(ExitAwaitingApproval, "run", "--env", "qa"); check.Reason != string(runner.ApprovalRequired) {
		t.Fatalf("qa: %s", check.Reason)
	}
	decide(ExitFail, "approve", "--env", "qa", "--as", "outsider")
	if out := decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead"); !strings.Contains(out, "would record the approval of plan") || !strings.Contains(out, "the gate would then authorize it") {
		t.Errorf("approve --check says:\n%s", out)
	}
	applies(pipeline(ExitPass, "apply", "--env", "qa"))

	pipeline(ExitAwaitingApproval, "run", "--env", "prod")
	// qa's approver may approve in sre's name, and the gate would not take
	// it: the check says both.
	if code, out := run1([]string{"approve", "--env", "prod", "--as", "qa-lead", "--check"}); code != ExitPass ||
		!strings.Contains(out, "the gate would then say awaiting_approval: "+string(runner.SeparationOfDutiesViolation)) {
		t.Errorf("approve --check by qa's approver in prod: exit %d\n%s", code, out)
	}
	if out := decide(ExitPass, "reject", "--env", "prod", "--as", "sre-oncall", "--reason", "not today"); !strings.Contains(out, "would record the rejection") ||
		!strings.Contains(out, "the gate would then say fail: "+string(runner.ApprovalRejected)) {
		t.Errorf("reject --check says:\n%s", out)
	}
	if check, _ := pipeline(ExitFail, "run", "--env", "prod"); check.Reason != string(runner.ApprovalRejected) {
		t.Errorf("prod after its rejection: %s", check.Reason)
	}

	// An apply killed midway leaves an outcome nobody knows.
	contract := filepath.Join(c.dir, ".nova", "contract.yml")
	data, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, contract, strings.Replace(string(data), "repeat: 2", "repeat: 3", 1))
	writeFile(t, mode, "kill")
	if code, v, _ := c.nova(ctx, "run"); code != ExitError {
		t.Fatalf("killed apply: exit %d %s", code, v.Reason)
	}
	writeFile(t, mode, "")
	if check, _ := pipeline(ExitFail, "run"); check.Reason != string(runner.ApplyIndeterminate) {
		t.Errorf("run after the killed apply: %s", check.Reason)
	}
	decide(ExitError, "evidence", "resolve", "--contract", "unknown-contract", "--env", "dev", "--outcome", "not-applied", "--note", "n")
	if out := decide(ExitPass, "evidence", "resolve", "--contract", helloContractID, "--env", "dev", "--outcome", "not-applied", "--note", "checked the console"); !strings.Contains(out, "would record "+runner.EventApplyResolved) {
		t.Errorf("resolve --check says:\n%s", out)
	}
	applies(pipeline(ExitPass, "run"))

	// Many contracts at once check the same way.
	data, err = os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, contract, strings.Replace(string(data), "repeat: 3", "repeat: 4", 1))
	if out := decide(ExitPass, "run", "--all", "--state-dir", c.stateDir, "--trusted-keys", repo.Keys, "--terraform", wrapper); !strings.Contains(out, "nothing was changed or recorded") {
		t.Errorf("run --all --check says:\n%s", out)
	}

	decide(ExitError, "unlock", "--env", "dev", "--reason", "nothing holds it")
	holdDev(t, c, 7)
	if out := decide(ExitPass, "unlock", "--env", "dev", "--reason", "pull request #7 was abandoned"); !strings.Contains(out, "would record "+runner.EventLockReleased) || !strings.Contains(out, "#7") {
		t.Errorf("unlock --check says:\n%s", out)
	}
}

// holdDev records that pull request pr applied in dev, as its run would
// have on a forge, so that it holds dev.
func holdDev(t *testing.T, c *consumer, pr int64) {
	t.Helper()
	ctx := t.Context()
	env, _, _ := evidenceEnv(t, c.env)
	s, err := readEvidenceConfig("", "", env.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := openEvidenceStore(ctx, s, env)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	em := runner.NewEmitter(store, "urn:nova:test", "run-pr", nil)
	if _, err := em.Emit(ctx, runner.EventApplyAuthorized, helloContractID, runner.Dev, runner.Authorization{Digest: strings.Repeat("cd", 32), Environment: runner.Dev, Approver: "autonomous", Change: strings.Repeat("ef", 32), PullRequest: pr}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.Emit(ctx, runner.EventApplyCompleted, helloContractID, runner.Dev, map[string]bool{"applied": true}); err != nil {
		t.Fatal(err)
	}
	if err := store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCheckInput is --check as the action's input: true or false, for the
// commands that have it, and an error anywhere else, as an input a
// command ignores would run something else than the workflow says.
func TestCheckInput(t *testing.T) {
	for _, cmd := range []string{"apply", "run", "approve", "reject"} {
		inputs := map[string]string{"command": cmd, "dir": t.TempDir(), "environment": "qa", "check": "true"}
		if cmd == "reject" {
			inputs["reason"] = "not this one"
		}
		cfg, err := readActionConfig(t, actionEnv(t, inputs))
		if err != nil || !cfg.Check {
			t.Errorf("command %s with check true: check %v, %v", cmd, cfg.Check, err)
		}
	}
	cfg, err := readActionConfig(t, actionEnv(t, map[string]string{"command": "rollback", "dir": t.TempDir(), "environment": "prod", "to": "abcdef012345", "check": "true"}))
	if err != nil || !cfg.Check || cfg.Rollback.To != "abcdef012345" || cfg.EnvOverride != runner.Prod {
		t.Errorf("rollback: check %v to %q env %q, %v", cfg.Check, cfg.Rollback.To, cfg.EnvOverride, err)
	}
	if cfg, err := readActionConfig(t, actionEnv(t, map[string]string{"command": "run", "dir": t.TempDir()})); err != nil || cfg.Check {
		t.Errorf("check at its default: check %v, %v", cfg.Check, err)
	}
	for _, tc := range []struct{ command, value string }{{"run", "yes"}, {"plan", "true"}, {"validate", "true"}} {
		_, err := readActionConfig(t, actionEnv(t, map[string]string{"command": tc.command, "dir": t.TempDir(), "check": tc.value}))
		if runner.ReasonOf(err) != runner.ConfigInvalid || !strings.Contains(err.Error(), "check") {
			t.Errorf("command %s with check %q: err = %v, want CONFIG_INVALID naming the input", tc.command, tc.value, err)
		}
	}
}
