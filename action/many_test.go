package main

import (
	"bytes"
	"context"
	"encoding/json"
	"github.com/nova-platform/nova/runner/forgehttp"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform"
)

// A monorepo of consumers, run in-process as `nova <command> --all|--changed`
// against real Terraform and a real local evidence repo.
type monorepoRun struct {
	t        testing.TB
	root     string
	stateDir string
	env      map[string]string
	// retry is how the forge's client waits (Env.ForgeRetry).
	retry forgehttp.Policy
}

func newMonorepoRun(t testing.TB) *monorepoRun {
	t.Helper()
	if _, err := exec.LookPath("terraform"); err != nil {
		t.Fatal("terraform is not on PATH: run `make test`, which installs it")
	}
	return &monorepoRun{t: t, root: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir()}}
}

// contract writes a dev contract of the hello stack under dir.
func (m *monorepoRun) contract(rel, id, audience string, more ...string) {
	m.t.Helper()
	writeFile(m.t, filepath.Join(m.root, filepath.FromSlash(rel)), `apiVersion: nova/v1
id: `+id+`
stack: hello
environment: dev
inputs:
  audience: "`+audience+`"
`+strings.Join(more, ""))
}

// nova runs one command over the root and returns the exit code, stdout
// and stderr.
func (m *monorepoRun) nova(args ...string) (int, string, string) {
	m.t.Helper()
	var stdout, stderr bytes.Buffer
	full := args
	switch args[0] {
	case "evidence":
	case "matrix":
		full = append([]string{args[0], "--dir", m.root}, args[1:]...)
	default:
		full = append([]string{args[0], "--dir", m.root, "--state-dir", m.stateDir}, args[1:]...)
	}
	code := exitCode(run(m.t.Context(), Env{
		Args:       full,
		Getenv:     func(k string) string { return m.env[k] },
		Environ:    os.Environ(),
		Stdout:     &stdout,
		Stderr:     &stderr,
		ForgeRetry: m.retry,
	}))
	return code, stdout.String(), stderr.String()
}

