package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/audit/report/reporttest"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/local"
)

// TestMergeQueue drives three pull requests of examples/hello through a
// merge queue with real Terraform and a real git history. A (audience
// Alpha) and C (built on A, repeat 3) are approved in qa for what the
// queue merges; B (repeat 4, built on the old main) is approved too, but
// the queue's commit for B is A's contract with B's edit, which nobody
// approved: `run --merge-queue` fails it with MERGE_PLAN_STALE naming the
// contract, and the queue drops it. Each check changes nothing. Merged in
// order, A's merged commit applies A's approved plan in qa; C's merged
// commit is the approved change, but qa has applied A since C's approval,
// which therefore counts no more (the gate's rule): it is planned against
// A's state, waits for a new approval, saying why, and then applies. A late run of A's merged
// commit is refused with MERGE_SUPERSEDED in dev and qa, leaving both on
// C. The evidence verifies.
func TestMergeQueue(t *testing.T) {
	c := newHelloConsumer(t, runner.EngineTerraform)
	repo := newSignedRepo(t, c.dir)
	repo.commit("hello", ".")
	c.extra = []string{"--trusted-keys", repo.Keys}
	contract := filepath.Join(c.dir, ".nova", "contract.yml")
	original, err := os.ReadFile(contract)
	if err != nil {
		t.Fatal(err)
	}
	// edit commits the contract with audience and repeat.
	edit := func(msg, audience, repeat string) string {
		t.Helper()
		s := strings.Replace(string(original), "audience: Nova", "audience: "+audience, 1)
		s = strings.Replace(s, "repeat: 2", "repeat: "+repeat, 1)
		writeFile(t, contract, s)
		return repo.commit(msg, ".nova/contract.yml")
	}
	// approveOnPR is a pull request's runs at its head: dev applies, qa
	// plans, is approved and holds for the merge.
	approveOnPR := func(name, audience, repeat string) runView {
		t.Helper()
		edit("pull request "+name, audience, repeat)
		c.step(ExitPass, "", "run", "--until-merge")
		wait := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa", "--until-merge")
		c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
		c.step(ExitPass, "", "run", "--env", "qa", "--until-merge")
		return wait
	}
	planA := approveOnPR("A", "Alpha", "2")
	approveOnPR("B", "Nova", "4")
	planC := approveOnPR("C, on A", "Alpha", "3")
	changeA, changeC := changeOf(t, planA), changeOf(t, planC)

	// queue checks the queue's commit for an entry in every environment;
	// it changes nothing, whatever it finds.
	queue := func(msg, audience, repeat string, wantCode int, wantReason runner.Reason) (string, runView) {
		t.Helper()
		commit := edit(msg, audience, repeat)
		before := c.world()
		var qa runView
		for _, env := range []string{"dev", "qa", "prod", "dr"} {
			code, reason := ExitPass, runner.Reason("")
			if env == "qa" {
				code, reason = wantCode, wantReason
			}
			v := c.step(code, reason, "run", "--env", env, "--merge-queue")
			if v.PlanDigest != "" || stage(v, "plan").Stage != "" {
				t.Errorf("the queue check of %s planned: %v", env, verdicts(v))
			}
			if env == "qa" {
				qa = v
			}
		}
		if after := c.world(); after != before {
			t.Fatalf("the queue check of %s changed the world:\nbefore:\n%s\nafter:\n%s", msg, before, after)
		}
		return commit, qa
	}
	queue("the queue's commit for A", "Alpha", "2", ExitPass, "")
	// The plans above were made outside a forge, for no pull request: in
	// the queue's job, pull request #12 (the queue's branch names it) has
	// none of its own approved, and the queue's commit is none approved.
	edit("the queue's commit for #12", "Nova", "7")
	if code, out := c.queueJob(t, "qa", true); code != ExitPass || !strings.Contains(out, "nothing was approved in qa for pull request #12 since it last applied") {
		t.Errorf("the merge queue's job on #12's entry: exit %d:\n%s", code, out)
	}
	// Without the public keys it trusts no event of the chain, and
	// without the evidence repository it has none to compare with: an
	// error, never a pass.
	if code, out := c.queueJob(t, "qa", false); code != ExitError {
		t.Errorf("the merge queue's job without the public keys: exit %d:\n%s", code, out)
	}
	if code, out := c.queueJob(t, "qa", true, "INPUT_EVIDENCE-REPO"); code != ExitError || !strings.Contains(out, "no evidence-repo is set") {
		t.Errorf("the merge queue's job without the evidence repository: exit %d:\n%s", code, out)
	}
	_, stale := queue("the queue's commit for B, after A", "Alpha", "4", ExitFail, runner.MergePlanStale)
	if f := stage(stale, "merge-queue").Findings; len(f) != 1 || !strings.Contains(f[0].Message, "contract changed after plan "+runner.ShortDigest(planC.PlanDigest)) {
		t.Errorf("B's queue commit: %+v", f)
	}
	// The queue dropped B and builds C on A.
	queue("the queue's commit for C, after A", "Alpha", "3", ExitPass, "")
	// The same, as the merge queue's job runs it: no key, no secret, the
	// pull request named by the queue's branch, the chain read with the
	// public keys alone.
	before := c.world()
	if code, out := c.queueJob(t, "qa", true); code != ExitPass || !strings.Contains(out, "approved in qa as plan "+runner.ShortDigest(planC.PlanDigest)) {
		t.Errorf("the merge queue's job on C's entry: exit %d:\n%s", code, out)
	}
	if after := c.world(); after != before {
		t.Errorf("the merge queue's job changed the world:\nbefore:\n%s\nafter:\n%s", before, after)
	}

	// The queue merges A, then C; their merged runs run in that order.
	mergedA := edit("merge A", "Alpha", "2")
	c.step(ExitPass, "", "run", "--merged")
	if v := c.step(ExitPass, "", "run", "--env", "qa", "--merged"); v.PlanDigest != planA.PlanDigest {
		t.Errorf("qa applied %s for A's merge, A's approved plan is %s", v.PlanDigest, planA.PlanDigest)
	}
	mergedC := edit("merge C", "Alpha", "3")
	c.step(ExitPass, "", "run", "--merged")
	moved := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa", "--merged")
	if s := stage(moved, "merge").Summary; !strings.Contains(s, "plan "+runner.ShortDigest(planC.PlanDigest)+" of this change was approved in qa before it last applied another") || moved.PlanDigest == planC.PlanDigest {
		t.Errorf("C's merge after A applied: %q, plan %s", s, moved.PlanDigest)
	}
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	if v := c.step(ExitPass, "", "run", "--env", "qa", "--merged"); v.PlanDigest != moved.PlanDigest {
		t.Errorf("qa applied %s for C's merge, approved was %s", v.PlanDigest, moved.PlanDigest)
	}

	// A's merged run, run again late: it would take dev and qa back.
	wt, err := repo.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	if err := wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(mergedA), Force: true}); err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"dev", "qa"} {
		late := c.step(ExitFail, runner.MergeSuperseded, "run", "--env", env, "--merged")
		want := "the merged commit " + runner.ShortDigest(mergedA) + " comes before " + runner.ShortDigest(mergedC) + ", which " + env + " applied"
		if f := stage(late, "merge").Findings; len(f) != 1 || !strings.Contains(f[0].Message, want) {
			t.Errorf("A's late merged run in %s: %+v, want %q", env, f, want)
		}
		if stage(late, "plan").Stage != "" {
			t.Errorf("A's late merged run in %s planned: %v", env, verdicts(late))
		}
		if got := outputValue(t, c.helloState(env), "echo__echoed"); strings.Count(got, "Alpha") != 3 {
			t.Errorf("%s's greeting after A's late run: %q, want C's (three times Alpha)", env, got)
		}
	}

	// The report's timeline names each apply's change: qa applied A's
	// plan, planned from A's pull request head, and C's, planned from its
	// merged commit; dev applied both on the pull requests and merged.
	page := filepath.Join(t.TempDir(), "report.html")
	c.decide(ExitPass, "report", "--out", page)
	html, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := reporttest.Table(html, "Applies in the timeline")
	if err != nil {
		t.Fatal(err)
	}
	var qa []string
	for _, row := range rows {
		if row[2] == "qa" {
			qa = append(qa, row[1])
		}
	}
	if want := []string{changeA[:12], changeC[:12]}; !slices.Equal(qa, want) {
		t.Errorf("the report's timeline names %v for qa's applies, want the changes %v", qa, want)
	}

	if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
}

