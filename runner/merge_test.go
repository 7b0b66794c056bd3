package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestMergeCheckNamesWhatChanged: the plan approved for qa since it last
// applied is the one a merged run compares with; a merged change that
// differs names the contract, each stack or module whose digest moved and
// the engine, and the gate's wait says MERGE_PLAN_STALE with them; the
// same change binds the approved plan's commit.
func TestMergeCheckNamesWhatChanged(t *testing.T) {
	approved := ChangeRecord{ID: "c1", Contract: "k1", Content: map[string]string{"stack:hello@1.0.0": "s1", "module:greeting@1.0.0": "m1"}, Engine: "terraform 1.11.4"}
	chain := []Event{
		event(t, "1", EventChangeIdentified, "qa", "r1", "change", approved),
		event(t, "2", EventPlanCreated, "qa", "r1", "plan", PlanRecord{Digest: "d1", Commit: "pr-head", Change: "c1"}),
		event(t, "3", EventPlanCreated, "qa", "r2", "plan", PlanRecord{Digest: "d0", Commit: "older", Change: "c0"}),
		event(t, "4", EventApprovalRecorded, "qa", "r1", "", ApprovalRecord{Environment: QA, PlanDigest: "d1", Approver: "qa-lead"}),
		// An approval in prod of another plan is not qa's.
		event(t, "5", EventApprovalRecorded, "prod", "r3", "", ApprovalRecord{Environment: Prod, PlanDigest: "d0", Approver: "sre"}),
	}
	for i := range chain {
		chain[i].Seq = int64(i + 1)
	}
	var pr int64
	check := func(change ChangeRecord) *State {
		t.Helper()
		st := &State{Contract: &Contract{ID: "app", Environment: QA}, Commit: "merged", Change: &change, PullRequest: pr}
		res, err := (&MergeCheck{Evidence: chainFunc(func(context.Context, string) ([]Event, error) { return chain, nil }), History: linearHistory{}}).Run(t.Context(), st)
		if err != nil || res.Verdict != Pass || res.Event != EventMergeChecked {
			t.Fatalf("merge check: %+v %v", res, err)
		}
		return st
	}

	same := check(approved)
	if !same.Merge.Same() || same.DigestCommit() != "pr-head" || same.Merge.ApprovedPlan != "d1" {
		t.Errorf("the approved change merged: %+v binds %s", same.Merge, same.DigestCommit())
	}
	if why := same.Merge.stale("d1"); why != "" {
		t.Errorf("the approved plan is stale: %s", why)
	}
	if why := same.Merge.stale("d2"); !strings.Contains(why, "moved since the approval") {
		t.Errorf("the same change planned otherwise: %q", why)
	}

	moved := approved
	moved.ID, moved.Contract, moved.Engine = "c2", "k2", "terraform 1.11.5"
	moved.Content = map[string]string{"stack:hello@1.0.0": "s1", "module:greeting@1.0.0": "m2", "module:extra@1.0.0": "x1"}
	st := check(moved)
	want := []string{"contract", "module:extra@1.0.0", "module:greeting@1.0.0", "engine (terraform 1.11.4 → terraform 1.11.5)"}
	if st.Merge.Same() || !slices.Equal(st.Merge.Changed, want) || st.DigestCommit() != "merged" {
		t.Errorf("a changed merge: %+v binds %s, want changed %v binding its own commit", st.Merge, st.DigestCommit(), want)
	}
	if why := st.Merge.stale("d3"); !strings.Contains(why, "contract, module:extra@1.0.0, module:greeting@1.0.0, engine") {
		t.Errorf("the stale plan's message: %q", why)
	}

	// Another pull request's plan approved since: the merge of c1 is
	// still compared with c1's approved plan.
	chain = append(chain,
		event(t, "6", EventPlanCreated, "qa", "r4", "plan", PlanRecord{Digest: "d9", Commit: "other-head", Change: "c9"}),
		event(t, "7", EventApprovalRecorded, "qa", "r4", "", ApprovalRecord{Environment: QA, PlanDigest: "d9", Approver: "qa-lead"}))
	for i := range chain {
		chain[i].Seq = int64(i + 1)
	}
	if st := check(approved); !st.Merge.Same() || st.Merge.ApprovedPlan != "d1" {
		t.Errorf("the merge of c1 after another approval: %+v", st.Merge)
	}
	if st := check(moved); st.Merge.ApprovedPlan != "d9" || st.Merge.Same() {
		t.Errorf("a merge nobody approved is compared with %+v, want the newest approved plan d9", st.Merge)
	}
	// On a forge, with its own pull request's: c1's was pull request 7's.
	chain[1] = event(t, "2", EventPlanCreated, "qa", "r1", "plan", PlanRecord{Digest: "d1", Commit: "pr-head", Change: "c1", PullRequest: 7})
	chain[1].Seq = 2
	pr = 7
	if st := check(moved); st.Merge.ApprovedPlan != "d1" || !slices.Contains(st.Merge.Changed, "contract") {
		t.Errorf("pull request 7's merge nobody approved is compared with %+v, want its own approved plan d1", st.Merge)
	}
	pr = 0

	// Nothing approved: nothing to compare with, and no stale plan.
	chain = chain[:3]
	none := check(moved)
	if none.Merge.ApprovedPlan != "" || none.Merge.stale("d3") != "" || none.DigestCommit() != "merged" {
		t.Errorf("nothing approved: %+v", none.Merge)
	}
}

