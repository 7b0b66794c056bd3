package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/go-git/go-git/v5"
	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/runner/terraform"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// These tests run the nova command in-process against real engines and
// real files: no fakes. Terraform and OpenTofu must be on PATH; `make
// tools` builds them through the Go module proxy.

type consumer struct {
	t        *testing.T
	dir      string
	stateDir string
	extra    []string
	env      map[string]string
	// engine is the engine the consumer's contracts name ("": terraform).
	engine string
}

func newConsumer(t *testing.T, contract string) *consumer {
	t.Helper()
	return newEngineConsumer(t, runner.EngineTerraform, contract)
}

// newEngineConsumer is a consumer whose contracts run on engine: each
// contract it writes names it.
func newEngineConsumer(t *testing.T, engine, contract string) *consumer {
	t.Helper()
	terraformtest.Binary(t, engine)
	// HOME holds local mode's evidence repo and the keys made on first use.
	c := &consumer{t: t, dir: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir()}, engine: engine}
	c.writeContract(contract)
	writeFile(t, filepath.Join(c.dir, runner.ApproversFile), testApprovers)
	return c
}

// forEachEngine runs body once per engine, as a subtest named after it.
func forEachEngine(t *testing.T, body func(t *testing.T, engine string)) {
	for _, engine := range terraformtest.Engines {
		t.Run(engine, func(t *testing.T) { body(t, engine) })
	}
}

// binary is the consumer's engine's binary.
func (c *consumer) binary() string {
	c.t.Helper()
	return terraformtest.Binary(c.t, cmp.Or(c.engine, runner.EngineTerraform))
}

// writeContract writes the contract, naming the consumer's engine unless
// the contract names one itself.
func (c *consumer) writeContract(contract string) {
	c.t.Helper()
	if c.engine != "" && c.engine != runner.EngineTerraform && !strings.Contains(contract, "\nengine:") {
		contract += "engine: " + c.engine + "\n"
	}
	if err := os.MkdirAll(filepath.Join(c.dir, ".nova"), 0o755); err != nil {
		c.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(c.dir, ".nova", "contract.yml"), []byte(contract), 0o644); err != nil {
		c.t.Fatal(err)
	}
}

// nova runs one command with --output json and returns the exit code and
// the decoded run.
func (c *consumer) nova(ctx context.Context, args ...string) (int, runView, string) {
	c.t.Helper()
	var stdout, stderr bytes.Buffer
	full := append([]string{args[0], "--dir", c.dir, "--state-dir", c.stateDir, "--output", "json"}, args[1:]...)
	full = append(full, c.extra...)
	code := exitCode(run(ctx, Env{
		Args:    full,
		Getenv:  func(k string) string { return c.env[k] },
		Environ: os.Environ(),
		Stdout:  &stdout,
		Stderr:  &stderr,
	}))
	var v runView
	if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
		c.t.Fatalf("nova %v: stdout is not one JSON document: %v\nstdout:\n%s\nstderr:\n%s", args, err, stdout.String(), stderr.String())
	}
	return code, v, stderr.String()
}

// newHelloConsumer is a consumer of a copy of examples/hello on engine,
// run by dev-author.
func newHelloConsumer(t *testing.T, engine string) *consumer {
	t.Helper()
	terraformtest.Binary(t, engine)
	c := &consumer{t: t, dir: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir(), "USER": "dev-author"}, engine: engine}
	if err := os.CopyFS(c.dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	return c
}

// step runs a pipeline command (run, apply, rollback) and fails the test
// unless it exits wantCode with wantReason ("": any reason).
func (c *consumer) step(wantCode int, wantReason runner.Reason, args ...string) runView {
	c.t.Helper()
	code, v, stderr := c.nova(c.t.Context(), args...)
	if code != wantCode || (wantReason != "" && v.Reason != string(wantReason)) {
		c.t.Fatalf("nova %s: exit %d (reason %s), want %d (%s)\n%v\n%s", strings.Join(args, " "), code, v.Reason, wantCode, wantReason, verdicts(v), stderr)
	}
	return v
}

