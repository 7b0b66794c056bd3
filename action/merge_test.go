package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// mergeChecked is the nova.merge.checked of a run.
func mergeChecked(t *testing.T, v runView) runner.MergeRecord {
	t.Helper()
	for _, e := range readEvents(t, v.EventsFile) {
		if e.Type == runner.EventMergeChecked {
			var m runner.MergeRecord
			if err := runner.DecodeEventData(e, &m); err != nil {
				t.Fatal(err)
			}
			return m
		}
	}
	t.Fatalf("run %s checked no merge: %v", v.RunID, verdicts(v))
	return runner.MergeRecord{}
}

// TestApplyAfterMerge plans and approves examples/hello in qa on a pull
// request's commit (--until-merge: nothing applied in qa there), then
// runs the merged commit (--merged): a merge that is the same change
// applies exactly the approved plan; a merge that changed the contract
// after the approval is MERGE_PLAN_STALE naming the contract, applies
// nothing, and its new plan applies once approved. The evidence verifies.
func TestApplyAfterMerge(t *testing.T) {
	c := newHelloConsumer(t, runner.EngineTerraform)
	repo := newSignedRepo(t, c.dir)
	prCommit := repo.commit("hello", ".")
	c.extra = []string{"--trusted-keys", repo.Keys}
	qaState := c.helloStatePath("qa")

	// The pull request: dev applies, qa plans and waits, is approved,
	// and then holds at the gate for the merge.
	c.step(ExitPass, "", "run", "--until-merge")
	wait := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa", "--until-merge")
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	held := c.step(ExitPass, "", "run", "--env", "qa", "--until-merge")
	if held.PlanDigest != wait.PlanDigest || !strings.Contains(stage(held, "gate").Summary, "applied after the merge") {
		t.Fatalf("the approved pull request's qa run: plan %s (approved %s), gate %q", held.PlanDigest, wait.PlanDigest, stage(held, "gate").Summary)
	}
	if _, err := os.Stat(qaState); !os.IsNotExist(err) {
		t.Fatalf("qa has state before the merge (%v): the pull request applied it", err)
	}

	// The merge is the approved change: a merge commit that touches no
	// part of the change.
	{
		writeFile(t, filepath.Join(c.dir, "MERGED.md"), "merged\n")
		merged := repo.commit("merge", "MERGED.md")
		if v := c.step(ExitPass, "", "run", "--merged"); v.Receipt == "" {
			t.Errorf("dev planned the merged commit again: %v", verdicts(v))
		}
		before := c.world()
		checked := c.step(ExitPass, "", "run", "--env", "qa", "--merged", "--check")
		if after := c.world(); after != before || checked.PlanDigest != wait.PlanDigest {
			t.Fatalf("run --merged --check planned %s (approved %s), and changed the world:\nbefore:\n%s\nafter:\n%s", checked.PlanDigest, wait.PlanDigest, before, after)
		}
		applied := c.step(ExitPass, "", "run", "--env", "qa", "--merged")
		m := mergeChecked(t, applied)
		if !m.Same() || m.Commit != merged || m.ApprovedCommit != prCommit || m.ApprovedPlan != wait.PlanDigest {
			t.Errorf("nova.merge.checked %+v, want commit %s the approved change of %s, plan %s", m, merged, prCommit, wait.PlanDigest)
		}
		if applied.PlanDigest != wait.PlanDigest {
			t.Errorf("qa applied plan %s after the merge, approved was %s", applied.PlanDigest, wait.PlanDigest)
		}
		if got := outputValue(t, c.helloState("qa"), "message__text"); !strings.Contains(got, "Nova") {
			t.Errorf("qa's greeting after the merge: %q", got)
		}
	}

	// The merge changed the contract after the approval.
	{
		contract := filepath.Join(c.dir, ".nova", "contract.yml")
		data, err := os.ReadFile(contract)
		if err != nil {
			t.Fatal(err)
		}
		writeFile(t, contract, strings.Replace(string(data), "audience: Nova", "audience: Review", 1))
		repo.commit("a new audience", ".nova/contract.yml")
		c.step(ExitPass, "", "run", "--until-merge")
		approved := c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa", "--until-merge")
		c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")

		// Merged with another edit of the contract nobody approved.
		writeFile(t, contract, strings.Replace(string(data), "audience: Nova", "audience: Merged", 1))
		repo.commit("merge, with an edit", ".nova/contract.yml")
		c.step(ExitPass, "", "run", "--merged")
		stale := c.step(ExitAwaitingApproval, runner.MergePlanStale, "run", "--env", "qa", "--merged")
		m := mergeChecked(t, stale)
		if m.Same() || len(m.Changed) != 1 || m.Changed[0] != "contract" || m.ApprovedPlan != approved.PlanDigest {
			t.Errorf("nova.merge.checked %+v, want the contract changed since plan %s", m, approved.PlanDigest)
		}
		gate := stage(stale, "gate")
		if len(gate.Findings) != 1 || !strings.Contains(gate.Findings[0].Message, "contract changed after plan "+runner.ShortDigest(approved.PlanDigest)) {
			t.Errorf("the stale plan's finding: %+v", gate.Findings)
		}
		if stale.PlanDigest == approved.PlanDigest {
			t.Errorf("the stale plan has the approved digest %s", stale.PlanDigest)
		}
		if got := outputValue(t, c.helloState("qa"), "message__text"); !strings.Contains(got, "Nova") || strings.Contains(got, "Merged") {
			t.Errorf("qa's greeting after a stale merge: %q, want the earlier one", got)
		}

		// Approved again, the merged commit's own plan applies.
		c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
		applied := c.step(ExitPass, "", "run", "--env", "qa", "--merged")
		if applied.PlanDigest != stale.PlanDigest {
			t.Errorf("qa applied %s, the plan approved after the merge is %s", applied.PlanDigest, stale.PlanDigest)
		}
		if got := outputValue(t, c.helloState("qa"), "message__text"); !strings.Contains(got, "Merged") {
			t.Errorf("qa's greeting after the re-approved merge: %q", got)
		}
	}

	if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
}

