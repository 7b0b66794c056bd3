package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// signedRepo is a consumer checkout whose commits are signed with one
// trusted key, so that every commit's provenance verifies.
type signedRepo struct {
	t    *testing.T
	repo *git.Repository
	key  *openpgp.Entity
	// Keys is the file of the trusted key, for --trusted-keys.
	Keys string
}

func newSignedRepo(t *testing.T, dir string) *signedRepo {
	t.Helper()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	key, err := openpgp.NewEntity("consumer", "", "consumer@example.com", nil)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	w, err := armor.Encode(&buf, openpgp.PublicKeyType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := key.Serialize(w); err != nil {
		t.Fatal(err)
	}
	w.Close()
	r := &signedRepo{t: t, repo: repo, key: key, Keys: filepath.Join(t.TempDir(), "trusted.asc")}
	writeFile(t, r.Keys, buf.String())
	return r
}

// commit commits the paths given (the runs' directory never) and returns
// the commit's id.
func (r *signedRepo) commit(msg string, paths ...string) string {
	r.t.Helper()
	wt, err := r.repo.Worktree()
	if err != nil {
		r.t.Fatal(err)
	}
	for _, p := range paths {
		if _, err := wt.Add(p); err != nil {
			r.t.Fatal(err)
		}
	}
	h, err := wt.Commit(msg, &git.CommitOptions{
		Author:  &object.Signature{Name: "consumer", Email: "consumer@example.com", When: time.Now()},
		SignKey: r.key,
	})
	if err != nil {
		r.t.Fatal(err)
	}
	return h.String()
}

// changeOf is the change a run identified, from its events.
func changeOf(t *testing.T, v runView) string {
	t.Helper()
	for _, e := range readEvents(t, v.EventsFile) {
		if e.Type == runner.EventChangeIdentified {
			var c runner.ChangeRecord
			if err := runner.DecodeEventData(e, &c); err != nil {
				t.Fatal(err)
			}
			return c.ID
		}
	}
	t.Fatalf("run %s identified no change", v.RunID)
	return ""
}

// TestRollbackProdToAnEarlierChange promotes examples/hello's change A
// from dev to prod, then change B; rolls prod back to A, which waits for
// an approval of the rollback's own plan: its requester may not give it,
// nor qa's approver (separation of duties), another member of sre does.
// It then applies, prod's state is A's again, its events name A as the
// target and B as superseded, and the evidence verifies. A change prod
// never applied, and one nobody knows, are refused with their codes.
func TestRollbackProdToAnEarlierChange(t *testing.T) {
	c := newHelloConsumer(t, runner.EngineTerraform)
	// A third member of sre, who approved nothing in qa.
	approvers := filepath.Join(c.dir, runner.ApproversFile)
	data, err := os.ReadFile(approvers)
	if err != nil {
		t.Fatal(err)
	}
	const sre = "members: [sre-oncall, sre-lead, qa-lead]"
	if !strings.Contains(string(data), sre) {
		t.Fatalf("examples/hello's sre group is no longer %q: this test adds sre-backup to it", sre)
	}
	writeFile(t, approvers, strings.Replace(string(data), sre, "members: [sre-oncall, sre-lead, qa-lead, sre-backup]", 1))
	repo := newSignedRepo(t, c.dir)
	repo.commit("hello", ".")
	c.extra = []string{"--trusted-keys", repo.Keys}

	promote := func() string {
		t.Helper()
		change := changeOf(t, c.step(ExitPass, "", "run"))
		c.step(ExitAwaitingApproval, "", "run", "--env", "qa")
		c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
		c.step(ExitPass, "", "apply", "--env", "qa")
		c.step(ExitAwaitingApproval, "", "run", "--env", "prod")
		c.decide(ExitPass, "approve", "--env", "prod", "--as", "sre-oncall")
		c.step(ExitPass, "", "apply", "--env", "prod")
		return change
	}

	changeA := promote()
	greetingA := outputValue(t, c.helloState("prod"), "message__text")

	contract := filepath.Join(c.dir, ".nova", "contract.yml")
	data, err = os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, contract, strings.Replace(string(data), "audience: Nova", "audience: Rollback", 1))
	repo.commit("a new audience", ".nova/contract.yml")
	changeB := promote()
	if changeB == changeA {
		t.Fatal("the new audience is the same change")
	}
	if got := outputValue(t, c.helloState("prod"), "message__text"); got == greetingA {
		t.Fatalf("prod's greeting after B is still A's: %q", got)
	}

	t.Run("refusals", func(t *testing.T) {
		if v := c.step(ExitFail, "", "rollback", "--env", "dr", "--to", changeA[:12]); v.Reason != string(runner.RollbackTargetNotApplied) {
			t.Errorf("dr never applied A: reason %s", v.Reason)
		}
		if v := c.step(ExitError, "", "rollback", "--env", "prod", "--to", "0123456789ab"); v.Reason != string(runner.RollbackTargetUnknown) {
			t.Errorf("unknown change: reason %s", v.Reason)
		}
	})

	// A check of the rollback changes nothing and says what the
	// rollback then does.
	check := func(want int) runView {
		t.Helper()
		before := c.world()
		v := c.step(want, "", "rollback", "--env", "prod", "--to", changeA[:12], "--check")
		if after := c.world(); after != before || !v.Check {
			t.Fatalf("rollback --check changed the world:\nbefore:\n%s\nafter:\n%s", before, after)
		}
		return v
	}

	// The requester stands where an author does.
	c.env["USER"] = "sre-oncall"
	checkedWait := check(ExitAwaitingApproval)
	wait := c.step(ExitAwaitingApproval, "", "rollback", "--env", "prod", "--to", changeA[:12])
	if wait.Reason != string(runner.ApprovalRequired) || stage(wait, "rollback").Verdict != runner.Pass {
		t.Fatalf("rollback: %s %+v", wait.Reason, wait.Stages)
	}
	if out := c.decide(ExitFail, "approve", "--env", "prod", "--as", "sre-oncall"); !strings.Contains(out, "sre-oncall asked for this rollback and may not approve it") {
		t.Errorf("the requester's approval:\n%s", out)
	}
	c.decide(ExitPass, "approve", "--env", "prod", "--as", "qa-lead")
	if v := c.step(ExitAwaitingApproval, "", "rollback", "--env", "prod", "--to", changeA[:12]); v.Reason != string(runner.SeparationOfDutiesViolation) {
		t.Fatalf("rollback approved by qa's approver: %s", v.Reason)
	}
	c.decide(ExitPass, "approve", "--env", "prod", "--as", "sre-backup")
	checked := check(ExitPass)
	done := c.step(ExitPass, "", "rollback", "--env", "prod", "--to", changeA[:12])
	if checkedWait.Reason != wait.Reason || checked.PlanDigest != done.PlanDigest || !strings.Contains(stage(checked, "check").Summary, "would apply plan "+runner.ShortDigest(done.PlanDigest)) {
		t.Errorf("the checks said %s and %q, the rollback %s and applied %s", checkedWait.Reason, stage(checked, "check").Summary, wait.Reason, done.PlanDigest)
	}
	if done.PlanDigest != wait.PlanDigest {
		t.Errorf("the applied plan %s is not the one approved, %s", done.PlanDigest, wait.PlanDigest)
	}
	if got := outputValue(t, c.helloState("prod"), "message__text"); got != greetingA {
		t.Errorf("prod's greeting after the rollback is %q, want A's %q", got, greetingA)
	}

	var requested runner.RollbackRecord
	var auth runner.Authorization
	for _, e := range readEvents(t, done.EventsFile) {
		switch e.Type {
		case runner.EventRollbackRequested:
			if err := runner.DecodeEventData(e, &requested); err != nil {
				t.Fatal(err)
			}
		case runner.EventApplyAuthorized:
			if err := runner.DecodeEventData(e, &auth); err != nil {
				t.Fatal(err)
			}
		}
	}
	if requested.Target != changeA || requested.Supersedes != changeB || requested.RequestedBy != "sre-oncall" || requested.Environment != runner.Prod {
		t.Errorf("nova.rollback.requested %+v, want target %s superseding %s", requested, changeA, changeB)
	}
	if auth.Rollback == nil || auth.Rollback.Target != changeA || auth.Rollback.Supersedes != changeB || auth.Change != changeA || auth.Approver != "sre-backup" {
		t.Errorf("authorization %+v rollback %+v", auth, auth.Rollback)
	}
	// prod runs A again: asked once more, it has nothing to do.
	if v := c.step(ExitPass, "", "rollback", "--env", "prod", "--to", changeA[:12]); v.Receipt == "" {
		t.Errorf("a second rollback to A planned again: %+v", v.Stages)
	}
	if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
	// The export's applies say which apply was a rollback, and of what.
	tables := filepath.Join(t.TempDir(), "tables")
	c.decide(ExitPass, "evidence", "export", "--out", tables)
	var rollbacks []map[string]any
	for _, row := range readJSONL(t, filepath.Join(tables, "applies.jsonl")) {
		if row["rollback_to"] != "" {
			rollbacks = append(rollbacks, row)
		}
	}
	if len(rollbacks) != 1 || rollbacks[0]["rollback_to"] != changeA || rollbacks[0]["supersedes"] != changeB ||
		rollbacks[0]["environment"] != "prod" || rollbacks[0]["outcome"] != "applied" || rollbacks[0]["approver"] != "sre-backup" {
		t.Errorf("applies that roll back: %v", rollbacks)
	}
	// A contract broken at HEAD is what a rollback is for: its id still
	// names the changes, and B's own contract is what is planned.
	writeFile(t, contract, "apiVersion: nova/v1\nid: 3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90\nstack: hello\nnotAField: true\n")
	if v := c.step(ExitAwaitingApproval, "", "rollback", "--env", "prod", "--to", changeB[:12], "--check"); stage(v, "rollback").Verdict != runner.Pass || stage(v, "schema").Verdict != runner.Pass {
		t.Errorf("rollback to B from a broken contract: %v", verdicts(v))
	}
	report := filepath.Join(t.TempDir(), "report.html")
	c.decide(ExitPass, "report", "--out", report)
	page, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	if want := "applied, rollback to change " + changeA[:12] + " superseding " + changeB[:12]; !strings.Contains(string(page), want) {
		t.Errorf("the report does not say %q", want)
	}
}