// many runs a command with --output json and decodes its one document.
func (m *monorepoRun) many(args ...string) (int, manyView, string) {
	m.t.Helper()
	code, stdout, stderr := m.nova(append(args, "--output", "json")...)
	var mv manyView
	if err := json.Unmarshal([]byte(stdout), &mv); err != nil {
		m.t.Fatalf("nova %v: stdout is not one JSON document: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout, stderr)
	}
	return code, mv, stderr
}

// outcomes is what a test asserts of each contract of a many-run.
func outcomes(mv manyView) map[string]string {
	out := map[string]string{}
	for _, c := range mv.Contracts {
		out[c.Dir+"/"+c.Contract] = c.Verdict + " " + c.Reason
	}
	return out
}

// Contract ids of the monorepo tests.
const (
	idA   = "a0000000-1111-4222-8333-444455556666"
	idB   = "b0000000-1111-4222-8333-444455556666"
	idC   = "c0000000-1111-4222-8333-444455556666"
	idBad = "d0000000-1111-4222-8333-444455556666"
	idBig = "e0000000-1111-4222-8333-444455556666"
)

// TestRunManyContractsInParallel runs four contracts at once with real
// Terraform, one of which policy blocks: the other three apply, every
// result is reported, each contract has its own run and chain in the one
// evidence repo, and the exit code is the worst. Then plan over the same
// root with a contract Terraform cannot plan: the error outranks the
// failure.
func TestRunManyContractsInParallel(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/b/.nova/contract.yml", idB, "bravo")
	// b's directory has a policy of its own, which only b's run sees.
	writeFile(t, filepath.Join(m.root, "svc", "b", ".nova", "policy", "loud.rego"), "package contract\n\nwarn contains msg if {\n\tinput.inputs.audience == \"bravo\"\n\tmsg := \"bravo is a loud audience\"\n}\n")
	// Two contracts in one directory: c, and one whose input carries a
	// credential, which the platform's critical rule blocks.
	m.contract("svc/c/.nova/c.contract.yml", idC, "charlie")
	m.contract("svc/c/.nova/bad.contract.yml", idBad, "password=hunter2hunter2")

	code, mv, stderr := m.many("run", "--all", "--parallel", "3")
	want := map[string]string{
		"svc/a/.nova/contract.yml":     "pass ",
		"svc/b/.nova/contract.yml":     "pass ",
		"svc/c/.nova/bad.contract.yml": "fail " + string(runner.PolicyCriticalFail),
		"svc/c/.nova/c.contract.yml":   "pass ",
	}
	if diff := cmp.Diff(want, outcomes(mv)); diff != "" {
		t.Fatalf("outcomes (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
	if code != ExitFail || mv.ExitCode != ExitFail || mv.Verdict != string(runner.Fail) || mv.Reason != string(runner.PolicyCriticalFail) {
		t.Errorf("exit %d, document exit %d verdict %s reason %s; want %d fail %s", code, mv.ExitCode, mv.Verdict, mv.Reason, ExitFail, runner.PolicyCriticalFail)
	}
	if diff := cmp.Diff(map[string]int{"pass": 3, "fail": 1}, mv.Counts); diff != "" {
		t.Errorf("counts (-want +got):\n%s", diff)
	}
	runIDs := map[string]bool{}
	for _, c := range mv.Contracts {
		runIDs[c.RunID] = true
		consumer := slices.ContainsFunc(c.PCRs, func(p runner.PCR) bool { return strings.HasPrefix(p.RuleID, "consumer.") })
		if consumer != (c.ContractID == idB) {
			t.Errorf("%s: consumer policy records %v; only b's directory has a policy", c.ContractID, consumer)
		}
		events := readEvents(t, c.EventsFile)
		if c.Verdict == string(runner.Pass) {
			if got := verdicts(c.runView); got[len(got)-1] != "apply=pass" {
				t.Errorf("%s: stages %v, want an apply", c.ContractID, got)
			}
			checkChain(t, events, slices.Concat(evaluated, planned, checked, []string{runner.EventApplyAuthorized, runner.EventAttestation, runner.EventApplyCompleted}, settled))
			if got := outputValue(t, m.state(c.ContractID), "message__text"); !strings.HasPrefix(got, "Hello, ") {
				t.Errorf("%s: applied message__text = %q", c.ContractID, got)
			}
		} else if last := events[len(events)-1]; last.Type != runner.EventRunFailed || last.ContractID != idBad {
			t.Errorf("the blocked contract's last event is %s of %s", last.Type, last.ContractID)
		}
		for _, e := range events {
			if e.ContractID != c.ContractID || e.RunID != c.RunID {
				t.Errorf("%s's events file holds an event of contract %s, run %s", c.ContractID, e.ContractID, e.RunID)
			}
		}
	}
	if len(runIDs) != 4 {
		t.Errorf("%d run ids for 4 contracts: each contract's run is its own", len(runIDs))
	}
	// Every contract's chain reached the one evidence repo intact.
	if code, stdout, stderr := m.nova("evidence", "verify"); code != ExitPass {
		t.Errorf("evidence verify: exit %d\n%s\n%s", code, stdout, stderr)
	}

	// range() refuses more than 1024 elements: this contract passes every
	// check and fails in terraform plan.
	m.contract("svc/big/.nova/contract.yml", idBig, "echo", "  repeat: 5000\n")
	code, mv, stderr = m.many("plan", "--all")
	want["svc/a/.nova/contract.yml"], want["svc/b/.nova/contract.yml"], want["svc/c/.nova/c.contract.yml"] = "pass ", "pass ", "pass "
	want["svc/big/.nova/contract.yml"] = "error " + string(runner.TerraformPlanFailed)
	if diff := cmp.Diff(want, outcomes(mv)); diff != "" {
		t.Fatalf("plan outcomes (-want +got):\n%s\nstderr:\n%s", diff, stderr)
	}
	if code != ExitError || mv.Reason != string(runner.TerraformPlanFailed) {
		t.Errorf("plan: exit %d reason %s, want %d %s: an error outranks a failure", code, mv.Reason, ExitError, runner.TerraformPlanFailed)
	}
	for _, c := range mv.Contracts {
		if c.Verdict == string(runner.Pass) && !strings.Contains(stage(c.runView, "change").Summary, "nothing to do") {
			t.Errorf("%s: planned again after its apply: %v", c.ContractID, verdicts(c.runView))
		}
	}
}

// state reads a contract's dev state with terraform.
func (m *monorepoRun) state(id string) *tfjson.State {
	m.t.Helper()
	tf, err := terraform.New(m.t.TempDir(), terraform.Options{ExecPath: mustLookPath(m.t)})
	if err != nil {
		m.t.Fatal(err)
	}
	st, err := tf.ShowState(m.t.Context(), filepath.Join(m.stateDir, id, "dev", "terraform.tfstate"))
	if err != nil {
		m.t.Fatalf("reading the state of %s: %v", id, err)
	}
	return st
}

// TestValidateAllTwiceVerifies: `validate --all` records every
// contract's events in one drain, stores what it verified of each chain
// for the next process without reading back its own files, and signs the
// outbox's lines as they stand: a second run on that state dir, and a
// third on a fresh one, extend every chain, and the evidence verifies.
func TestValidateAllTwiceVerifies(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/b/.nova/contract.yml", idB, "beta")
	m.contract("svc/c/.nova/contract.yml", idC, "gamma")
	fresh := t.TempDir()
	for i, state := range []string{m.stateDir, m.stateDir, fresh} {
		m.stateDir = state
		if code, stdout, stderr := m.nova("validate", "--all"); code != ExitPass {
			t.Fatalf("validate %d: exit %d\n%s\n%s", i+1, code, stdout, stderr)
		}
	}
	code, stdout, stderr := m.nova("evidence", "verify")
	if code != ExitPass || !strings.Contains(stdout, "result           OK") {
		t.Fatalf("evidence verify: exit %d\n%s\n%s", code, stdout, stderr)
	}
}

// The text report of a many-run: each contract's stage lines together,
// then one line per contract and the one result.
func TestManyTextSummary(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/bad/.nova/contract.yml", idBad, "password=hunter2hunter2")
	code, stdout, stderr := m.nova("validate", "--all")
	if code != ExitPass {
		t.Fatalf("validate: exit %d\n%s\n%s", code, stdout, stderr)
	}
	for _, want := range []string{
		"2 contract(s) selected (all)",
		"nova validate · " + filepath.Join(m.root, "svc", "a", ".nova", "contract.yml"),
		"summary: 2 contract(s) · 2 pass",
		"svc/bad/.nova/contract.yml",
		"result: pass (exit 0)",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, stdout)
		}
	}
	if strings.Contains(stdout, "hunter2") {
		t.Error("the summary printed a contract's credential")
	}
}

func TestManyRefusesDuplicateContractIDs(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	m.contract("svc/copy/.nova/contract.yml", idA, "alpha")
	code, mv, stderr := m.many("run", "--all")
	if code != ExitFail || mv.Reason != string(runner.ContractIDDuplicate) || len(mv.Contracts) != 0 {
		t.Fatalf("exit %d reason %s contracts %d, want %d %s and nothing run\n%s", code, mv.Reason, len(mv.Contracts), ExitFail, runner.ContractIDDuplicate, stderr)
	}
	for _, f := range []string{"svc/a/.nova/contract.yml", "svc/copy/.nova/contract.yml"} {
		if !strings.Contains(mv.Message, f) || !strings.Contains(stderr, f) {
			t.Errorf("the refusal does not name %s: %s", f, mv.Message)
		}
	}
}

func TestSelectionFlags(t *testing.T) {
	m := newMonorepoRun(t)
	m.contract("svc/a/.nova/contract.yml", idA, "alpha")
	tests := []struct {
		args   []string
		code   int
		reason runner.Reason
	}{
		{[]string{"run", "--all", "--changed"}, ExitError, runner.ConfigInvalid},
		{[]string{"run", "--all", "--parallel", "0"}, ExitError, runner.ConfigInvalid},
		{[]string{"matrix"}, ExitError, runner.ConfigInvalid},
		// Not a git repository, and no pull request to take a base from.
		{[]string{"validate", "--changed"}, ExitError, runner.ChangeRangeInvalid},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			code, _, stderr := m.nova(tt.args...)
			if code != tt.code || !strings.Contains(stderr, string(tt.reason)) {
				t.Errorf("exit %d, stderr %q; want %d %s", code, stderr, tt.code, tt.reason)
			}
		})
	}
}