// TestApplyAfterMergeFromBundles is the same with the GitHub workflow's
// jobs: plan, then apply the bundle. On the pull request the apply job
// gates and holds (--until-merge); on the merged commit `nova plan
// --merged` makes the approved plan again and `nova apply --merged`
// applies it; a bundle of the merged commit planned without --merged is
// not the approved plan and is refused.
func TestApplyAfterMergeFromBundles(t *testing.T) {
	c := newHelloConsumer(t, runner.EngineTerraform)
	repo := newSignedRepo(t, c.dir)
	repo.commit("hello", ".")
	c.extra = []string{"--trusted-keys", repo.Keys}

	c.step(ExitPass, "", "run")
	planned := c.step(ExitPass, "", "plan", "--env", "qa")
	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "apply", "--env", "qa", "--until-merge", "--bundle", planned.BundleDir, "--digest", planned.PlanDigest)
	c.decide(ExitPass, "approve", "--env", "qa", "--as", "qa-lead")
	c.step(ExitPass, "", "apply", "--env", "qa", "--until-merge", "--bundle", planned.BundleDir, "--digest", planned.PlanDigest)
	if _, err := os.Stat(c.helloStatePath("qa")); !os.IsNotExist(err) {
		t.Fatalf("qa has state before the merge (%v)", err)
	}

	writeFile(t, filepath.Join(c.dir, "MERGED.md"), "merged\n")
	repo.commit("merge", "MERGED.md")
	own := c.step(ExitPass, "", "plan", "--env", "qa")
	if own.PlanDigest == planned.PlanDigest {
		t.Fatalf("a plan of the merged commit without --merged has the approved digest %s", own.PlanDigest)
	}
	refused := c.step(ExitFail, runner.MergePlanStale, "apply", "--env", "qa", "--merged", "--bundle", own.BundleDir, "--digest", own.PlanDigest)
	if !strings.Contains(stage(refused, "merge").Summary, "plan the merged commit (`nova plan --merged`)") {
		t.Errorf("the merged commit's own bundle: %v", verdicts(refused))
	}
	merged := c.step(ExitPass, "", "plan", "--env", "qa", "--merged")
	if merged.PlanDigest != planned.PlanDigest {
		t.Fatalf("the merged commit planned %s, approved was %s", merged.PlanDigest, planned.PlanDigest)
	}
	c.step(ExitPass, "", "apply", "--env", "qa", "--merged", "--bundle", merged.BundleDir, "--digest", merged.PlanDigest)
	if got := outputValue(t, c.helloState("qa"), "message__text"); !strings.Contains(got, "Nova") {
		t.Errorf("qa's greeting after the merge: %q", got)
	}
	if out := c.decide(ExitPass, "evidence", "verify"); !strings.Contains(out, "result           OK") {
		t.Errorf("evidence verify:\n%s", out)
	}
}