// decide runs a command that answers in text (approve, reject, evidence,
// report) and fails the test unless it exits wantCode. It returns what
// the command printed.
func (c *consumer) decide(wantCode int, args ...string) string {
	c.t.Helper()
	if args[0] != "evidence" && args[0] != "report" {
		args = append(args, "--dir", c.dir)
	}
	var stdout, stderr bytes.Buffer
	code := exitCode(run(c.t.Context(), Env{Args: args, Getenv: func(k string) string { return c.env[k] }, Stdout: &stdout, Stderr: &stderr}))
	if code != wantCode {
		c.t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
	}
	return stdout.String() + stderr.String()
}

// helloStatePath is where env's state of examples/hello's contract lives.
func (c *consumer) helloStatePath(env string) string {
	return filepath.Join(c.stateDir, helloContractID, env, "terraform.tfstate")
}

// helloState is env's Terraform state of examples/hello's contract.
func (c *consumer) helloState(env string) *tfjson.State {
	c.t.Helper()
	tf, err := terraform.New(c.t.TempDir(), terraform.Options{ExecPath: c.binary(), Engine: c.engine})
	if err != nil {
		c.t.Fatal(err)
	}
	st, err := tf.ShowState(c.t.Context(), c.helloStatePath(env))
	if err != nil {
		c.t.Fatalf("reading %s's state: %v", env, err)
	}
	return st
}

func helloContract(audience, env string) string {
	return `apiVersion: nova/v1
id: 0c0ffee0-1111-4222-8333-444455556666
stack: hello
environment: ` + env + `
inputs:
  audience: ` + audience + `
  repeat: 2
validation:
  e2eSuite: reports/e2e.xml
  loadTest: reports/load.xml
  unitTests: reports/unit.xml
runbook: https://runbooks.example.com/hello
dashboard: https://grafana.example.com/d/hello
oncall: team-hello
drDrillRef: https://tickets.example.com/DR-42
`
}

func verdicts(v runView) []string {
	var out []string
	for _, s := range v.Stages {
		out = append(out, s.Stage+"="+string(s.Verdict))
	}
	return out
}

func readEvents(t *testing.T, path string) []runner.Event {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var events []runner.Event
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e runner.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("events line is not an event: %v", err)
		}
		// The file holds the canonical bytes, so its lines hash to the
		// next event's preveventhash exactly as written.
		canon, _ := e.Canonical()
		if !bytes.Equal(canon, sc.Bytes()) {
			t.Errorf("event %d is not stored in canonical form", e.Seq)
		}
		events = append(events, e)
	}
	return events
}

func checkChain(t *testing.T, events []runner.Event, wantTypes []string) {
	t.Helper()
	var types []string
	prev := ""
	for i, e := range events {
		types = append(types, e.Type)
		if e.Seq != int64(i+1) || e.PrevEventHash != prev {
			t.Errorf("event %d: seq %d prev %q, want seq %d prev %q", i, e.Seq, e.PrevEventHash, i+1, prev)
		}
		prev, _ = e.Hash()
	}
	if !slices.Equal(types, wantTypes) {
		t.Errorf("event types = %v, want %v", types, wantTypes)
	}
}

func (c *consumer) state(ctx context.Context, env string) *tfjson.State {
	c.t.Helper()
	path := filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", env, "terraform.tfstate")
	tf, err := terraform.New(c.t.TempDir(), terraform.Options{ExecPath: c.binary(), Engine: c.engine})
	if err != nil {
		c.t.Fatal(err)
	}
	st, err := tf.ShowState(ctx, path)
	if err != nil {
		c.t.Fatalf("reading state %s: %v", path, err)
	}
	return st
}

func mustLookPath(t testing.TB) string {
	t.Helper()
	p, err := exec.LookPath("terraform")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestEndToEndPlanApplyChangeDestroy runs on each engine: a first run
// applies, a second answers with the receipt, a changed contract plans and
// its bundle applies, a replay answers with the receipt again, and the
// events name the engine that planned and applied.
func TestEndToEndPlanApplyChangeDestroy(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		t.Parallel()
		endToEnd(t, engine)
	})
}

