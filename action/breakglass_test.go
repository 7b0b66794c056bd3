package main

import (
	"bytes"
	"context"
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
	// checked runs a break-glass command with --check: it must say what
	// it would do, exit as the real command, and change nothing.
	checked := func(wantCode int, args ...string) string {
		t.Helper()
		before := c.world()
		out, _ := nova(wantCode, append(args, "--check")...)
		if after := c.world(); after != before {
			t.Fatalf("nova %s --check changed the world:\nbefore:\n%s\nafter:\n%s", strings.Join(args, " "), before, after)
		}
		return out
	}
	if out := checked(ExitPass, "break-glass", "request", "--env", "prod", "--as", "oncall", "--reason", "checkout is down"); !strings.Contains(out, "check, not recorded: recorded break-glass request") {
		t.Errorf("break-glass request --check says:\n%s", out)
	}
	out, _ := nova(ExitPass, "break-glass", "request", "--env", "prod", "--as", "oncall", "--reason", "checkout is down")
	first := id(out, "request")
	checked(ExitFail, "break-glass", "approve", "--env", "prod", "--request", first, "--as", "oncall")
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
	if out := checked(ExitPass, "break-glass", "approve", "--env", "prod", "--request", second, "--as", "sre-2"); !strings.Contains(out, "BREAK-GLASS GRANTED") {
		t.Errorf("the check of the granting approval says:\n%s", out)
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
	// The refused attempts are on record, with who made them.
	if out, _ = nova(ExitPass, "evidence", "query", "--reason", string(runner.BreakGlassSelfApproval)); !strings.Contains(out, runner.EventBreakGlassRefused) || !strings.Contains(out, "oncall") {
		t.Errorf("evidence query --reason %s does not list the refused self-approval:\n%s", runner.BreakGlassSelfApproval, out)
	}
	nova(ExitPass, "report", "--out", report)
	if page := readFile(t, report); !strings.Contains(page, "Break-glass") || !strings.Contains(page, grant) || !strings.Contains(page, "review open") || !strings.Contains(page, "Break-glass reviews open") {
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

// announcements is a forge that keeps the comments and issues it is given.
type announcements struct {
	comments map[string]string
	issues   map[string]string
}

func (a *announcements) UpsertComment(_ context.Context, marker, body string) error {
	a.comments[marker] = body
	return nil
}

func (a *announcements) UpsertIssue(_ context.Context, marker, title, body string) error {
	// A title is plain text on both forges; the body is Markdown.
	a.issues[marker] = body
	return nil
}

func (a *announcements) CloseIssue(context.Context, string, string) error { return nil }

// TestBreakGlassUseIsAnnounced: an authorization under a grant is said on
// stderr, and on a forge on the pull request, or without one in an issue;
// what comes from the change is escaped. An ordinary authorization says
// nothing.
func TestBreakGlassUseIsAnnounced(t *testing.T) {
	st := func(pr int64, grant string) *runner.State {
		return &runner.State{PullRequest: pr, Contract: &runner.Contract{ID: "hello_<b>world</b>", Environment: runner.Prod},
			Plan:          &runner.Plan{Digest: "abc123"},
			Authorization: &runner.Authorization{Digest: "abc123", Environment: runner.Prod, Approver: "break-glass", BreakGlass: grant}}
	}
	for _, tc := range []struct {
		name             string
		st               *runner.State
		comments, issues int
	}{
		{"on a pull request", st(7, "grant-1"), 1, 0},
		{"without one", st(0, "grant-1"), 0, 1},
		{"not under break-glass", st(7, ""), 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &announcements{comments: map[string]string{}, issues: map[string]string{}}
			var stderr bytes.Buffer
			r := &forgeReport{forge: &forgeAdapters{commenter: a, issues: a}, warn: &stderr}
			r.breakGlass(t.Context(), tc.st)
			if len(a.comments) != tc.comments || len(a.issues) != tc.issues {
				t.Fatalf("%d comment(s) and %d issue(s), want %d and %d", len(a.comments), len(a.issues), tc.comments, tc.issues)
			}
			if loud := strings.Contains(stderr.String(), "BREAK-GLASS"); loud != (tc.st.Authorization.BreakGlass != "") {
				t.Errorf("stderr %q", stderr.String())
			}
			for _, body := range []map[string]string{a.comments, a.issues} {
				for marker, b := range body {
					if !strings.HasPrefix(marker, "<!-- nova:breakglass:") || !strings.Contains(b, marker) || !strings.Contains(b, "nova break-glass review --env prod --grant grant-1") {
						t.Errorf("announcement %q:\n%s", marker, b)
					}
					if strings.Contains(b, "<b>") {
						t.Errorf("the contract id is not escaped:\n%s", b)
					}
				}
			}
		})
	}
}

// TestBreakGlassCommands checks the commands' refusals and revocation
// without Terraform: each refusal exits with its reason, and a revoked
// grant or request takes nothing more.
func TestBreakGlassCommands(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	writeFile(t, filepath.Join(dir, runner.ApproversFile), testApprovers+"  breakglass:\n    members: [sre-1, sre-2]\nbreakglass:\n  duration: 1h\n")
	signedCheckout(t, dir)
	home := t.TempDir()
	clock := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	nova := func(wantCode int, args ...string) string {
		t.Helper()
		var stdout, stderr bytes.Buffer
		code := exitCode(run(t.Context(), Env{Args: append([]string{"break-glass"}, append(args, "--dir", dir)...),
			Getenv: func(k string) string { return map[string]string{"HOME": home, "USER": "oncall"}[k] }, Stdout: &stdout, Stderr: &stderr, Now: func() time.Time { return clock }}))
		if code != wantCode {
			t.Fatalf("nova break-glass %s: exit %d, want %d\n%s%s", strings.Join(args, " "), code, wantCode, stdout.String(), stderr.String())
		}
		return stdout.String() + stderr.String()
	}
	want := func(out string, reason runner.Reason) {
		t.Helper()
		if !strings.Contains(out, string(reason)) {
			t.Errorf("want %s in:\n%s", reason, out)
		}
	}
	for _, bad := range [][]string{
		{"request", "--reason", "x"},
		{"request", "--env", "dev", "--reason", "x"},
		{"request", "--env", "prod"},
		{"approve", "--env", "prod"},
		{"revoke", "--env", "prod"},
		{"review", "--env", "prod", "--grant", "g"},
		{"approve", "--env", "prod", "--request", "no-such-request"},
	} {
		want(nova(ExitError, bad...), runner.ConfigInvalid)
	}
	nova(ExitError, "unbreak")

	req := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(nova(ExitPass, "request", "--env", "prod", "--reason", "db down"))[1]
	nova(ExitPass, "approve", "--env", "prod", "--request", req, "--as", "sre-1")
	want(nova(ExitError, "approve", "--env", "qa", "--request", req, "--as", "sre-2"), runner.ConfigInvalid)
	grant := regexp.MustCompile(`grant ([0-9a-f-]{36})`).FindStringSubmatch(nova(ExitPass, "approve", "--env", "prod", "--request", req[:8], "--as", "sre-2"))[1]
	want(nova(ExitError, "review", "--env", "prod", "--grant", grant, "--as", "sre-1", "--note", "n"), runner.ConfigInvalid)
	want(nova(ExitFail, "revoke", "--env", "prod", "--as", "outsider", "--reason", "mine now"), runner.BreakGlassNotInGroup)
	nova(ExitPass, "revoke", "--env", "prod", "--as", "oncall", "--reason", "db is back")
	want(nova(ExitFail, "revoke", "--env", "prod", "--grant", grant, "--as", "sre-1", "--reason", "again"), runner.BreakGlassRevoked)
	want(nova(ExitError, "revoke", "--env", "prod", "--as", "sre-1", "--reason", "no grant holds"), runner.ConfigInvalid)

	// A request waits at most a grant's duration (1h here), and one that
	// was revoked takes no approval.
	late := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(nova(ExitPass, "request", "--env", "prod", "--reason", "db down again"))[1]
	revoked := regexp.MustCompile(`request ([0-9a-f-]{36})`).FindStringSubmatch(nova(ExitPass, "request", "--env", "prod", "--reason", "typo"))[1]
	nova(ExitPass, "revoke", "--env", "prod", "--grant", revoked, "--as", "oncall", "--reason", "asked twice")
	want(nova(ExitFail, "approve", "--env", "prod", "--request", revoked, "--as", "sre-1"), runner.BreakGlassRevoked)
	clock = clock.Add(time.Hour)
	want(nova(ExitFail, "approve", "--env", "prod", "--request", late, "--as", "sre-1"), runner.BreakGlassExpired)
}

// TestBreakGlassNeedsTheGroup: without a breakglass group in the trusted
// approver config nobody may ask.
func TestBreakGlassNeedsTheGroup(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	writeFile(t, filepath.Join(dir, runner.ApproversFile), testApprovers)
	signedCheckout(t, dir)
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{Args: []string{"break-glass", "request", "--env", "prod", "--reason", "x", "--dir", dir},
		Getenv: func(k string) string { return map[string]string{"HOME": t.TempDir(), "USER": "oncall"}[k] }, Stdout: &stdout, Stderr: &stderr}))
	if code != ExitFail || !strings.Contains(stderr.String(), string(runner.BreakGlassNotInGroup)) {
		t.Fatalf("exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
}

// TestScaffoldedApproversShowBreakGlass: the scaffold's approver config
// shows the breakglass group and the grant's duration, commented out, and
// both parse once uncommented.
func TestScaffoldedApproversShowBreakGlass(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "init", "--forge", "github", "--dir", dir); code != ExitPass {
		t.Fatalf("init: exit %d, %s", code, stderr)
	}
	data := readFile(t, filepath.Join(dir, runner.ApproversFile))
	uncommented := strings.NewReplacer(
		"  # breakglass:\n  #   members:", "  breakglass:\n    members:",
		"# breakglass:\n#   duration:", "breakglass:\n  duration:",
	).Replace(data)
	cfg, err := runner.ParseApprovers([]byte(uncommented))
	if err != nil {
		t.Fatalf("the break-glass example does not parse: %v\n%s", err, uncommented)
	}
	if got := cfg.Groups[runner.BreakGlassGroup].Members; len(got) != 2 || cfg.BreakGlassDuration() != 2*time.Hour {
		t.Errorf("breakglass members %v, duration %s\n%s", got, cfg.BreakGlassDuration(), uncommented)
	}
}