// TestRollbackNeedsAnEnvironmentAndAChange: a rollback names both, and
// --check is refused where a command has nothing to check.
func TestRollbackNeedsAnEnvironmentAndAChange(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"rollback", "--dir", dir, "--to", "abcdef0"}, "--env is required"},
		{[]string{"rollback", "--dir", dir, "--env", "prod"}, "--to is required"},
		{[]string{"rollback", "--dir", dir, "--env", "prod", "--to", " "}, "--to is required"},
	} {
		code, _, stderr := runCLI(t, append(tc.args, "--state-dir", t.TempDir())...)
		if code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) || !strings.Contains(stderr, tc.want) {
			t.Errorf("nova %s: exit %d\n%s", strings.Join(tc.args, " "), code, stderr)
		}
	}
	for _, cmd := range []string{"plan", "validate", "drift"} {
		if code, _, stderr := runCLI(t, cmd, "--dir", dir, "--check"); code != ExitError || !strings.Contains(stderr, "-check") {
			t.Errorf("nova %s --check: exit %d\n%s", cmd, code, stderr)
		}
	}
}

// TestCheckoutCommitWritesTheDirectoryAsItWas: a contract's directory in
// a larger repository is written as it was at the commit, and only it;
// the checkout is left as it is; a commit the checkout lacks, and a
// directory outside any repository, are ROLLBACK_SOURCE_MISSING.
func TestCheckoutCommitWritesTheDirectoryAsItWas(t *testing.T) {
	root := t.TempDir()
	app := filepath.Join(root, "infra", "app")
	writeFile(t, filepath.Join(app, ".nova", "contract.yml"), "audience: A\n")
	writeFile(t, filepath.Join(app, "bin", "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(app, "bin", "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("contract.yml", filepath.Join(app, ".nova", "link.yml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(root, "other", "secret.txt"), "not the contract's\n")
	repo := newSignedRepo(t, root)
	a := repo.commit("A", ".")
	writeFile(t, filepath.Join(app, ".nova", "contract.yml"), "audience: B\n")
	repo.commit("B", "infra/app/.nova/contract.yml")

	dir, cleanup, err := checkoutCommit(app, a)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(dir, ".nova", "contract.yml")); err != nil || string(b) != "audience: A\n" {
		t.Errorf("the contract at A: %q, %v", b, err)
	}
	if target, err := os.Readlink(filepath.Join(dir, ".nova", "link.yml")); err != nil || target != "contract.yml" {
		t.Errorf("the link at A: %q, %v", target, err)
	}
	if info, err := os.Stat(filepath.Join(dir, "bin", "run.sh")); err != nil || info.Mode().Perm()&0o100 == 0 {
		t.Errorf("the executable at A: %v, %v", info, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "other")); err == nil {
		t.Error("wrote what lies outside the contract's directory")
	}
	if _, err := os.Stat(filepath.Join(dir, "..", "other", "secret.txt")); err == nil {
		t.Error("wrote what lies outside the contract's directory")
	}
	if b, _ := os.ReadFile(filepath.Join(app, ".nova", "contract.yml")); string(b) != "audience: B\n" {
		t.Errorf("the checkout changed: %q", b)
	}
	cleanup()
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the copy outlives its cleanup: %v", err)
	}

	if _, _, err := checkoutCommit(app, strings.Repeat("ab", 20)); runner.ReasonOf(err) != runner.RollbackSourceMissing || !strings.Contains(err.Error(), "fetch-depth: 0") {
		t.Errorf("a commit the checkout lacks: %v", err)
	}
	if _, _, err := checkoutCommit(t.TempDir(), a); runner.ReasonOf(err) != runner.RollbackSourceMissing {
		t.Errorf("no repository: %v", err)
	}
}
