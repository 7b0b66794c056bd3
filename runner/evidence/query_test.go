package evidence

import (
	"context"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

func TestReaderAnswersTheGate(t *testing.T) {
	ctx := context.Background()
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	em := runner.NewEmitter(s, "urn:nova:test", "run-1", nil)
	emit := func(typ string, env runner.Environment, data any) runner.Event {
		t.Helper()
		e, err := em.Emit(ctx, typ, "c-1", env, data)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	emit(runner.EventPlanCreated, "qa", map[string]string{"digest": "d1"})
	emit(runner.EventApprovalRecorded, "qa", ApprovalData{Environment: "qa", Approver: "qa-lead", PlanDigest: "d1"})
	emit(runner.EventApprovalRecorded, "prod", ApprovalData{Environment: "prod", Approver: "sre-1", PlanDigest: "d1"})
	// Approval data wrapped by a pipeline stage is read too.
	emit(runner.EventApprovalRecorded, "qa", map[string]any{"stage": "approve", "verdict": "pass", "result": ApprovalData{Environment: "qa", Approver: "qa-2", PlanDigest: "d2"}})
	ind := emit(runner.EventApplyIndeterminate, "qa", map[string]string{"reason": "interrupted"})

	r, err := s.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	qa, err := r.Approvals("c-1", "qa")
	if err != nil || len(qa) != 2 || qa[0].Approver != "qa-lead" || qa[1].Approver != "qa-2" {
		t.Fatalf("qa approvals = %+v, %v", qa, err)
	}
	if d, ok, err := r.ApprovedPlanDigest("c-1", "qa"); err != nil || !ok || d != "d2" {
		t.Errorf("approved qa digest = %q %v %v, want d2", d, ok, err)
	}
	if _, ok, _ := r.ApprovedPlanDigest("c-1", "dr"); ok {
		t.Error("dr has no approval")
	}
	open, err := r.UnresolvedIndeterminate("c-1", "qa")
	if err != nil || open == nil || open.ID != ind.ID {
		t.Fatalf("unresolved = %v, %v; want %s", open, err, ind.ID)
	}
	if other, err := r.UnresolvedIndeterminate("c-1", "prod"); err != nil || other != nil {
		t.Errorf("prod is held by qa's indeterminate apply: %v, %v", other, err)
	}

	emit(runner.EventApplyResolved, "qa", ResolutionData{Outcome: OutcomeNotApplied, Note: "state shows no change", Resolves: ind.ID, ResolvedBy: "sre-1"})
	r, _ = s.Reader(ctx)
	if open, err := r.UnresolvedIndeterminate("c-1", "qa"); err != nil || open != nil {
		t.Fatalf("after resolve: %v, %v", open, err)
	}
	last, ok, err := r.LastEvent("c-1")
	if err != nil || !ok || last.Type != runner.EventApplyResolved {
		t.Fatalf("last event = %s", last.Type)
	}
}

// TestReaderRefusesForgedApproval: someone who can push but does not hold
// the event key cannot slip an approval past the gate.
func TestReaderRefusesForgedApproval(t *testing.T) {
	ctx := context.Background()
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	emitN(t, s, "c-1", 1)
	forger := openStore(t, repo, signing.Keys{Events: newKeys(t).Events, Commit: keys.Commit})
	if _, err := runner.NewEmitter(forger, "urn:x", "r", nil).Emit(ctx, runner.EventApprovalRecorded, "c-1", "prod", ApprovalData{Environment: "prod", Approver: "mallory", PlanDigest: "d"}); err != nil {
		t.Fatal(err)
	}
	r, err := s.Reader(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.Approvals("c-1", "prod"); runner.ReasonOf(err) != runner.EvidenceSignatureInvalid {
		t.Fatalf("Approvals over a forged event = %v, want EVIDENCE_SIGNATURE_INVALID", err)
	}
}

// TestAuthorizationIsRefusedOverAnIndeterminateApply covers the gate
// deciding on a stale copy: another writer records an indeterminate apply
// the gate did not see, and pushing the authorization must still fail —
// and leave nothing in the outbox to block later events.
func TestAuthorizationIsRefusedOverAnIndeterminateApply(t *testing.T) {
	ctx := context.Background()
	repo := newBareRepo(t)
	keys := newKeys(t)
	elsewhere := openStore(t, repo, keys)
	here := openStore(t, repo, keys)
	if _, err := runner.NewEmitter(elsewhere, "urn:nova:test", "run-a", nil).Emit(ctx, runner.EventApplyIndeterminate, "c-1", "prod", map[string]string{"cause": "interrupted"}); err != nil {
		t.Fatal(err)
	}
	em := runner.NewEmitter(here, "urn:nova:test", "run-b", nil)
	_, err := em.Emit(ctx, runner.EventApplyAuthorized, "c-1", "prod", map[string]string{"digest": "d"})
	if runner.ReasonOf(err) != runner.ApplyIndeterminate {
		t.Fatalf("authorization over an indeterminate apply: %v, want %s", err, runner.ApplyIndeterminate)
	}
	if pending, _ := here.Pending(); len(pending) != 0 {
		t.Errorf("the refused authorization waits in the outbox: %+v", pending)
	}
	// Other environments and ordinary events go on.
	if _, err := em.Emit(ctx, runner.EventApplyAuthorized, "c-1", "qa", map[string]string{"digest": "d"}); err != nil {
		t.Errorf("qa authorization refused: %v", err)
	}
	if _, err := em.Emit(ctx, runner.EventRunFailed, "c-1", "prod", map[string]string{"why": "refused"}); err != nil {
		t.Errorf("later event: %v", err)
	}
	if rep := verifyRepo(t, repo, verifyOptions(t, keys)); !rep.OK() {
		t.Errorf("repo does not verify:\n%s", dumpFindings(rep))
	}
}