// queueJob runs `nova run --merge-queue` in env as the merge queue's job
// of nova init's GitHub scaffold does, on the commit checked out: the
// container action's inputs, GitHub's merge_group event for pull request
// 12, no signing key and no secret, the evidence repository read with
// the public keys alone (none without publicKeys), less the variables
// unset names. It returns the exit code and what the action
// wrote.
func (c *consumer) queueJob(t *testing.T, env string, publicKeys bool, unset ...string) (int, string) {
	t.Helper()
	paths, err := evidence.DefaultLocalPaths(func(k string) string { return c.env[k] })
	if err != nil {
		t.Fatal(err)
	}
	eventKey, err := os.ReadFile(paths.SigningPublicKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	commitKey, err := os.ReadFile(paths.CommitPublicKeyFile())
	if err != nil {
		t.Fatal(err)
	}
	head, err := local.HeadCommit(c.dir)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	event := filepath.Join(tmp, "event.json")
	writeFile(t, event, `{"action": "checks_requested", "merge_group": {"head_sha": "`+head+`", "head_ref": "refs/heads/gh-readonly-queue/main/pr-12-`+head+`", "base_ref": "refs/heads/main"}}`)
	output := filepath.Join(tmp, "output")
	writeFile(t, output, "")
	vars := map[string]string{
		"GITHUB_ACTIONS": "true", "GITHUB_EVENT_NAME": "merge_group", "GITHUB_EVENT_PATH": event, "GITHUB_SHA": head,
		"GITHUB_REPOSITORY": "consumer/hello", "GITHUB_WORKSPACE": c.dir, "GITHUB_OUTPUT": output, "HOME": filepath.Join(tmp, "home"),
		"INPUT_COMMAND": "run", "INPUT_MERGE": "merge-queue", "INPUT_DIR": c.dir, "INPUT_ENVIRONMENT": env,
		"INPUT_EVIDENCE-REPO": paths.Repo, "INPUT_EVIDENCE-PUBLIC-KEY": string(eventKey), "INPUT_COMMIT-PUBLIC-KEY": string(commitKey),
		"INPUT_CONTRACT": ".nova/contract.yml", "INPUT_OUTPUT": "text", "INPUT_TRUSTED-KEYS": "",
	}
	if !publicKeys {
		unset = append(unset, "INPUT_EVIDENCE-PUBLIC-KEY", "INPUT_COMMIT-PUBLIC-KEY")
	}
	for _, k := range unset {
		delete(vars, k)
	}
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{Getenv: func(k string) string { return vars[k] }, Environ: os.Environ(), Stdout: &stdout, Stderr: &stderr}))
	out, err := os.ReadFile(output)
	if err != nil {
		t.Fatal(err)
	}
	return code, stdout.String() + stderr.String() + string(out)
}
