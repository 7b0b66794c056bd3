package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// TestPromotionDevToDR walks examples/hello through every environment as
// the README shows it, in local mode with a signed checkout, once on each
// engine (the contract naming OpenTofu for the second): dev applies on
// its own; qa waits, is approved by qa-lead and applies; prod approved by
// qa-lead too is refused (separation of duties) and applies once
// sre-oncall approves; dr likewise. The evidence verifies at the end, and
// the authorization carries an attestation, naming the engine, that stock
// cosign accepts. The approvals and the evidence are the same on both.
func TestPromotionDevToDR(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		t.Parallel()
		promote(t, engine)
	})
}

func promote(t *testing.T, engine string) {
	ctx := t.Context()
	terraformtest.Binary(t, engine)
	c := &consumer{t: t, dir: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir(), "USER": "dev-author"}, engine: engine}
	if err := os.CopyFS(c.dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	contract, err := os.ReadFile(filepath.Join(c.dir, ".nova", "contract.yml"))
	if err != nil {
		t.Fatal(err)
	}
	c.writeContract(string(contract))
	c.extra = []string{"--trusted-keys", signedCheckout(t, c.dir)}

	step := func(wantCode int, args ...string) runView {
		t.Helper()
		code, v, stderr := c.nova(ctx, args...)
		if code != wantCode {
			t.Fatalf("nova %s: exit %d (reason %s), want %d\n%s", strings.Join(args, " "), code, v.Reason, wantCode, stderr)
		}
		return v
	}
	decide := func(wantCode int, args ...string) string {
		t.Helper()
		if args[0] != "evidence" {
			args = append(args, "--dir", c.dir)
		}
		var stdout, stderr bytes.Buffer
		code := exitCode(run(ctx, Env{Args: args, Getenv: func(k string) string { return c.env[k] }, Stdout: &stdout, Stderr: &stderr}))
		if code != wantCode {
			t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String() + stderr.String()
	}

	step(ExitPass, "run")

	if v := step(ExitAwaitingApproval, "run", "--env", "qa"); v.Reason != string(runner.ApprovalRequired) {
		t.Fatalf("qa: %s", v.Reason)
	}
	// The change's author cannot approve it, even as a listed member.
	c.env["USER"] = "dev-author"
	decide(ExitFail, "approve", "--env", "qa", "--as", "outsider")
	decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	qa := step(ExitPass, "apply", "--env", "qa")
	if stage(qa, "gate").Verdict != runner.Pass {
		t.Fatalf("qa apply: %v", verdicts(qa))
	}

	step(ExitAwaitingApproval, "run", "--env", "prod")
	decide(ExitPass, "approve", "--env", "prod", "--as", "qa-lead")
	sod := step(ExitAwaitingApproval, "apply", "--env", "prod")
	if sod.Reason != string(runner.SeparationOfDutiesViolation) || !strings.Contains(stage(sod, "gate").Findings[0].Message, "sre-oncall") {
		t.Fatalf("prod approved by the qa approver: %s %+v", sod.Reason, stage(sod, "gate").Findings)
	}
	decide(ExitPass, "approve", "--env", "prod", "--as", "sre-oncall")
	prod := step(ExitPass, "apply", "--env", "prod")

	step(ExitAwaitingApproval, "run", "--env", "dr")
	decide(ExitPass, "approve", "--env", "dr", "--as", "sre-oncall")
	step(ExitPass, "apply", "--env", "dr")

	out := decide(ExitPass, "evidence", "verify")
	if !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
	events := readEvents(t, prod.EventsFile)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
	}
	want := []string{runner.EventContractValidated, runner.EventPlanLoaded, runner.EventChangeIdentified, runner.EventApprovalChecked, runner.EventApplyAuthorized, runner.EventAttestation, runner.EventApplyCompleted, runner.EventDecisionOutcome, runner.EventDecisionOutcome}
	if strings.Join(types, " ") != strings.Join(want, " ") {
		t.Errorf("prod apply events %v, want %v", types, want)
	}
	checkAttestation(t, c, events, prod)
	label := engineLabel(t, c)
	for _, e := range events {
		var d struct {
			Engine string `json:"engine"`
		}
		if e.Type != runner.EventApplyCompleted && e.Type != runner.EventChangeIdentified {
			continue
		}
		if err := runner.DecodeEventData(e, &d); err != nil || d.Engine != label {
			t.Errorf("prod's %s names engine %q (%v), want %q", e.Type, d.Engine, err, label)
		}
	}
}

// checkAttestation runs stock cosign over the saved plan the prod apply
// applied and the DSSE envelope its authorization recorded.
func checkAttestation(t *testing.T, c *consumer, events []runner.Event, v runView) {
	t.Helper()
	cosign, err := exec.LookPath("cosign")
	if err != nil {
		t.Fatal("cosign is not on PATH: run `make tools`")
	}
	var att runner.AttestationRecord
	for _, e := range events {
		if e.Type == runner.EventAttestation {
			if err := runner.DecodeEventData(e, &att); err != nil {
				t.Fatal(err)
			}
		}
	}
	stmt, err := att.Envelope.DecodeStatement()
	if err != nil {
		t.Fatal(err)
	}
	if stmt.Predicate.PlanDigest != v.PlanDigest || stmt.Predicate.Approver != "sre-oncall" || len(stmt.Predicate.Approvals) != 1 || stmt.Predicate.Confidence == nil ||
		stmt.Predicate.Engine != engineLabel(t, c) {
		t.Errorf("predicate %+v", stmt.Predicate)
	}
	dir := t.TempDir()
	env, err := json.Marshal(att.Envelope)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "attestation.json"), string(env))
	pub, err := os.ReadFile(signing.LocalSigningPublicKey(filepath.Join(c.env["HOME"], ".config", "nova")))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "cosign.pub"), string(pub))
	verify := func(blob string) (string, error) {
		cmd := exec.CommandContext(t.Context(), cosign, "verify-blob-attestation", "--key", filepath.Join(dir, "cosign.pub"),
			"--insecure-ignore-tlog=true", "--type", runner.AttestationPredicateType, "--signature", filepath.Join(dir, "attestation.json"), blob)
		// No network: cosign's TUF client points at a closed port.
		cmd.Env = append(os.Environ(), "TUF_ROOT="+filepath.Join(dir, "tuf"), "TUF_MIRROR=http://127.0.0.1:1")
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	if out, err := verify(att.PlanFile); err != nil || !strings.Contains(out, "Verified OK") {
		t.Errorf("cosign verify-blob-attestation of the applied plan: %v\n%s", err, out)
	}
	other := filepath.Join(dir, "other.tfplan")
	writeFile(t, other, "not the plan")
	if out, err := verify(other); err == nil {
		t.Errorf("cosign accepted the attestation for another file:\n%s", out)
	}
}
