package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/audit/report/reporttest"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// TestDestroyDRToDev walks examples/hello up from dev to dr as the README
// shows it, then destroys it back down through the gate with real
// Terraform: a prod destroy before dr's is out of order; dr and prod each
// wait until two distinct sre approvers approved (the qa approver refused
// for separation of duties, one approver not enough); qa needs one
// approver and dev none. Each destroy removes the environment's state,
// the evidence verifies, a further destroy finds nothing applied, and the
// report lists the four decommissions. It runs on each engine.
func TestDestroyDRToDev(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		t.Parallel()
		destroyDRToDev(t, engine)
	})
}

func destroyDRToDev(t *testing.T, engine string) {
	c := newHelloConsumer(t, engine)
	contract, err := os.ReadFile(filepath.Join(c.dir, ".nova", "contract.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c.writeContract(string(contract))
	c.extra = []string{"--trusted-keys", signedCheckout(t, c.dir)}

	gone := func(env string) {
		t.Helper()
		if _, err := os.Stat(c.helloStatePath(env)); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("the state of %s is still there after its destroy (%v)", env, err)
		}
	}

	// Up: dev → qa → prod → dr.
	c.step(ExitPass, "", "run")
	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa")
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	c.step(ExitPass, "", "apply", "--env", "qa")
	for _, env := range []string{"prod", "dr"} {
		c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", env)
		c.decide(ExitPass, "approve", "--env", env, "--as", "sre-oncall")
		c.step(ExitPass, "", "apply", "--env", env)
		if _, err := os.Stat(c.helloStatePath(env)); err != nil {
			t.Fatalf("no state in %s after its apply: %v", env, err)
		}
	}

	// Down. prod first is out of order: dr still runs the contract.
	v := c.step(ExitFail, runner.DestroyOrderViolation, "run", "--destroy", "--env", "prod")
	if msg := stage(v, "gate").Findings[0].Message; !strings.Contains(msg, "dr runs change") {
		t.Errorf("the order violation does not name dr: %s", msg)
	}
	if _, err := os.Stat(c.helloStatePath("prod")); err != nil {
		t.Fatalf("an out-of-order destroy touched prod's state: %v", err)
	}

	// dr and prod: the qa approver is refused, one sre approver is not
	// enough, two are.
	for _, env := range []string{"dr", "prod"} {
		v := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--destroy", "--env", env)
		if v.Changes == nil || v.Changes.Destroy == 0 || v.Changes.Add != 0 {
			t.Fatalf("%s destroy plan: %+v", env, v.Changes)
		}
		c.decide(ExitPass, "approve", "--env", env, "--as", "qa-lead")
		sod := c.step(ExitAwaitingApproval, runner.SeparationOfDutiesViolation, "apply", "--env", env)
		if msg := stage(sod, "gate").Findings[0].Message; !strings.Contains(msg, "qa-lead approved this contract in qa") {
			t.Errorf("%s: the refusal does not say why: %s", env, msg)
		}
		c.decide(ExitPass, "approve", "--env", env, "--as", "sre-oncall")
		one := c.step(ExitAwaitingApproval, runner.DestroyNeedsMoreApprovals, "apply", "--env", env)
		if msg := stage(one, "gate").Findings[0].Message; !strings.Contains(msg, "needs 2 distinct approvers") {
			t.Errorf("%s: a one-approver destroy: %s", env, msg)
		}
		if _, err := os.Stat(c.helloStatePath(env)); err != nil {
			t.Fatalf("a refused destroy touched %s's state: %v", env, err)
		}
		c.decide(ExitPass, "approve", "--env", env, "--as", "sre-lead")
		done := c.step(ExitPass, "", "apply", "--env", env)
		checkDestroyEvents(t, done, "sre-oncall", "sre-lead")
		gone(env)
	}

	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--destroy", "--env", "qa")
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	checkDestroyEvents(t, c.step(ExitPass, "", "apply", "--env", "qa"), "qa-lead")
	gone("qa")
	checkDestroyEvents(t, c.step(ExitPass, "", "run", "--destroy"), "autonomous")
	gone("dev")

	// Nothing left anywhere: a destroy is a no-op that says so.
	again := c.step(ExitPass, "", "run", "--destroy", "--env", "dr")
	if s := stage(again, "change"); !strings.Contains(s.Summary, "nothing to destroy") || stage(again, "plan").Stage != "" {
		t.Errorf("destroying dr again: %+v", again.Stages)
	}

	if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
	page := filepath.Join(t.TempDir(), "report.html")
	c.decide(ExitPass, "report", "--out", page)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	checkDecommissions(t, html, "sre-oncall, sre-lead")
}

// checkDestroyEvents checks that a destroy's run recorded its
// authorization (a destroy, by approvers) and its completion.
func checkDestroyEvents(t *testing.T, v runView, approvers ...string) {
	t.Helper()
	var auth runner.Authorization
	var done runner.DestroyedRecord
	var att runner.AttestationRecord
	var types []string
	for _, e := range readEvents(t, v.EventsFile) {
		types = append(types, e.Type)
		switch e.Type {
		case runner.EventAttestation:
			if err := runner.DecodeEventData(e, &att); err != nil {
				t.Fatal(err)
			}
		case runner.EventApplyAuthorized:
			if err := runner.DecodeEventData(e, &auth); err != nil {
				t.Fatal(err)
			}
		case runner.EventDestroyCompleted:
			if err := runner.DecodeEventData(e, &done); err != nil {
				t.Fatal(err)
			}
		}
	}
	want := approvers
	if approvers[0] == "autonomous" {
		want = nil
	}
	if auth.Operation != runner.OperationDestroy || auth.Approver != approvers[0] || strings.Join(auth.Approvers, " ") != strings.Join(want, " ") {
		t.Errorf("%s: authorization %+v, want a destroy by %v", v.Environment, auth, approvers)
	}
	if done.Digest != v.PlanDigest || !done.StateRemoved || done.Change == "" {
		t.Errorf("%s: nova.destroy.completed %+v (events %v)", v.Environment, done, types)
	}
	if stmt, err := att.Envelope.DecodeStatement(); err != nil || stmt.Predicate.Operation != runner.OperationDestroy || stmt.Predicate.PlanDigest != v.PlanDigest {
		t.Errorf("%s: the attestation does not bind a destroy: %v %+v", v.Environment, err, stmt)
	}
}

// checkDecommissions checks the report's completed destroys: dr, prod, qa
// and dev in that order, each with its state removed, prod's and dr's by
// the two approvers named (comma-separated).
func checkDecommissions(t *testing.T, page []byte, guarded string) {
	t.Helper()
	rows, err := reporttest.Table(page, "Completed destroys")
	if err != nil {
		t.Fatal(err)
	}
	var envs []string
	for _, row := range rows {
		// Contract, Environment, Destroyed, Change, Approvers, Plan, State.
		envs = append(envs, row[1])
		if row[6] != "removed" {
			t.Errorf("decommission row without its state removed: %v", row)
		}
		if (row[1] == "prod" || row[1] == "dr") && row[4] != guarded {
			t.Errorf("the report's %s destroy names approvers %q, want %q", row[1], row[4], guarded)
		}
	}
	if got := strings.Join(envs, " "); got != "dr prod qa dev" {
		t.Errorf("the report's decommissions are %q, want dr prod qa dev", got)
	}
}

// TestDestroyADeletedContract: a change that deletes examples/hello's
// contract, once it ran in dev and qa, is destroyed by `nova run
// --changed` from the trusted base's copy of the contract: qa first (the
// most guarded environment running it), approved by qa's group, then dev,
// then nothing is left. Nothing but a destroy runs on the deleted
// contract.
func TestDestroyADeletedContract(t *testing.T) {
	ctx := t.Context()
	c := newHelloConsumer(t, runner.EngineTerraform)
	c.extra = []string{"--trusted-keys", signedCheckout(t, c.dir)}
	repo, err := git.PlainOpen(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	head, err := repo.Head()
	if err != nil {
		t.Fatal(err)
	}
	base := head.Hash().String()
	many := func(wantCode int, args ...string) manyView {
		t.Helper()
		var stdout, stderr bytes.Buffer
		full := append(append([]string{args[0], "--dir", c.dir, "--state-dir", c.stateDir, "--output", "json", "--changed", "--base", base, "--parallel", "1"}, args[1:]...), c.extra...)
		code := exitCode(run(ctx, Env{Args: full, Getenv: func(k string) string { return c.env[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
		var mv manyView
		if err := json.Unmarshal(stdout.Bytes(), &mv); err != nil || code != wantCode {
			t.Fatalf("nova %s: exit %d, want %d (%v)\n%s\n%s", strings.Join(args, " "), code, wantCode, err, stdout.String(), stderr.String())
		}
		return mv
	}
	approve := func(args ...string) {
		t.Helper()
		var stdout, stderr bytes.Buffer
		args = append([]string{"approve", "--env", "qa", "--as", "qa-lead", "--dir", c.dir}, args...)
		if code := exitCode(run(ctx, Env{Args: args, Getenv: func(k string) string { return c.env[k] }, Stdout: &stdout, Stderr: &stderr})); code != ExitPass {
			t.Fatalf("nova %s: exit %d\n%s%s", strings.Join(args, " "), code, stdout.String(), stderr.String())
		}
	}
	c.step(ExitPass, "", "run")
	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa")
	approve()
	c.step(ExitPass, "", "apply", "--env", "qa")

	wt, err := repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Remove(".nova/contract.yml"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("retire hello", &git.CommitOptions{Author: &object.Signature{Name: "consumer", Email: "consumer@example.com", When: time.Now()}}); err != nil {
		t.Fatal(err)
	}

	// The deleted contract never runs as a change.
	c.step(ExitError, runner.ContractNotFound, "run", "--env", "qa")

	mv := many(ExitAwaitingApproval, "run")
	if len(mv.Contracts) != 1 || mv.Contracts[0].Environment != "qa" || mv.Contracts[0].Reason != string(runner.ApprovalRequired) || len(mv.Deleted) != 0 {
		t.Fatalf("run --changed after the deletion: %+v", mv)
	}
	if stage(mv.Contracts[0].runView, "policy").Stage != "" || !strings.HasPrefix(stage(mv.Contracts[0].runView, "plan").Summary, "destroy plan") {
		t.Errorf("the deleted contract's run is not a destroy: %v", verdicts(mv.Contracts[0].runView))
	}
	// The trusted base still declares the contract: approving and
	// applying its destroy read it there.
	approve("--base", base)
	done := c.step(ExitPass, "", "apply", "--env", "qa", "--base", base)
	checkDestroyEvents(t, done, "qa-lead")

	if mv := many(ExitPass, "run"); len(mv.Contracts) != 1 || mv.Contracts[0].Environment != "dev" || stage(mv.Contracts[0].runView, "apply").Verdict != runner.Pass {
		t.Fatalf("dev's destroy: %+v", mv)
	}
	if mv := many(ExitPass, "run"); len(mv.Contracts) != 1 || !strings.Contains(stage(mv.Contracts[0].runView, "change").Summary, "nothing to destroy") {
		t.Fatalf("destroying again: %+v", mv)
	}
}

// trustedFiles is a forge's trusted base holding files by path.
type trustedFiles map[string]string

func (f trustedFiles) TrustedFile(_ context.Context, path string) ([]byte, runner.BaseCommit, error) {
	data, ok := f[path]
	if !ok {
		return nil, runner.BaseCommit{}, fs.ErrNotExist
	}
	return []byte(data), runner.BaseCommit{Branch: "main", Commit: "c0ffee"}, nil
}

// TestBaseContractThroughTheForge: in a forge's job, a deleted contract
// is read from the trusted base through the forge (the job's checkout may
// hold no base at all), by its path from the repository's root.
func TestBaseContractThroughTheForge(t *testing.T) {
	root := t.TempDir()
	if _, err := git.PlainInit(root, false); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Dir: filepath.Join(root, "svc", "gone"), ContractPath: ".nova/contract.yml"}
	forge := &forgeAdapters{trusted: trustedFiles{
		"svc/gone/.nova/contract.yml": "id: gone\n",
		"svc/big/.nova/contract.yml":  strings.Repeat("#", 1<<20+1),
	}}
	if data, err := baseContract(t.Context(), cfg, forge); err != nil || string(data) != "id: gone\n" {
		t.Fatalf("the deleted contract through the forge: %q %v", data, err)
	}
	cfg.Dir = filepath.Join(root, "svc", "never")
	if _, err := baseContract(t.Context(), cfg, forge); runner.ReasonOf(err) != runner.ContractNotFound {
		t.Errorf("a contract the base never had: %v", err)
	}
	cfg.Dir = filepath.Join(root, "svc", "big")
	if _, err := baseContract(t.Context(), cfg, forge); runner.ReasonOf(err) != runner.ContractTooLarge {
		t.Errorf("a contract over the limit: %v", err)
	}
}

// TestDestroyKilledAfterTerraform: nova killed once terraform reported a
// destroy complete, before recording it, leaves the destroy indeterminate
// like an apply: the state stays, every later run of the contract there
// is refused (APPLY_INDETERMINATE) until an operator resolves it, and
// once resolved as applied the environment runs nothing.
func TestDestroyKilledAfterTerraform(t *testing.T) {
	bin := novaBinary(t)
	w := &crashWorld{t: t, bin: bin, dir: t.TempDir(), home: t.TempDir()}
	aux := t.TempDir()
	w.counts, w.tfLog, w.wrapper = filepath.Join(aux, "applied"), filepath.Join(aux, "terraform.calls"), filepath.Join(aux, "terraform")
	if err := os.WriteFile(w.wrapper, []byte(wrapperScript), 0o755); err != nil {
		t.Fatal(err)
	}
	registry, err := filepath.Abs(filepath.Join("testdata", "registry"))
	if err != nil {
		t.Fatal(err)
	}
	const id = "0c0ffee0-1111-4222-8333-444455556666"
	writeFile(t, filepath.Join(w.dir, ".nova", "contract.yml"), "apiVersion: nova/v1\nid: "+id+"\nstack: counter\nenvironment: dev\ninputs:\n  log: "+w.counts+"\n  revision: r1\n")
	gitCommit(t, w.dir)
	w.env = append(os.Environ(), "HOME="+w.home, "XDG_CONFIG_HOME=", "XDG_DATA_HOME=", "XDG_STATE_HOME=",
		"NOVA_REGISTRY="+registry, "NOVA_TERRAFORM="+w.wrapper, "CRASH_TERRAFORM="+terraformtest.Binary(t, runner.EngineTerraform), "CRASH_LOG="+w.tfLog,
		"NOVA_EVIDENCE_REPO=", "GITHUB_ACTIONS=", "GITEA_ACTIONS=")
	state := filepath.Join(w.home, ".local", "state", "nova", "state", id, "dev", "terraform.tfstate")

	if code, _, out := w.nova("run", "--output", "json"); code != ExitPass {
		t.Fatalf("run: exit %d\n%s", code, out)
	}
	kill := exec.CommandContext(t.Context(), bin, "run", "--destroy", "--dir", w.dir)
	kill.Env = append(slices.Clone(w.env), "CRASH_AT=apply:after", "CRASH_SIG=KILL")
	if out, err := kill.CombinedOutput(); err == nil {
		t.Fatalf("nova survived its kill:\n%s", out)
	}
	if !strings.Contains(readFileT(t, w.tfLog), "apply end 0") {
		t.Fatalf("terraform's destroy did not complete before the kill:\n%s", readFileT(t, w.tfLog))
	}
	if _, err := os.Stat(state); err != nil {
		t.Fatalf("the state of a destroy nobody recorded is gone: %v", err)
	}
	for _, args := range [][]string{{"run", "--destroy"}, {"run"}} {
		if code, v, out := w.nova(append(args, "--output", "json")...); code != ExitFail || v.Reason != string(runner.ApplyIndeterminate) {
			t.Fatalf("nova %v after the killed destroy: exit %d %s\n%s", args, code, v.Reason, out)
		}
	}
	if code, _, out := w.nova("evidence", "resolve", "--contract", id, "--env", "dev", "--outcome", runner.ResolvedApplied, "--note", "the state holds no resource"); code != ExitPass {
		t.Fatalf("resolve: exit %d\n%s", code, out)
	}
	code, v, out := w.nova("run", "--destroy", "--output", "json")
	if code != ExitPass || !strings.Contains(stage(v, "change").Summary, "nothing to destroy") {
		t.Fatalf("destroy after the resolution: exit %d %v\n%s", code, verdicts(v), out)
	}
	if code, _, out := w.nova("evidence", "verify"); code != ExitPass {
		t.Fatalf("evidence verify: exit %d\n%s", code, out)
	}
}

// TestDestroyIsForOneContract: --destroy with --all or --changed is
// refused before anything runs.
func TestDestroyIsForOneContract(t *testing.T) {
	for _, sel := range []string{"--all", "--changed"} {
		code, _, stderr := runCLI(t, "run", "--destroy", sel, "--dir", t.TempDir())
		if code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) || !strings.Contains(stderr, "--destroy destroys the one contract") {
			t.Errorf("run --destroy %s: exit %d\n%s", sel, code, stderr)
		}
	}
}