func endToEnd(t *testing.T, engine string) {
	ctx := t.Context()
	c := newEngineConsumer(t, engine, helloContract("world", "dev"))
	c.extra = []string{"--commit", "1111111111111111111111111111111111111111"}

	code, v, stderr := c.nova(ctx, "run")
	if code != ExitPass || !slices.Equal(verdicts(v), []string{"schema=pass", "change=pass", "policy=pass", "nfr=pass", "confidence=pass", "plan=pass", "plan-policy=pass", "plan-confidence=pass", "approvals=pass", "gate=pass", "apply=pass"}) {
		t.Fatalf("first run: exit %d, stages %v\n%s", code, verdicts(v), stderr)
	}
	first := readEvents(t, v.EventsFile)
	checkChain(t, first, slices.Concat(evaluated, planned, checked, []string{runner.EventApplyAuthorized, runner.EventAttestation, runner.EventApplyCompleted}, settled))
	label := engineLabel(t, c)
	for _, e := range first {
		var d struct {
			Engine string `json:"engine"`
		}
		if e.Type != runner.EventPlanCreated && e.Type != runner.EventApplyCompleted && e.Type != runner.EventChangeIdentified {
			continue
		}
		if err := runner.DecodeEventData(e, &d); err != nil || d.Engine != label {
			t.Errorf("%s names engine %q (%v), want %q", e.Type, d.Engine, err, label)
		}
	}
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, world!" {
		t.Errorf("after first apply message__text = %q", got)
	}

	// The environment applied this very change last: the run answers
	// with the receipt, and plans nothing.
	code, v, _ = c.nova(ctx, "run")
	if code != ExitPass || !slices.Equal(verdicts(v), []string{"schema=pass", "change=pass"}) || !strings.Contains(stage(v, "change").Summary, "nothing to do") {
		t.Errorf("second run should answer with the receipt: exit %d, %+v", code, v.Stages)
	}
	if got := eventTypes(readEvents(t, v.EventsFile)); !slices.Equal(got, []string{runner.EventContractValidated, runner.EventChangeReceipt}) {
		t.Errorf("second run's events %v", got)
	}

	c.writeContract(helloContract("changed", "dev"))
	code, v, stderr = c.nova(ctx, "plan")
	if code != ExitPass || !slices.Equal(verdicts(v), []string{"schema=pass", "change=pass", "policy=pass", "nfr=pass", "confidence=pass", "plan=pass", "plan-policy=pass", "plan-confidence=pass"}) {
		t.Fatalf("plan after change: exit %d, %v\n%s", code, verdicts(v), stderr)
	}
	m, err := bundle.ReadManifest(v.BundleDir)
	if err != nil {
		t.Fatal(err)
	}
	if m.Changes.Change == 0 || m.Changes.Add != 0 || m.Changes.Destroy != 0 || !m.HasChanges {
		t.Errorf("changing an input should plan in-place updates only, got %+v", m.Changes)
	}
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, world!" {
		t.Errorf("plan alone changed the state: message__text = %q", got)
	}

	// The apply job names the digest the plan job published: a bundle
	// carrying another is refused before anything is authorized.
	planned := v
	code, v, _ = c.nova(ctx, "apply", "--bundle", planned.BundleDir, "--digest", "sha256:"+strings.Repeat("0", 64))
	if code != ExitFail || v.Reason != string(runner.PlanBundleMismatch) {
		t.Errorf("apply with another digest: exit %d reason %s, want PLAN_BUNDLE_MISMATCH", code, v.Reason)
	}
	// Named relative to the working directory, as a workflow's apply job
	// names the bundle it downloaded into the workspace: terraform,
	// which runs elsewhere, must still find it.
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	relBundle, err := filepath.Rel(wd, planned.BundleDir)
	if err != nil {
		t.Fatal(err)
	}
	code, v, stderr = c.nova(ctx, "apply", "--bundle", relBundle, "--digest", planned.PlanDigest)
	if code != ExitPass || !slices.Equal(verdicts(v), []string{"schema=pass", "bundle=pass", "change=pass", "approvals=pass", "gate=pass", "apply=pass"}) {
		t.Fatalf("apply of bundle: exit %d, %v\n%s", code, verdicts(v), stderr)
	}
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, changed!" {
		t.Errorf("after apply message__text = %q, want the changed greeting", got)
	}
	applied := readEvents(t, v.EventsFile)
	// The receipt is the apply's event; the decision outcomes the run's
	// end recorded follow it.
	receipt := applied[len(applied)-1-len(settled)]
	// Output values stay in the state: the event has their digests only.
	for _, e := range applied {
		if strings.Contains(string(e.Data), "Hello, changed!") {
			t.Errorf("event %s carries an output value: %s", e.Type, e.Data)
		}
	}
	if !strings.Contains(string(receipt.Data), `"message__text":"sha256:`) {
		t.Errorf("the receipt lacks the output's digest: %s", receipt.Data)
	}

	// Replaying the applied bundle answers with the original receipt and
	// runs no engine: a binary that leaves a mark when called.
	marks := t.TempDir()
	tf := filepath.Join(marks, terraformtest.Program(engine))
	writeFile(t, tf, "#!/bin/sh\ntouch "+filepath.Join(marks, "called")+"\nexit 99\n")
	if err := os.Chmod(tf, 0o755); err != nil {
		t.Fatal(err)
	}
	code, replay, stderr := c.nova(ctx, "apply", "--bundle", v.BundleDir, "--"+terraformtest.Program(engine), tf)
	if code != ExitPass || replay.Receipt != receipt.ID || receipt.Type != runner.EventApplyCompleted || !slices.Equal(verdicts(replay), []string{"schema=pass", "bundle=pass"}) {
		t.Fatalf("replay: exit %d, receipt %q (want %s), stages %v\n%s", code, replay.Receipt, receipt.ID, verdicts(replay), stderr)
	}
	if _, err := os.Stat(filepath.Join(marks, "called")); err == nil {
		t.Error("the replay ran terraform")
	}

	root := filepath.Join(v.BundleDir, bundle.RootDir)
	ws, err := terraform.New(root, terraform.Options{ExecPath: c.binary(), Engine: engine, Env: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Init(ctx, []string{"path=" + filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", "dev", "terraform.tfstate")}); err != nil {
		t.Fatal(err)
	}
	if err := ws.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if st := c.state(ctx, "dev"); st.Values != nil && st.Values.RootModule != nil && len(st.Values.RootModule.ChildModules) > 0 {
		t.Errorf("resources left after destroy: %+v", st.Values.RootModule.ChildModules)
	}
}

// engineLabel is the consumer's engine at the version its binary reports,
// as events name it ("opentofu 1.12.6").
func engineLabel(t *testing.T, c *consumer) string {
	t.Helper()
	e := &terraform.Engine{Terraform: terraform.Options{ExecPath: c.binary(), Env: map[string]string{}}, OpenTofu: c.binary()}
	label, err := e.EngineVersion(t.Context(), &runner.Contract{Engine: c.engine})
	if err != nil {
		t.Fatal(err)
	}
	return label
}

func outputValue(t *testing.T, st *tfjson.State, name string) string {
	t.Helper()
	if st.Values == nil || st.Values.Outputs[name] == nil {
		t.Fatalf("state has no output %s", name)
	}
	s, _ := st.Values.Outputs[name].Value.(string)
	return s
}

// TestGuardedEnvironmentsStopAtTheGate gives each guarded environment
// everything its confidence threshold asks for — passing test reports, a
// cost estimate within budget (from a fake infracost, which cannot price
// anything offline) and a commit signed with a trusted key — so that the run
// reaches the gate, and checks that it stops there and applies nothing.
func TestGuardedEnvironmentsStopAtTheGate(t *testing.T) {
	fakeInfracost(t, `{"version":"0.2","currency":"USD","projects":[],"totalMonthlyCost":"12.50","diffTotalMonthlyCost":"12.50"}`)
	for _, env := range []string{"qa", "prod", "dr"} {
		t.Run(env, func(t *testing.T) {
			c := newConsumer(t, helloContract("world", env)+"nfr:\n  monthlyCostCeiling: 50\n")
			c.env["INFRACOST_API_KEY"] = "fake-key"
			writeFile(t, filepath.Join(c.dir, "reports", "e2e.xml"), `<testsuite><testcase name="a"/><testcase name="b"/></testsuite>`)
			writeFile(t, filepath.Join(c.dir, "reports", "load.xml"), `<testsuite><testcase name="p99"/></testsuite>`)
			writeFile(t, filepath.Join(c.dir, "reports", "unit.xml"), `<testsuite><testcase name="u"/></testsuite>`)
			c.extra = []string{"--trusted-keys", signedCheckout(t, c.dir)}

			code, v, stderr := c.nova(t.Context(), "run")
			if code != ExitAwaitingApproval || v.Reason != string(runner.ApprovalRequired) {
				t.Fatalf("exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitAwaitingApproval, runner.ApprovalRequired, stderr)
			}
			if got := verdicts(v); got[len(got)-1] != "gate=awaiting_approval" || slices.Contains(got, "apply=pass") {
				t.Errorf("stages = %v", got)
			}
			if v.Confidence == nil || v.Confidence.Score != 1 {
				t.Errorf("confidence = %+v, want 1.000 with every input satisfied", v.Confidence)
			}
			if _, err := os.Stat(filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", env, "terraform.tfstate")); err == nil {
				if st := c.state(t.Context(), env); st.Values != nil && len(st.Values.RootModule.ChildModules) > 0 {
					t.Error("a guarded environment was applied without approval")
				}
			}
			checkChain(t, readEvents(t, v.EventsFile), slices.Concat(evaluated, planned, checked, []string{runner.EventApprovalRequested}))
		})
	}
}

// The events of the evaluation stages, of planning and of the approvals
// stage, in order.
var (
	evaluated = []string{runner.EventContractValidated, runner.EventChangeIdentified, "nova.policy.evaluated", "nova.nfr.evaluated", "nova.confidence.computed", "nova.ai.decision.made"}
	planned   = []string{runner.EventPlanCreated, "nova.policy.evaluated", "nova.confidence.computed", "nova.ai.decision.made"}
	checked   = []string{runner.EventApprovalChecked}
	// settled are what the run's end records once the apply settled the
	// pre-plan and the post-plan decision.
	settled = []string{runner.EventDecisionOutcome, runner.EventDecisionOutcome}
)

// testApprovers is the consumers' approver config: the groups a promotion
// needs.
const testApprovers = `groups:
  qa:
    members: [qa-lead]
  sre:
    members: [sre-oncall]
`

func stage(v runView, name string) stageView {
	for _, s := range v.Stages {
		if s.Stage == name {
			return s
		}
	}
	return stageView{}
}

// fakeInfracost puts an infracost on PATH that prints a recorded breakdown:
// the real one needs its pricing API, which no test can reach.
func fakeInfracost(t *testing.T, breakdown string) {
	t.Helper()
	bin := t.TempDir()
	writeFile(t, filepath.Join(bin, "breakdown.json"), breakdown)
	script := "#!/bin/sh\ncat " + filepath.Join(bin, "breakdown.json") + "\n"
	if err := os.WriteFile(filepath.Join(bin, "infracost"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
}

// signedCheckout commits dir as a git repository signed with a fresh
// OpenPGP key and returns a file holding that key, for --trusted-keys.
func signedCheckout(t *testing.T, dir string) string {
	t.Helper()
	r := newSignedRepo(t, dir)
	r.commit("contract", ".")
	return r.Keys
}

func TestApplyRefusesBundlesItWasNotMadeFor(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("world", "dev"))
	c.extra = []string{"--commit", "aaaa"}
	_, first, _ := c.nova(ctx, "plan")
	c.writeContract(helloContract("other", "dev"))
	_, second, _ := c.nova(ctx, "plan")

	t.Run("other commit", func(t *testing.T) {
		c.extra = []string{"--commit", "bbbb"}
		defer func() { c.extra = []string{"--commit", "aaaa"} }()
		code, v, _ := c.nova(ctx, "apply", "--bundle", second.BundleDir)
		if code != ExitFail || v.Reason != string(runner.PlanBundleMismatch) {
			t.Errorf("exit %d reason %s, want %d %s", code, v.Reason, ExitFail, runner.PlanBundleMismatch)
		}
	})
	t.Run("other contract content", func(t *testing.T) {
		code, v, _ := c.nova(ctx, "apply", "--bundle", first.BundleDir)
		if code != ExitFail || v.Reason != string(runner.PlanBundleMismatch) {
			t.Errorf("exit %d reason %s, want %d %s", code, v.Reason, ExitFail, runner.PlanBundleMismatch)
		}
	})
	// The plan digest binds the engine: approving a Terraform plan never
	// authorises an OpenTofu apply, nor one by another Terraform.
	t.Run("another engine by flag", func(t *testing.T) {
		code, v, _ := c.nova(ctx, "apply", "--bundle", second.BundleDir, "--engine", "opentofu")
		if code != ExitFail || v.Reason != string(runner.EngineChangedSincePlan) {
			t.Errorf("exit %d reason %s, want %d %s", code, v.Reason, ExitFail, runner.EngineChangedSincePlan)
		}
	})
	t.Run("another engine in the contract", func(t *testing.T) {
		c.writeContract(helloContract("other", "dev") + "engine: opentofu\n")
		defer c.writeContract(helloContract("other", "dev"))
		code, v, _ := c.nova(ctx, "apply", "--bundle", second.BundleDir)
		if code != ExitFail || v.Reason != string(runner.EngineChangedSincePlan) {
			t.Errorf("exit %d reason %s, want %d %s", code, v.Reason, ExitFail, runner.EngineChangedSincePlan)
		}
	})
	t.Run("another version of the engine", func(t *testing.T) {
		// The same terraform, saying it is another version.
		other := filepath.Join(t.TempDir(), "terraform")
		writeFile(t, other, "#!/bin/sh\nif [ \"$1\" = version ]; then echo '{\"terraform_version\":\"9.9.9\"}'; exit 0; fi\nexec "+mustLookPath(t)+" \"$@\"\n")
		if err := os.Chmod(other, 0o755); err != nil {
			t.Fatal(err)
		}
		code, v, _ := c.nova(ctx, "apply", "--bundle", second.BundleDir, "--terraform", other)
		if code != ExitFail || v.Reason != string(runner.EngineChangedSincePlan) || !strings.Contains(stage(v, "bundle").Summary, "terraform 9.9.9") {
			t.Errorf("exit %d reason %s (%s), want %d %s", code, v.Reason, stage(v, "bundle").Summary, ExitFail, runner.EngineChangedSincePlan)
		}
	})
	t.Run("swapped saved plan", func(t *testing.T) {
		// Put the first plan's tfplan into the second bundle: the manifest
		// still names the second plan's digest, the file no longer has it.
		data, err := os.ReadFile(filepath.Join(first.BundleDir, bundle.PlanFile))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(second.BundleDir, bundle.PlanFile), data, 0o644); err != nil {
			t.Fatal(err)
		}
		code, v, _ := c.nova(ctx, "apply", "--bundle", second.BundleDir)
		if code != ExitFail || v.Reason != string(runner.PlanDigestMismatch) {
			t.Errorf("exit %d reason %s, want %d %s", code, v.Reason, ExitFail, runner.PlanDigestMismatch)
		}
		if _, err := os.Stat(filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", "dev", "terraform.tfstate")); err == nil {
			if st := c.state(ctx, "dev"); st.Values != nil && len(st.Values.RootModule.ChildModules) > 0 {
				t.Error("a tampered bundle was applied")
			}
		}
	})
}

// TestCancellationInterruptsTerraform cancels a run, on each engine, while
// its apply is busy in a slow provisioner: nova must report the apply's
// outcome as unknown (not as a failure of the configuration) and the
// engine must have released its state lock.
func TestCancellationInterruptsTerraform(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		t.Parallel()
		cancellationInterrupts(t, engine)
	})
}

func cancellationInterrupts(t *testing.T, engine string) {
	events := t.TempDir()
	started, finished := filepath.Join(events, "started"), filepath.Join(events, "finished")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	c := newEngineConsumer(t, engine, `apiVersion: nova/v1
id: 0c0ffee0-1111-4222-8333-444455556666
stack: slow
environment: dev
inputs:
  started: `+started+`
  finished: `+finished+`
  seconds: 60
`)
	c.extra = []string{"--registry", filepath.Join("testdata", "registry")}
	ctx, cancel := context.WithCancel(t.Context())
	lock := filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", "dev", ".terraform.tfstate.lock.info")
	go func() {
		// Opening the pipe blocks until the provisioner writes to it: apply
		// then holds the state lock and is busy.
		f, err := os.Open(started)
		if err == nil {
			_, _ = f.Read(make([]byte, 16))
			f.Close()
		}
		cancel()
	}()
	code, v, stderr := c.nova(ctx, "run")
	if code != ExitError || v.Reason != string(runner.ApplyIndeterminate) {
		t.Fatalf("exit %d reason %q, want %d %s\n%s", code, v.Reason, ExitError, runner.ApplyIndeterminate, stderr)
	}
	// Had the interrupt not reached terraform, the provisioner would have
	// run to its end.
	if _, err := os.Stat(finished); err == nil {
		t.Error("the provisioner ran to its end: the interrupt did not reach terraform")
	}
	if _, err := os.Stat(lock); err == nil {
		t.Error("terraform left its state lock behind")
	}
	// An interrupted apply is recorded as indeterminate, never as failed or
	// completed by guess.
	checkChain(t, readEvents(t, v.EventsFile), slices.Concat(evaluated, planned, checked, []string{runner.EventApplyAuthorized, runner.EventAttestation, runner.EventRunFailed, runner.EventApplyIndeterminate}, settled))
}

// TestApplyFailsClosedWhenEvidenceCannotBePushed makes the evidence repo
// unreachable between two runs: the second must stop before apply with
// EVIDENCE_PUSH_FAILED and change nothing, keep its events in the outbox,
// and hand them over exactly once when the repo is back.
func TestApplyFailsClosedWhenEvidenceCannotBePushed(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("world", "dev"))
	// A first command in local mode makes the keys; the shared repo then
	// uses them explicitly, as a CI job would be given them.
	if code, _, stderr := c.nova(ctx, "validate"); code != ExitPass {
		t.Fatalf("validate: exit %d\n%s", code, stderr)
	}
	keys := filepath.Join(c.env["HOME"], ".config", "nova")
	c.env["NOVA_SIGNING_KEY_FILE"] = filepath.Join(keys, "signing.key")
	c.env["NOVA_COMMIT_KEY_FILE"] = filepath.Join(keys, "commit-key.asc")
	remote := filepath.Join(t.TempDir(), "evidence.git")
	if _, err := git.PlainInit(remote, true); err != nil {
		t.Fatal(err)
	}
	c.extra = []string{"--evidence-repo", "file://" + remote, "--commit", "2222222222222222222222222222222222222222"}

	var lines int
	code, v, stderr := c.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("first run: exit %d\n%s", code, stderr)
	}
	lines += len(readEvents(t, v.EventsFile))

	if err := os.Rename(remote, remote+".away"); err != nil {
		t.Fatal(err)
	}
	c.writeContract(helloContract("unpushed", "dev"))
	code, v, stderr = c.nova(ctx, "run")
	if code != ExitError || v.Reason != string(runner.EvidencePushFailed) {
		t.Fatalf("run with the evidence repo away: exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitError, runner.EvidencePushFailed, stderr)
	}
	if got := verdicts(v); got[len(got)-1] != "gate=error" || slices.Contains(got, "apply=pass") {
		t.Errorf("stages = %v, want the gate to stop the run", got)
	}
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, world!" {
		t.Errorf("applied without pushed authorization: message__text = %q", got)
	}
	lines += len(readEvents(t, v.EventsFile))

	if err := os.Rename(remote+".away", remote); err != nil {
		t.Fatal(err)
	}
	code, v, stderr = c.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("run with the repo back: exit %d\n%s", code, stderr)
	}
	lines += len(readEvents(t, v.EventsFile))
	if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, unpushed!" {
		t.Errorf("after the repo came back message__text = %q", got)
	}

	var out, errOut bytes.Buffer
	code = evidenceCommand(ctx, []string{"verify", "file://" + remote, "--output", "json",
		"--key", filepath.Join(keys, "signing.pub"), "--commit-key", filepath.Join(keys, "commit-key.pub.asc")},
		Env{Getenv: func(k string) string { return c.env[k] }, Stdout: &out, Stderr: &errOut})
	if code != ExitPass {
		t.Fatalf("evidence verify: exit %d\n%s\n%s", code, out.String(), errOut.String())
	}
	var report struct {
		Events int `json:"events"`
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatal(err)
	}
	// Every event of the three runs, the unpushed ones included, exactly once.
	if report.Events != lines {
		t.Errorf("evidence repo holds %d events, the runs wrote %d", report.Events, lines)
	}
}