func TestWorstExit(t *testing.T) {
	tests := []struct {
		codes []int
		want  int
	}{
		{nil, ExitPass},
		{[]int{ExitPass, ExitPass}, ExitPass},
		{[]int{ExitPass, ExitAwaitingApproval}, ExitAwaitingApproval},
		{[]int{ExitAwaitingApproval, ExitFail, ExitPass}, ExitFail},
		{[]int{ExitFail, ExitError, ExitAwaitingApproval}, ExitError},
		{[]int{ExitPass, 42}, ExitError},
	}
	for _, tt := range tests {
		if got := worstExit(tt.codes...); got != tt.want {
			t.Errorf("worstExit(%v) = %d, want %d", tt.codes, got, tt.want)
		}
		if tt.codes != nil && verdictOf(exitCodes[verdictOf(tt.want)]) != verdictOf(tt.want) {
			t.Errorf("verdictOf(%d) does not round-trip", tt.want)
		}
	}
}

// A bug that panics inside one contract's run is that contract's error:
// the others' goroutines, and the process, carry on. The evidence store
// left nil panics at the first event, standing in for any such bug.
func TestAPanickingRunIsThatContractsError(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	reg, err := loadRegistry("")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Command: "validate", Dir: dir, ContractPath: ".nova/contract.yml", Source: "urn:nova:test"}
	w := wiring{cfg: cfg, env: Env{Stdout: io.Discard, Stderr: io.Discard}, reg: reg}
	var progress bytes.Buffer
	r := runContract(t.Context(), w, &reporter{cfg: cfg, progress: &progress, stdout: io.Discard})
	if r.out.Verdict != runner.Errored || r.out.Reason != runner.InternalError || !strings.Contains(progress.String(), "panicked") {
		t.Fatalf("outcome %s %s, progress %q; want an internal error saying it panicked", r.out.Verdict, r.out.Reason, progress.String())
	}
	if v := r.finish(t.Context()); v.ExitCode != ExitError {
		t.Errorf("reported exit %d, want %d", v.ExitCode, ExitError)
	}
}

