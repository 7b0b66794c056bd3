package evidence

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// emitGateRound records one round of what the gate reads — a plan, a
// request, an approval, an authorization and its apply in qa, a rejection and an
// unknown apply outcome in prod — through an Emitter, flushing it when
// flush is set.
func emitGateRound(t *testing.T, s *Store, contract string, round int, flush bool) {
	t.Helper()
	ctx := context.Background()
	em := runner.NewEmitter(s, "urn:nova:test", fmt.Sprintf("run-%d", round), testClock())
	digest := fmt.Sprintf("sha256:plan-%d", round)
	for _, e := range []struct {
		typ  string
		env  runner.Environment
		data any
	}{
		{runner.EventPlanCreated, runner.QA, runner.PlanRecord{Digest: digest}},
		{runner.EventApprovalRequested, runner.QA, runner.RequestRecord{Environment: runner.QA, PlanDigest: digest}},
		{runner.EventApprovalRecorded, runner.QA, runner.ApprovalRecord{Environment: runner.QA, PlanDigest: digest, Approver: fmt.Sprintf("qa-%d", round), Group: "qa"}},
		{runner.EventApplyAuthorized, runner.QA, runner.Authorization{Digest: digest, Environment: runner.QA}},
		{runner.EventApplyCompleted, runner.QA, map[string]string{"digest": digest}},
		{runner.EventApprovalRejected, runner.Prod, runner.ApprovalRecord{Environment: runner.Prod, PlanDigest: digest, Approver: "sre-1", Reason: "not today"}},
		{runner.EventApplyIndeterminate, runner.Prod, map[string]string{"cause": "interrupted"}},
	} {
		if _, err := em.Emit(ctx, e.typ, contract, e.env, e.data); err != nil {
			t.Fatal(err)
		}
	}
	if flush {
		if err := em.Flush(ctx, contract); err != nil {
			t.Fatal(err)
		}
	}
}

// wantSummary is the gate summary folded from the store's whole chain.
func wantSummary(t *testing.T, s *Store, contract string) *runner.GateSummary {
	t.Helper()
	events, err := s.Chain(context.Background(), contract)
	if err != nil {
		t.Fatal(err)
	}
	return runner.SummarizeGate(events)
}

func gateSummaryOf(t *testing.T, s *Store, contract string) *runner.GateSummary {
	t.Helper()
	got, err := s.GateSummary(context.Background(), contract)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// TestGateSummaryAcrossProcesses: the store's gate summary is the summary
// of its chain, pending events included, whether it is folded from the
// repo, read from the state dir without reading the chain, extended from
// the stored one when the chain grew, or rebuilt because the stored one is
// torn.
func TestGateSummaryAcrossProcesses(t *testing.T) {
	const contract = "c-gate-summary"
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	first := openStoreIn(t, repo, state, keys)
	emitGateRound(t, first, contract, 1, true)
	want := wantSummary(t, first, contract)
	if diff := cmp.Diff(want, gateSummaryOf(t, first, contract)); diff != "" {
		t.Fatalf("summary of a chain read from the repo (-chain +summary):\n%s", diff)
	}
	first.Close()
	if _, err := os.Stat(first.gateCachePath(contract)); err != nil {
		t.Fatalf("no stored gate summary after Close: %v", err)
	}

	second := openStoreIn(t, repo, state, keys)
	if diff := cmp.Diff(want, gateSummaryOf(t, second, contract)); diff != "" {
		t.Fatalf("stored summary (-chain +summary):\n%s", diff)
	}
	if _, read := second.chains[contract]; read {
		t.Fatal("the summary at an unchanged tree read the chain")
	}
	// Events still in the outbox are folded on top, as Chain lists them.
	emitGateRound(t, second, contract, 2, false)
	if diff := cmp.Diff(wantSummary(t, second, contract), gateSummaryOf(t, second, contract)); diff != "" {
		t.Fatalf("summary with pending events (-chain +summary):\n%s", diff)
	}
	if err := second.Flush(context.Background(), contract); err != nil {
		t.Fatal(err)
	}
	second.Close()

	// Another writer extends the chain: the stored summary is behind, and
	// is extended by the new events only (a marker in it shows it was not
	// folded afresh), the chain unread (growGateHead).
	emitGateRound(t, openStore(t, repo, keys), contract, 3, true)
	third := openStoreIn(t, repo, state, keys)
	third.mu.Lock()
	stored := third.loadGateHead(contract)
	third.mu.Unlock()
	if stored == nil {
		t.Fatal("no stored gate summary")
	}
	const marker = "marker: the stored summary"
	stored.summary.ApprovalError = marker
	got := gateSummaryOf(t, third, contract)
	stored.summary.ApprovalError = ""
	if got.ApprovalError != marker {
		t.Error("the summary of a grown chain was folded afresh, not extended from the stored one")
	}
	if _, read := third.chains[contract]; read {
		t.Error("the summary of a chain that only gained events read the whole chain")
	}
	got.ApprovalError = ""
	want = runner.SummarizeGate(chainOf(t, repo, keys, contract))
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("summary of a grown chain (-repo +summary):\n%s", diff)
	}
	third.Close()

	// A torn summary is a miss: the chain answers.
	path := third.gateCachePath(contract)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)-1], 0o600); err != nil {
		t.Fatal(err)
	}
	torn := openStoreIn(t, repo, state, keys)
	if diff := cmp.Diff(want, gateSummaryOf(t, torn, contract)); diff != "" {
		t.Fatalf("summary after a torn file (-repo +summary):\n%s", diff)
	}
	if _, read := torn.chains[contract]; !read {
		t.Fatal("a torn stored summary was used")
	}
	torn.Close()

	// Pending events the chain does not hold are folded on top of the
	// stored summary, the chain unread; one it holds already (pushed, the
	// outbox not yet told) is not folded twice.
	fourth := openStoreIn(t, repo, state, keys)
	em := runner.NewEmitter(fourth, "urn:nova:test", "run-4", testClock())
	if _, err := em.Emit(context.Background(), runner.EventApprovalRecorded, contract, runner.Prod,
		runner.ApprovalRecord{Environment: runner.Prod, PlanDigest: "sha256:plan-4", Approver: "sre-2", Group: "sre"}); err != nil {
		t.Fatal(err)
	}
	got = gateSummaryOf(t, fourth, contract)
	if _, read := fourth.chains[contract]; read {
		t.Error("pending events the chain does not hold made the store read the chain")
	}
	if diff := cmp.Diff(wantSummary(t, fourth, contract), got); diff != "" {
		t.Fatalf("summary with a pending event (-chain +summary):\n%s", diff)
	}
	fourth.Close()
	delivered := chainOf(t, repo, keys, contract)
	fifth := openStoreIn(t, repo, state, keys)
	if err := fifth.outbox.add(contract, delivered[len(delivered)-1], nil); err != nil {
		t.Fatal(err)
	}
	got = gateSummaryOf(t, fifth, contract)
	want = wantSummary(t, fifth, contract)
	if diff := cmp.Diff(want, got); diff != "" || got.Folded != int64(len(delivered)+1) {
		t.Fatalf("summary with a delivered event still in the outbox: %d folded, want %d (-chain +summary):\n%s", got.Folded, len(delivered)+1, diff)
	}
}