// TestApplyRefusesPlansThatDidNotPassEvaluation: the bundle exists as soon
// as terraform has planned, before the plan-level rules run. A plan that a
// critical plan-level rule stopped must not be applicable by `nova apply`.
func TestApplyRefusesPlansThatDidNotPassEvaluation(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("world", "dev"))
	writeFile(t, filepath.Join(c.dir, ".nova", "policy", "main.rego"), `package main

# METADATA
# custom:
#   severity: critical
deny_creates contains msg if {
	some rc in input.resource_changes
	"create" in rc.change.actions
	msg := sprintf("%s: nothing may be created this week", [rc.address])
}
`)
	code, v, stderr := c.nova(ctx, "plan")
	if code != ExitFail || stage(v, "plan-policy").Verdict != runner.Fail {
		t.Fatalf("plan with a critical plan-level finding: exit %d, stages %v\n%s", code, verdicts(v), stderr)
	}
	code, v, stderr = c.nova(ctx, "apply")
	if code != ExitFail || v.Reason != string(runner.PlanNotCleared) {
		t.Fatalf("apply of a plan that failed evaluation: exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitFail, runner.PlanNotCleared, stderr)
	}
	if _, err := os.Stat(filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", "dev", "terraform.tfstate")); err == nil {
		if st := c.state(ctx, "dev"); st.Values != nil && st.Values.RootModule != nil && len(st.Values.RootModule.ChildModules) > 0 {
			t.Error("a plan that failed its evaluation was applied")
		}
	}
}

