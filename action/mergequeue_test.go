package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
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
	_, stale := queue("the queue's commit for B, after A", "Alpha", "4", ExitFail, runner.MergePlanStale)
	if f := stage(stale, "merge-queue").Findings; len(f) != 1 || !strings.Contains(f[0].Message, "contract changed after plan "+runner.ShortDigest(planC.PlanDigest)) {
		t.Errorf("B's queue commit: %+v", f)
	}
	// The queue dropped B and builds C on A.
	queue("the queue's commit for C, after A", "Alpha", "3", ExitPass, "")

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

	if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
}
