package evidence

import (
	"context"
	"crypto"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

func TestChainAnswersTheGate(t *testing.T) {
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
	emit(runner.EventApprovalRecorded, "qa", runner.ApprovalRecord{Environment: "qa", Approver: "qa-lead", PlanDigest: "d1"})
	emit(runner.EventApprovalRecorded, "prod", runner.ApprovalRecord{Environment: "prod", Approver: "sre-1", PlanDigest: "d1"})
	// Approval data wrapped by a pipeline stage is read too.
	emit(runner.EventApprovalRecorded, "qa", map[string]any{"stage": "approve", "verdict": "pass", "result": runner.ApprovalRecord{Environment: "qa", Approver: "qa-2", PlanDigest: "d2"}})
	ind := emit(runner.EventApplyIndeterminate, "qa", map[string]string{"reason": "interrupted"})

	events, err := s.Chain(ctx, "c-1")
	if err != nil {
		t.Fatal(err)
	}
	qa, err := runner.Approvals(events, "qa")
	if err != nil || len(qa) != 2 || qa[0].Approver != "qa-lead" || qa[1].Approver != "qa-2" || qa[1].PlanDigest != "d2" {
		t.Fatalf("qa approvals = %+v, %v", qa, err)
	}
	if dr, err := runner.Approvals(events, "dr"); err != nil || len(dr) != 0 {
		t.Errorf("dr approvals = %+v, %v; want none", dr, err)
	}
	if open := runner.UnresolvedApply(events, "qa"); open == nil || open.ID != ind.ID {
		t.Fatalf("unresolved = %v; want %s", open, ind.ID)
	}
	if other := runner.UnresolvedApply(events, "prod"); other != nil {
		t.Errorf("prod is held by qa's indeterminate apply: %v", other)
	}

	emit(runner.EventApplyResolved, "qa", runner.Resolution{Outcome: runner.ResolvedNotApplied, Note: "state shows no change", Resolves: ind.ID, ResolvedBy: "sre-1"})
	if events, err = s.Chain(ctx, "c-1"); err != nil {
		t.Fatal(err)
	}
	if open := runner.UnresolvedApply(events, "qa"); open != nil {
		t.Fatalf("after resolve: %v", open)
	}
	if last := events[len(events)-1]; last.Type != runner.EventApplyResolved {
		t.Fatalf("last event = %s", last.Type)
	}
}

// TestChainRefusesForgedApproval: someone who can push but does not hold
// the event key cannot slip an approval past the gate. The forger's store
// trusts the real key, so it reads the chain and extends it.
func TestChainRefusesForgedApproval(t *testing.T) {
	ctx := context.Background()
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	emitN(t, s, "c-1", 1)
	forger, err := Open(ctx, Config{Repo: repo, StateDir: t.TempDir(), Keys: signing.Keys{Events: newKeys(t).Events, Commit: keys.Commit}, TrustedEventKeys: []crypto.PublicKey{keys.Events.PublicKey()}}, WithRetry(testRetry), WithLogf(t.Logf))
	if err != nil {
		t.Fatal(err)
	}
	defer forger.Close()
	if _, err := runner.NewEmitter(forger, "urn:x", "r", nil).Emit(ctx, runner.EventApprovalRecorded, "c-1", "prod", runner.ApprovalRecord{Environment: "prod", Approver: "mallory", PlanDigest: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := forger.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if p, _ := forger.Pending(); len(p) != 0 {
		t.Fatalf("test broken: the forged approval was not pushed")
	}
	if events, err := s.Chain(ctx, "c-1"); runner.ReasonOf(err) != runner.EvidenceSignatureInvalid {
		t.Fatalf("Chain over a forged event = %d events, %v; want EVIDENCE_SIGNATURE_INVALID", len(events), err)
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
	if err := elsewhere.Drain(ctx); err != nil {
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