// TestApplyBindsTheWholeSavedPlan tampers with a bundle in two ways the
// resource changes do not show: a provisioner added to a module (same
// planned attributes, different commands run), and a manifest claiming
// there is nothing to apply.
func TestApplyBindsTheWholeSavedPlan(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("world", "dev"))
	c.extra = []string{"--commit", "3333333333333333333333333333333333333333"}

	t.Run("provisioner added after planning", func(t *testing.T) {
		code, v, stderr := c.nova(ctx, "plan")
		if code != ExitPass {
			t.Fatalf("plan: exit %d\n%s", code, stderr)
		}
		root := filepath.Join(v.BundleDir, bundle.RootDir)
		module := filepath.Join(root, "modules", "hello-echo-1.0.0", "main.tf")
		marker := filepath.Join(t.TempDir(), "pwned")
		src, err := os.ReadFile(module)
		if err != nil {
			t.Fatal(err)
		}
		patched := strings.Replace(string(src), `resource "terraform_data" "echo" {`, `resource "terraform_data" "echo" {
  provisioner "local-exec" {
    command = "touch `+marker+`"
  }`, 1)
		writeFile(t, module, patched)
		ws, err := terraform.New(root, terraform.Options{ExecPath: mustLookPath(t), Env: map[string]string{}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := ws.Plan(ctx, filepath.Join(v.BundleDir, bundle.PlanFile)); err != nil {
			t.Fatal(err)
		}
		code, v, _ = c.nova(ctx, "apply", "--bundle", v.BundleDir)
		if code != ExitFail || v.Reason != string(runner.PlanDigestMismatch) {
			t.Errorf("apply of a re-planned bundle with a provisioner: exit %d reason %s, want %d %s", code, v.Reason, ExitFail, runner.PlanDigestMismatch)
		}
		if _, err := os.Stat(marker); err == nil {
			t.Error("the injected provisioner ran")
		}
	})

	t.Run("manifest says nothing to apply", func(t *testing.T) {
		code, v, stderr := c.nova(ctx, "plan")
		if code != ExitPass {
			t.Fatalf("plan: exit %d\n%s", code, stderr)
		}
		manifest := filepath.Join(v.BundleDir, bundle.ManifestFile)
		data, err := os.ReadFile(manifest)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, manifest, strings.Replace(string(data), `"hasChanges": true`, `"hasChanges": false`, 1))
		code, v, stderr = c.nova(ctx, "apply", "--bundle", v.BundleDir)
		if code != ExitPass || !strings.Contains(stage(v, "apply").Summary, "applied plan") {
			t.Fatalf("apply: exit %d, apply stage %q\n%s", code, stage(v, "apply").Summary, stderr)
		}
		if got := outputValue(t, c.state(ctx, "dev"), "message__text"); got != "Hello, world!" {
			t.Errorf("message__text = %q: the saved plan's changes were not applied", got)
		}
	})
}