// TestGateSummaryCarriedByDelivery: a store that answered from the stored
// summary pushes its outbox on top of it without reading the chain, and
// stores the summary and ids of the head it made; the next process answers
// from them, and an authorization on top of an apply of unknown outcome is
// still refused at the push.
func TestGateSummaryCarriedByDelivery(t *testing.T) {
	const contract = "c-gate-carried"
	ctx := context.Background()
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	first := openStoreIn(t, repo, state, keys)
	emitGateRound(t, first, contract, 1, true)
	first.Close()

	second := openStoreIn(t, repo, state, keys)
	emitGateRound(t, second, contract, 2, true)
	if _, read := second.chains[contract]; read {
		t.Fatal("recording and pushing on top of a stored summary read the chain")
	}
	want := runner.SummarizeGate(chainOf(t, repo, keys, contract))
	if diff := cmp.Diff(want, gateSummaryOf(t, second, contract)); diff != "" {
		t.Fatalf("summary carried by the delivery (-repo +summary):\n%s", diff)
	}
	second.Close()

	third := openStoreIn(t, repo, state, keys)
	em := runner.NewEmitter(third, "urn:nova:test", "run-3", testClock())
	if _, err := em.Emit(ctx, runner.EventApprovalChecked, contract, runner.Prod, runner.ApprovalCheck{Environment: runner.Prod}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wantSummary(t, openStoreIn(t, repo, state, keys), contract), gateSummaryOf(t, third, contract)); diff != "" {
		t.Fatalf("summary stored after the delivery (-chain +summary):\n%s", diff)
	}
	if _, read := third.chains[contract]; read {
		t.Fatal("the summary stored after a delivery was not used")
	}
	// Every round leaves prod with an apply of unknown outcome.
	_, err := em.Emit(ctx, runner.EventApplyAuthorized, contract, runner.Prod, runner.Authorization{Digest: "sha256:plan-3", Environment: runner.Prod})
	if runner.ReasonOf(err) != runner.ApplyIndeterminate {
		t.Fatalf("authorizing on top of an unknown outcome: %v, want %s", err, runner.ApplyIndeterminate)
	}
	if _, read := third.chains[contract]; read {
		t.Error("the push read the chain")
	}
}

// TestGateSummaryOfOtherRulesIsAMiss: a stored summary folded by other
// rules (another runner.GateSummaryVersion) is not read as this one's.
func TestGateSummaryOfOtherRulesIsAMiss(t *testing.T) {
	const contract = "c-gate-version"
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	first := openStoreIn(t, repo, state, keys)
	emitGateRound(t, first, contract, 1, true)
	first.Close()
	first.mu.Lock()
	stored := *first.gates[contract]
	first.mu.Unlock()
	wrong := &runner.GateSummary{Folded: 12345}
	if err := writeSealed(first.gateCachePath(contract), gateSummaryMagic, storedGate{Keys: first.eventKeys.Fingerprint(), Version: runner.GateSummaryVersion + 1,
		Dir: contract, Tree: stored.tree, Seq: stored.seq, Hash: stored.hash, Summary: wrong}); err != nil {
		t.Fatal(err)
	}
	second := openStoreIn(t, repo, state, keys)
	if diff := cmp.Diff(wantSummary(t, second, contract), gateSummaryOf(t, second, contract)); diff != "" {
		t.Fatalf("summary beside one of other rules (-chain +summary):\n%s", diff)
	}
}
