package runner

import (
	"context"
	"strings"
	"testing"
	"time"
)

// rollbackChain is a contract's chain in which dev applied change A at
// commit ca and then B at commit cb, while qa applied A only; change C
// was planned in dev (commit cc) and never applied.
func rollbackChain(t *testing.T) []Event {
	t.Helper()
	var events []Event
	n := 0
	add := func(typ, env, run, stage string, data any) {
		n++
		events = append(events, event(t, typ+"-"+string(rune('a'+n)), typ, env, run, stage, data))
	}
	apply := func(env, run, change, commit string) {
		add(EventChangeIdentified, env, run, "change", ChangeRecord{ID: change})
		add(EventPlanCreated, env, run, "plan", PlanRecord{Digest: "d-" + run, Change: change, Commit: commit})
		add(EventApplyAuthorized, env, run, "gate", Authorization{Digest: "d-" + run, Environment: Environment(env), Change: change})
		add(EventApplyCompleted, env, run, "apply", map[string]any{"applied": true})
	}
	apply("dev", "r1", "aaaa1111aaaa", "ca")
	apply("qa", "r2", "aaaa1111aaaa", "")
	apply("dev", "r3", "aaaa2222bbbb", "cb")
	add(EventChangeIdentified, "dev", "r4", "change", ChangeRecord{ID: "cccc3333cccc"})
	add(EventPlanCreated, "dev", "r4", "plan", PlanRecord{Digest: "d-r4", Change: "cccc3333cccc", Commit: "cc"})
	add(EventChangeIdentified, "dev", "r5", "change", ChangeRecord{ID: "dddd4444dddd"})
	return events
}

func TestFindRollbackTarget(t *testing.T) {
	events := rollbackChain(t)
	rec, err := FindRollbackTarget(events, Dev, "AAAA1111")
	if err != nil {
		t.Fatal(err)
	}
	if rec.Target != "aaaa1111aaaa" || rec.Commit != "ca" || rec.Supersedes != "aaaa2222bbbb" || rec.TargetApply == "" || rec.SupersedesApply == "" || rec.Environment != Dev {
		t.Errorf("dev back to A: %+v", rec)
	}
	// qa's plan of A named no commit: dev's does, and is taken.
	if rec, err := FindRollbackTarget(events, QA, "aaaa1111aaaa"); err != nil || rec.Commit != "ca" || rec.Supersedes != "aaaa1111aaaa" {
		t.Errorf("qa back to A, which it runs: %+v, %v", rec, err)
	}
	for _, tc := range []struct {
		env  Environment
		to   string
		want Reason
	}{
		{Dev, "aaaa", ConfigInvalid},     // A's and B's: too short to mean one change for long
		{Dev, "not-hex!", ConfigInvalid}, // not an id
		{Dev, "eeee5555", RollbackTargetUnknown},
		{QA, "aaaa2222", RollbackTargetNotApplied},  // qa never ran B
		{Dev, "cccc3333", RollbackTargetNotApplied}, // planned, never applied
		{Prod, "aaaa1111", RollbackTargetNotApplied},
		{Dev, "dddd4444", RollbackTargetNotApplied}, // identified, never planned
	} {
		_, err := FindRollbackTarget(events, tc.env, tc.to)
		if ReasonOf(err) != tc.want {
			t.Errorf("%s --to %s: %v, want %s", tc.env, tc.to, err, tc.want)
		}
	}
}

func TestFindRollbackTargetRefusesAmbiguityAndMissingSource(t *testing.T) {
	events := rollbackChain(t)
	// Two changes sharing their first seven digits.
	events = append(events, event(t, "x1", EventChangeIdentified, "dev", "r6", "change", ChangeRecord{ID: "aaaa111fffff"}))
	if _, err := FindRollbackTarget(events, Dev, "aaaa111"); ReasonOf(err) != RollbackTargetAmbiguous || !strings.Contains(err.Error(), "aaaa1111aaaa") {
		t.Errorf("ambiguous prefix: %v", err)
	}
	// A change applied whose plans named no commit cannot be read back.
	events = append(events,
		event(t, "x2", EventPlanCreated, "dev", "r7", "plan", PlanRecord{Digest: "d-r7", Change: "ffff6666ffff"}),
		event(t, "x3", EventApplyAuthorized, "dev", "r7", "gate", Authorization{Digest: "d-r7", Change: "ffff6666ffff"}),
		event(t, "x4", EventApplyCompleted, "dev", "r7", "apply", map[string]any{"applied": true}))
	if _, err := FindRollbackTarget(events, Dev, "ffff6666"); ReasonOf(err) != RollbackSourceMissing {
		t.Errorf("no commit: %v", err)
	}
}

