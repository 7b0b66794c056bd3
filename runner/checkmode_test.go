package runner

import (
	"context"
	"testing"
)

// headedChain is a chain that knows its head, as the evidence repo does.
type headedChain struct{ chainReader }

func (h headedChain) ChainHead(context.Context, string) (int64, string, error) {
	events := *h.events
	last := events[len(events)-1]
	hash, err := last.Hash()
	return last.Seq, hash, err
}

// TestCheckEvidenceRecordsNothing: a check's events chain on from the real
// head and are read back by whatever reads the chain or the gate summary
// through the check, while the real evidence never sees them.
func TestCheckEvidenceRecordsNothing(t *testing.T) {
	ctx := context.Background()
	var real []Event
	em := NewEmitter(appendRecorder{&real}, "urn:test", "r1", nil)
	if _, err := em.Emit(ctx, EventPlanCreated, "c", QA, PlanRecord{Digest: "D"}); err != nil {
		t.Fatal(err)
	}
	check := &CheckEvidence{Real: headedChain{chainReader{&real}}}
	cem := NewEmitter(check, "urn:test", "r2", nil)
	e, err := cem.Emit(ctx, EventApprovalRecorded, "c", QA, ApprovalRecord{Environment: QA, PlanDigest: "D", Approver: "qa-lead", Group: "qa"})
	if err != nil {
		t.Fatal(err)
	}
	if want, _ := real[0].Hash(); e.Seq != 2 || e.PrevEventHash != want {
		t.Errorf("the check's event is seq %d after %s, want 2 after the real head %s", e.Seq, e.PrevEventHash, want)
	}
	if len(real) != 1 {
		t.Fatalf("the real chain has %d events, want the 1 it had", len(real))
	}
	chain, err := check.Chain(ctx, "c")
	if err != nil || len(chain) != 2 || chain[1].ID != e.ID {
		t.Errorf("the check's chain: %d events, %v", len(chain), err)
	}
	sum, err := check.GateSummary(ctx, "c")
	if err != nil || len(sum.Env(QA).Approvals["D"]) != 1 {
		t.Errorf("the gate summary through the check has approvals %v, %v", sum.Env(QA).Approvals, err)
	}
	if realSum := SummarizeGate(real); len(realSum.Env(QA).Approvals["D"]) != 0 {
		t.Error("the real summary saw the check's approval")
	}
	if err := cem.Flush(ctx, "c"); err != nil || len(check.Would("c")) != 1 || len(check.Would("other")) != 0 {
		t.Errorf("flush %v, would record %d", err, len(check.Would("c")))
	}
}