// A contract not started when the command is interrupted is reported as
// such, and runs nothing.
func TestContractsNotStartedWhenInterrupted(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	cfg := Config{Command: "validate", Dir: dir, ContractPath: ".nova/contract.yml"}
	var progress bytes.Buffer
	r := runContract(ctx, wiring{cfg: cfg, env: Env{Stderr: io.Discard}}, &reporter{cfg: cfg, progress: &progress, stdout: io.Discard})
	if r.out.Verdict != runner.Errored || r.out.Reason != runner.RunCancelled {
		t.Fatalf("outcome %s %s, want error %s", r.out.Verdict, r.out.Reason, runner.RunCancelled)
	}
	if _, err := os.Stat(filepath.Join(dir, ".nova", "runs")); err == nil {
		t.Error("a contract that never started left a run behind")
	}
}

// countingVerifier answers from a table and counts the questions.
type countingVerifier struct {
	mu      sync.Mutex
	answers map[string]runner.CommitSignature
	asked   int
}

func (c *countingVerifier) VerifyCommit(_ context.Context, _, commit string) (runner.CommitSignature, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked++
	return c.answers[commit], nil
}

func TestOnceVerifierAsksOncePerCommit(t *testing.T) {
	inner := &countingVerifier{answers: map[string]runner.CommitSignature{"c1": runner.CommitVerified, "c2": runner.CommitUnknown}}
	v := &onceVerifier{inner: inner, known: map[string]runner.CommitSignature{}}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			if sig, err := v.VerifyCommit(t.Context(), "svc/x", "c1"); err != nil || sig != runner.CommitVerified {
				t.Errorf("c1: %s, %v", sig, err)
			}
		})
	}
	wg.Wait()
	first := inner.asked
	for range 3 {
		_, _ = v.VerifyCommit(t.Context(), "svc/y", "c1")
		_, _ = v.VerifyCommit(t.Context(), "svc/y", "c2")
	}
	// c1 is known after the first answers; "unknown" is never kept, since
	// another contract's repository may hold the commit.
	if inner.asked != first+3 {
		t.Errorf("asked %d times after the first %d, want %d (c2 each time, c1 never)", inner.asked-first, first, 3)
	}
}