// TestGateHoldsUntilMerge: on the pull request (UntilMerge) an approved
// guarded plan stops at the gate with no authorization, so no apply is
// left open, and an environment after a guarded one passes without a
// plan to approve; without it, the same plans are authorized and refused.
func TestGateHoldsUntilMerge(t *testing.T) {
	w := newWorld(t)
	w.change = "change-2"
	w.applied(Dev, "change-2")
	w.approve(QA, digestA, claim("qa-lead", QA, digestA, "r1"))
	gate := Gate{Evidence: w, Approvers: StaticApprovers{w.approvers}, Membership: w, Now: func() time.Time { return w.now }}
	state := func(env Environment, until bool) *State {
		return &State{Contract: &Contract{ID: contractID, Environment: env}, Plan: &Plan{Digest: digestA}, Commit: "c0ffee", Change: &ChangeRecord{ID: "change-2"}, UntilMerge: until}
	}
	for _, env := range []Environment{QA, Prod} {
		st := state(env, true)
		res, err := gate.Run(t.Context(), st)
		if err != nil || res.Verdict != Pass || !res.Done || res.Event != "" || st.Authorization != nil || !strings.Contains(res.Summary, "after the merge") {
			t.Errorf("%s until merge: %+v %v, authorization %+v", env, res, err, st.Authorization)
		}
	}
	if res, err := gate.Run(t.Context(), state(QA, false)); err != nil || res.Verdict != Pass || res.Event != EventApplyAuthorized {
		t.Errorf("qa applying on the pull request: %+v %v", res, err)
	}
	if res, err := gate.Run(t.Context(), state(Prod, false)); err != nil || res.Verdict != Fail || res.Findings[0].Reason != PromotionOrderViolation {
		t.Errorf("prod applying on the pull request before qa: %+v %v", res, err)
	}
}

// linearHistory is a history of commits named m1, m2, …, each the parent
// of the next; any other name is not in the checkout.
type linearHistory struct{}

func (linearHistory) Precedes(a, b string) (bool, error) {
	var na, nb int
	if _, err := fmt.Sscanf(a, "m%d", &na); err != nil {
		return false, fmt.Errorf("%w: %s", ErrCommitUnknown, a)
	}
	if _, err := fmt.Sscanf(b, "m%d", &nb); err != nil {
		return false, fmt.Errorf("%w: %s", ErrCommitUnknown, b)
	}
	return na < nb, nil
}