func TestRollbackCheck(t *testing.T) {
	rec := RollbackRecord{Environment: Prod, Target: "aaaa1111aaaa", TargetApply: "e1", Commit: "ca", Supersedes: "bbbb", RequestedBy: "sre"}
	st := &State{Contract: &Contract{ID: "c", Environment: Prod}, Change: &ChangeRecord{ID: "aaaa1111aaaa"}}
	res, err := (&RollbackCheck{Record: rec}).Run(context.Background(), st)
	if err != nil || res.Verdict != Pass || res.Event != EventRollbackRequested || st.Rollback == nil || st.Rollback.Ref().Supersedes != "bbbb" {
		t.Fatalf("the target's own change: %+v, %v, %+v", res, err, st.Rollback)
	}
	st = &State{Contract: &Contract{ID: "c", Environment: Prod}, Change: &ChangeRecord{ID: "aaaa9999aaaa", Engine: "terraform 1.12.0"}}
	res, err = (&RollbackCheck{Record: rec}).Run(context.Background(), st)
	if err != nil || res.Verdict != Fail || res.Findings[0].Reason != RollbackTargetChanged || st.Rollback != nil {
		t.Errorf("another change today: %+v, %v", res, err)
	}
	if (*RollbackRecord)(nil).Ref() != nil {
		t.Error("a run that rolls nothing back refers to a rollback")
	}
}

func TestRollbackRequester(t *testing.T) {
	events := []Event{
		event(t, "1", EventRollbackRequested, "prod", "r1", "rollback", RollbackRecord{RequestedBy: "sre-oncall"}),
		event(t, "2", EventPlanCreated, "prod", "r1", "plan", PlanRecord{Digest: "D1"}),
		event(t, "3", EventPlanCreated, "prod", "r2", "plan", PlanRecord{Digest: "D2"}),
	}
	if got := RollbackRequester(events, Prod, "D1"); got != "sre-oncall" {
		t.Errorf("the rollback's plan: %q", got)
	}
	if got := RollbackRequester(events, Prod, "D2"); got != "" {
		t.Errorf("an ordinary plan: %q", got)
	}
	if got := RollbackRequester(events, QA, "D1"); got != "" {
		t.Errorf("another environment: %q", got)
	}
}

// TestGateCountsOnlyARollbacksOwnApprovals: a rollback's plan can be the
// very digest approved before the environment last changed (the same
// commit, from the same state); that approval does not carry over, and
// its requester's never counts.
func TestGateCountsOnlyARollbacksOwnApprovals(t *testing.T) {
	cfg, err := ParseApprovers([]byte("groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-1, sre-2]\n"))
	if err != nil {
		t.Fatal(err)
	}
	seq := int64(0)
	add := func(e Event) Event { seq++; e.Seq = seq; return e }
	approval := func(who string) Event {
		return add(event(t, "approval-"+who, EventApprovalRecorded, "prod", "r", "", ApprovalRecord{Environment: Prod, Approver: who, PlanDigest: "D", Group: "sre"}))
	}
	events := []Event{
		approval("sre-1"),
		add(event(t, "auth", EventApplyAuthorized, "prod", "r1", "gate", Authorization{Digest: "D", Environment: Prod, Change: "B"})),
		add(event(t, "done", EventApplyCompleted, "prod", "r1", "apply", map[string]any{"applied": true})),
	}
	sum := SummarizeGate(events)
	last := sum.Env(Prod).LastApplied
	if last == nil || last.Seq != 3 {
		t.Fatalf("prod's last apply: %+v", last)
	}
	in := gateInput{Env: Prod, Digest: "D", Now: time.Now(), Approvers: cfg, Members: map[Login]bool{"sre-1": true, "sre-2": true}}
	if d, err := decideGate(sum, in); err != nil || d.Verdict != Pass {
		t.Fatalf("an ordinary plan of D: %+v, %v", d, err)
	}
	in.ApprovedAfter = last.Seq
	if d, err := decideGate(sum, in); err != nil || d.Verdict != AwaitingApproval {
		t.Errorf("a rollback to D with only the approval from before prod's last apply: %+v, %v", d, err)
	}
	events = append(events, approval("sre-2"))
	in.NotBy = "sre-2"
	if d, err := decideGate(SummarizeGate(events), in); err != nil || d.Verdict != AwaitingApproval {
		t.Errorf("a rollback approved by its requester alone: %+v, %v", d, err)
	}
	in.NotBy = "sre-1"
	if d, err := decideGate(SummarizeGate(events), in); err != nil || d.Verdict != Pass || d.Approval.Approver != "sre-2" {
		t.Errorf("a rollback approved since by another: %+v, %v", d, err)
	}
}
