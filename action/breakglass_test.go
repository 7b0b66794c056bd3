package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// TestBreakGlassApplyToProd walks examples/hello to qa as usual, then
// into prod under break-glass with real Terraform, the clock injected:
// the prod plan's confidence is below the threshold (failing unit tests,
// an unverified commit), which a grant accepts. An apply once the grant has expired
// is refused; the requester cannot approve their own request, nor an
// outsider, nor one approver twice; a fresh grant by two members of the
// breakglass group lets the same plan apply without any prod approval.
// The use opens a post-incident review that `nova evidence query
// --open-reviews` and `nova report` show until it is recorded, and the
// evidence verifies.
func TestBreakGlassApplyToProd(t *testing.T) {
	ctx := t.Context()
	terraformtest.Binary(t, runner.EngineTerraform)
	c := &consumer{t: t, dir: t.TempDir(), stateDir: t.TempDir(), env: map[string]string{"HOME": t.TempDir(), "USER": "dev-author"}}
	if err := os.CopyFS(c.dir, os.DirFS(filepath.Join("..", "examples", "hello"))); err != nil {
		t.Fatal(err)
	}
	approvers := filepath.Join(c.dir, runner.ApproversFile)
	data, err := os.ReadFile(approvers)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, approvers, string(data)+"  breakglass:\n    members: [sre-1, sre-2, oncall]\n")
	trusted := []string{"--trusted-keys", signedCheckout(t, c.dir)}

	clock := time.Now().UTC()
	nova := func(wantCode int, args ...string) (string, runView) {
		t.Helper()
		full := append([]string{args[0]}, args[1:]...)
		if args[0] != "evidence" && args[0] != "report" {
			full = append(full, "--dir", c.dir)
		}
		pipeline := slices.Contains(pipelineCommands, args[0])
		if pipeline {
			full = append(full, "--state-dir", c.stateDir, "--output", "json")
		}
		var stdout, stderr bytes.Buffer
		code := exitCode(run(ctx, Env{Args: full, Getenv: func(k string) string { return c.env[k] }, Environ: os.Environ(),
			Stdout: &stdout, Stderr: &stderr, Now: func() time.Time { return clock }}))
		if code != wantCode {
			t.Fatalf("nova %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		var v runView
		if pipeline {
			if err := json.Unmarshal(stdout.Bytes(), &v); err != nil {
				t.Fatalf("nova %v: stdout is not one JSON document: %v\n%s", args, err, stdout.String())
			}
			return stderr.String(), v
		}
		return stdout.String() + stderr.String(), v
	}
	id := func(out, pattern string) string {
		t.Helper()
		m := regexp.MustCompile(pattern + ` ([0-9a-f-]{36})`).FindStringSubmatch(out)
		if m == nil {
			t.Fatalf("no id after %q in:\n%s", pattern, out)
		}
		return m[1]
	}

	nova(ExitPass, append([]string{"run"}, trusted...)...)
	nova(ExitAwaitingApproval, append([]string{"run", "--env", "qa"}, trusted...)...)
	nova(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	nova(ExitPass, append([]string{"apply", "--env", "qa"}, trusted...)...)

	// The hotfix's unit tests fail and its commit is not verified: prod's
	// score is below the threshold, which only a grant accepts.
	writeFile(t, filepath.Join(c.dir, "reports", "unit.xml"), `<testsuite name="hello" tests="4" failures="2">
  <testcase name="a"/><testcase name="b"/>
  <testcase name="c"><failure message="timeout"/></testcase><testcase name="d"><failure message="timeout"/></testcase>
</testsuite>`)
	if _, v := nova(ExitFail, "plan", "--env", "prod"); v.Reason != string(runner.ConfidenceBelowThreshold) {
		t.Fatalf("prod plan without a grant: %s", v.Reason)
	}
	out, _ := nova(ExitPass, "break-glass", "request", "--env", "prod", "--as", "oncall", "--reason", "checkout is down")
	first := id(out, "request")
	nova(ExitPass, "break-glass", "approve", "--env", "prod", "--request", first, "--as", "sre-1")
	out, _ = nova(ExitPass, "break-glass", "approve", "--env", "prod", "--request", first, "--as", "sre-2")
	expired := id(out, "GRANTED: grant")
	_, plan := nova(ExitPass, "plan", "--env", "prod")
	if s := stage(plan, "plan-confidence"); !strings.Contains(s.Summary, "BREAK-GLASS") {
		t.Fatalf("prod plan-confidence under the grant: %+v", s)
	}

	clock = clock.Add(runner.DefaultBreakGlassDuration + time.Minute)
	if _, v := nova(ExitFail, "apply", "--env", "prod"); v.Reason != string(runner.BreakGlassExpired) || !strings.Contains(stage(v, "gate").Findings[0].Message, expired) {
		t.Fatalf("prod apply after the grant expired: %s %+v", v.Reason, stage(v, "gate").Findings)
	}

	out, _ = nova(ExitPass, "break-glass", "request", "--env", "prod", "--as", "oncall", "--reason", "checkout is still down")
	second := id(out, "request")
	for _, refused := range []struct {
		as     string
		reason runner.Reason
	}{{"oncall", runner.BreakGlassSelfApproval}, {"outsider", runner.BreakGlassNotInGroup}} {
		if out, _ := nova(ExitFail, "break-glass", "approve", "--env", "prod", "--request", second, "--as", refused.as); !strings.Contains(out, string(refused.reason)) {
			t.Errorf("approval by %s: %s", refused.as, out)
		}
	}
	nova(ExitPass, "break-glass", "approve", "--env", "prod", "--request", second, "--as", "sre-1")
	if out, _ := nova(ExitFail, "break-glass", "approve", "--env", "prod", "--request", second, "--as", "sre-1"); !strings.Contains(out, string(runner.BreakGlassDuplicateApproval)) {
		t.Errorf("second approval by sre-1: %s", out)
	}
	out, _ = nova(ExitPass, "break-glass", "approve", "--env", "prod", "--request", second, "--as", "sre-2")
	grant := id(out, "GRANTED: grant")

	clock = clock.Add(time.Minute)
	stderr, prod := nova(ExitPass, "apply", "--env", "prod")
	if !strings.Contains(stderr, "BREAK-GLASS") || !strings.Contains(stderr, grant) {
		t.Errorf("the break-glass apply said nothing loud on stderr:\n%s", stderr)
	}
	events := readEvents(t, prod.EventsFile)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
		if e.Type == runner.EventApprovalRecorded {
			t.Errorf("prod applied with an approval recorded: %s", e.Data)
		}
		if e.Type == runner.EventApplyAuthorized {
			var a runner.Authorization
			if err := runner.DecodeEventData(e, &a); err != nil || a.BreakGlass != grant {
				t.Errorf("authorization %+v (%v), want one under grant %s", a, err, grant)
			}
		}
	}
	if !slices.Contains(types, runner.EventBreakGlassUsed) || !slices.Contains(types, runner.EventApplyCompleted) {
		t.Fatalf("prod apply events %v", types)
	}
	if a := stage(prod, "apply"); a.Verdict != runner.Pass || !strings.Contains(a.Summary, "2 added") {
		t.Fatalf("prod apply: %+v", a)
	}

	report := filepath.Join(t.TempDir(), "report.html")
	out, _ = nova(ExitPass, "evidence", "query", "--open-reviews")
	if !strings.Contains(out, runner.EventBreakGlassUsed) || !strings.Contains(out, "prod") {
		t.Errorf("evidence query --open-reviews lists no open review:\n%s", out)
	}
	if out, _ = nova(ExitPass, "evidence", "query", "--approver", "sre-2", "--type", "nova.breakglass.*"); strings.Count(out, runner.EventBreakGlassGranted) != 2 || !strings.Contains(out, runner.EventBreakGlassUsed) {
		t.Errorf("evidence query --approver sre-2 does not list the grants and the use:\n%s", out)
	}
	nova(ExitPass, "report", "--out", report)
	if page := readFile(t, report); !strings.Contains(page, "Break-glass") || !strings.Contains(page, grant) || !strings.Contains(page, "review open") {
		t.Errorf("the report shows no open break-glass review for grant %s", grant)
	}

	if out, _ := nova(ExitFail, "break-glass", "review", "--env", "prod", "--grant", grant, "--as", "outsider", "--note", "PIR-12"); !strings.Contains(out, string(runner.BreakGlassNotInGroup)) {
		t.Errorf("review by an outsider: %s", out)
	}
	nova(ExitPass, "break-glass", "review", "--env", "prod", "--grant", grant, "--as", "sre-1", "--note", "PIR-12: checkout outage")
	if out, _ := nova(ExitPass, "evidence", "query", "--open-reviews"); strings.Contains(out, runner.EventBreakGlassUsed) {
		t.Errorf("a recorded review is still listed as open:\n%s", out)
	}
	nova(ExitPass, "report", "--out", report)
	if page := readFile(t, report); !strings.Contains(page, "review recorded") {
		t.Errorf("the report does not show the review recorded")
	}
	if out, _ := nova(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