// TestMergeCheckRefusesToGoBack: once an environment applied merged
// commit m2, a merged run of m1 (its ancestor) is refused with
// MERGE_SUPERSEDED, in dev as in qa, before anything is planned; m2 again
// and its descendant m3 go on; an applied commit the checkout does not
// hold is MERGE_ORDER_UNKNOWN, never taken for "after". Applies of runs
// that were not on a merged commit, and merge checks whose run applied
// nothing, do not count.
func TestMergeCheckRefusesToGoBack(t *testing.T) {
	var chain []Event
	add := func(e Event) {
		e.Seq = int64(len(chain) + 1)
		chain = append(chain, e)
	}
	for _, env := range []string{"dev", "qa"} {
		add(event(t, "m-"+env+"-1", EventMergeChecked, env, "run-m2-"+env, "merge", MergeRecord{Environment: Environment(env), Commit: "m2", Change: "c2"}))
		add(event(t, "a-"+env+"-1", EventApplyCompleted, env, "run-m2-"+env, "apply", map[string]string{}))
		// m4 was checked and waits: nothing applied it.
		add(event(t, "m-"+env+"-2", EventMergeChecked, env, "run-m4-"+env, "merge", MergeRecord{Environment: Environment(env), Commit: "m4", Change: "c4"}))
		// A pull request's run applied its head: not a merged commit.
		add(event(t, "a-"+env+"-2", EventApplyCompleted, env, "run-pr-"+env, "apply", map[string]string{}))
	}
	check := func(env Environment, commit string) (*State, Result, error) {
		st := &State{Contract: &Contract{ID: "app", Environment: env}, Commit: commit, Change: &ChangeRecord{ID: "c-" + commit}}
		res, err := (&MergeCheck{Evidence: chainFunc(func(context.Context, string) ([]Event, error) { return chain, nil }), History: linearHistory{}}).Run(t.Context(), st)
		return st, res, err
	}
	for _, env := range []Environment{Dev, QA} {
		if got := LastMergedApplied(chain, env); got != "m2" {
			t.Errorf("%s applied merged commit %q last, want m2", env, got)
		}
		st, res, err := check(env, "m1")
		if err != nil || res.Verdict != Fail || len(res.Findings) != 1 || res.Findings[0].Reason != MergeSuperseded || st.Merge.SupersededBy != "m2" || res.Event != EventMergeChecked {
			t.Errorf("%s, merged m1 after m2: %+v %v", env, res, err)
		} else if !strings.Contains(res.Findings[0].Message, "comes before m2") {
			t.Errorf("%s: the refusal says %q", env, res.Findings[0].Message)
		}
		for _, commit := range []string{"m2", "m3"} {
			if _, res, err := check(env, commit); err != nil || res.Verdict != Pass {
				t.Errorf("%s, merged %s after m2: %+v %v", env, commit, res, err)
			}
		}
		if _, res, err := check(env, "elsewhere"); ReasonOf(err) != MergeOrderUnknown || !errors.Is(err, ErrCommitUnknown) {
			t.Errorf("%s, a commit the checkout does not order: %+v %v", env, res, err)
		}
	}
	if _, res, err := check(Prod, "m1"); err != nil || res.Verdict != Pass {
		t.Errorf("prod applied no merged commit, merged m1: %+v %v", res, err)
	}
}

// TestQueueCheck: a merge queue's commit that is the change approved in
// qa passes; one whose change moved (a pull request ahead in the queue
// edited the contract) fails with MERGE_PLAN_STALE naming the contract;
// on a forge, another pull request's approval is not this one's to
// compare with; dev and an environment nothing was approved in pass.
func TestQueueCheck(t *testing.T) {
	approved := ChangeRecord{ID: "c1", Contract: "k1", Content: map[string]string{"stack:hello@1.0.0": "s1"}, Engine: "terraform 1.11.4"}
	chain := []Event{
		event(t, "1", EventChangeIdentified, "qa", "r1", "change", approved),
		event(t, "2", EventPlanCreated, "qa", "r1", "plan", PlanRecord{Digest: "d1", Commit: "pr-head", Change: "c1", PullRequest: 7}),
		event(t, "3", EventApprovalRecorded, "qa", "r1", "", ApprovalRecord{Environment: QA, PlanDigest: "d1", Approver: "qa-lead"}),
	}
	for i := range chain {
		chain[i].Seq = int64(i + 1)
	}
	check := func(env Environment, change ChangeRecord, pr int64) Result {
		t.Helper()
		st := &State{Contract: &Contract{ID: "app", Environment: env}, Commit: "queued", Change: &change, PullRequest: pr}
		res, err := (&QueueCheck{Evidence: chainFunc(func(context.Context, string) ([]Event, error) { return chain, nil })}).Run(t.Context(), st)
		if err != nil {
			t.Fatalf("queue check: %v", err)
		}
		return res
	}
	if res := check(QA, approved, 7); res.Verdict != Pass || !strings.Contains(res.Summary, "approved in qa as plan d1") {
		t.Errorf("the approved change queued: %+v", res)
	}
	moved := approved
	moved.ID, moved.Contract = "c2", "k2"
	for _, pr := range []int64{7, 0} {
		res := check(QA, moved, pr)
		if res.Verdict != Fail || len(res.Findings) != 1 || res.Findings[0].Reason != MergePlanStale || !strings.Contains(res.Findings[0].Message, "contract changed after plan d1") {
			t.Errorf("pull request %d's queue commit moved: %+v", pr, res)
		}
		if m, ok := res.Data.(MergeRecord); !ok || !slices.Equal(m.Changed, []string{"contract"}) || m.Commit != "queued" {
			t.Errorf("its record: %+v", res.Data)
		}
	}
	if res := check(QA, moved, 8); res.Verdict != Pass || !strings.Contains(res.Summary, "nothing was approved in qa for pull request #8") {
		t.Errorf("pull request 8, nothing of its own approved: %+v", res)
	}
	for _, env := range []Environment{Dev, Prod} {
		if res := check(env, moved, 7); res.Verdict != Pass {
			t.Errorf("%s: %+v", env, res)
		}
	}
}
