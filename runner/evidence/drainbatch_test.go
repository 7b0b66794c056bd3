package evidence

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// recordOnly records n events for each contract without pushing them, as
// the runs of `nova validate --all` leave them for the final Drain, and
// returns their ids by contract, in order.
func recordOnly(t *testing.T, s *Store, contracts []string, n int) map[string][]string {
	t.Helper()
	ids := map[string][]string{}
	for _, c := range contracts {
		em := runner.NewEmitter(s, "urn:nova:test", "run-"+c, testClock())
		for i := range n {
			e, err := em.Emit(t.Context(), "nova.test.step", c, "dev", map[string]int{"i": i})
			if err != nil {
				t.Fatal(err)
			}
			ids[c] = append(ids[c], e.ID)
		}
	}
	return ids
}

// checkDeliveredOnce fails unless every contract's chain in repo is
// exactly want's events (after those of before, when given), each once,
// in order, and the repo verifies.
func checkDeliveredOnce(t *testing.T, repo string, s *Store, want map[string][]string, before map[string][]string) {
	t.Helper()
	total := 0
	for c, ids := range want {
		var got []string
		for _, e := range chainOf(t, repo, s.cfg.Keys, c) {
			got = append(got, e.ID)
		}
		exp := append(slices.Clone(before[c]), ids...)
		if !slices.Equal(got, exp) {
			t.Errorf("chain of %s = %v, want %v", c, got, exp)
		}
		total += len(exp)
	}
	if rep := verifyRepo(t, repo, verifyOptions(t, s.cfg.Keys)); !rep.OK() || rep.Events != total {
		t.Errorf("verify: %d events, want %d%s", rep.Events, total, dumpFindings(rep))
	}
	if p, err := s.Pending(); err != nil || len(p) != 0 {
		t.Errorf("%d events left in the outbox (%v)", len(p), err)
	}
}

func contractNames(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("c-%02d", i))
	}
	return out
}

// smallBatches makes Drain's batches hold at most n events for the test.
func smallBatches(t *testing.T, n int) {
	old := maxBatchEvents
	maxBatchEvents = n
	t.Cleanup(func() { maxBatchEvents = old })
}

// TestDrainPushesManyContractsTogether: a drain delivers many contracts'
// outboxes in one push each batch (one witnessed head per push), every
// contract's events whole in one batch, each chain continuous and the
// repo verifying, in place and through git's receive-pack.
func TestDrainPushesManyContractsTogether(t *testing.T) {
	for _, tr := range []struct {
		name string
		url  func(repo string) string
	}{
		{"in place", func(repo string) string { return repo }},
		{"file transport", func(repo string) string { return "file://" + repo }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			smallBatches(t, 7)
			repo := newBareRepo(t)
			s := openStore(t, tr.url(repo), newKeys(t))
			// 3 events each: batches of 2, 2 and 1 contracts.
			ids := recordOnly(t, s, contractNames(5), 3)
			if err := s.Drain(t.Context()); err != nil {
				t.Fatal(err)
			}
			if w := witnessed(t, s); len(w) != 3 || w[2] != headOf(t, repo).String() {
				t.Errorf("witness %v: want 3 pushes for 15 events in batches of at most 7, the last the head", w)
			}
			checkDeliveredOnce(t, repo, s, ids, nil)
		})
	}
}

// raceRemote is a Remote whose first pushes let another writer move the
// branch just before, or fail as an unreachable forge would.
type raceRemote struct {
	gitrepo.Remote
	before func() // run before each push (nil: none)
	fail   error  // returned instead of pushing (nil: push)
	pushes int
}

func (r *raceRemote) Push(ctx context.Context, old, new plumbing.Hash, objs *gitrepo.Objects) error {
	r.pushes++
	if r.before != nil {
		r.before()
	}
	if r.fail != nil {
		return r.fail
	}
	return r.Remote.Push(ctx, old, new, objs)
}

// TestABatchThatLostTheRaceIsBuiltAgain: another writer extends one of the
// batch's contracts between the batch's read of the head and its push.
// The compare-and-swap refuses the batch whole; it is built again on the
// new head, so the other writer's event stays and the batch's events
// follow it, each once.
func TestABatchThatLostTheRaceIsBuiltAgain(t *testing.T) {
	for _, tr := range []struct {
		name string
		url  func(repo string) string
	}{
		{"in place", func(repo string) string { return repo }},
		{"file transport", func(repo string) string { return "file://" + repo }},
	} {
		t.Run(tr.name, func(t *testing.T) {
			repo := newBareRepo(t)
			keys := newKeys(t)
			s := openStore(t, tr.url(repo), keys)
			contracts := contractNames(4)
			ids := recordOnly(t, s, contracts, 2)
			other := openStore(t, tr.url(repo), keys)
			var theirs []runner.Event
			rr := &raceRemote{Remote: s.target}
			rr.before = func() {
				rr.before = nil // once
				theirs = emitN(t, other, contracts[1], 1)
			}
			s.target = rr
			if err := s.Drain(t.Context()); err != nil {
				t.Fatal(err)
			}
			if rr.pushes != 2 {
				t.Errorf("%d pushes, want the lost one and its retry", rr.pushes)
			}
			checkDeliveredOnce(t, repo, s, ids, map[string][]string{contracts[1]: {theirs[0].ID}})
		})
	}
}

// TestAFailedBatchLeavesEveryEventPending: a push that fails delivers
// none of its batch: the branch has not moved, every event is still in
// the outbox, and the next drain delivers each exactly once.
func TestAFailedBatchLeavesEveryEventPending(t *testing.T) {
	smallBatches(t, 4)
	repo := newBareRepo(t)
	s := openStore(t, repo, newKeys(t))
	contracts := contractNames(3)
	before := emitN(t, s, contracts[0], 1) // the branch exists
	head := headOf(t, repo)
	ids := recordOnly(t, s, contracts, 2)
	rr := &raceRemote{Remote: s.target, fail: errors.New("connection reset")}
	s.target = rr

	err := s.Drain(t.Context())
	if runner.ReasonOf(err) != runner.EvidencePushFailed {
		t.Fatalf("Drain = %v, want EVIDENCE_PUSH_FAILED", err)
	}
	t.Logf("Drain: %v", err)
	if got := headOf(t, repo); got != head {
		t.Errorf("the branch moved to %s on a failed push", got)
	}
	pending, err := s.Pending()
	if err != nil {
		t.Fatal(err)
	}
	var got, want []string
	for _, e := range pending {
		got = append(got, e.ID)
	}
	for _, c := range contracts {
		want = append(want, ids[c]...)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("pending after the failed drain = %v, want every event %v", got, want)
	}

	rr.fail = nil
	if err := s.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkDeliveredOnce(t, repo, s, ids, map[string][]string{contracts[0]: {before[0].ID}})
}

// TestACrashAfterTheBatchPushDoublesNothing: a process that dies after
// its batch reached the repo but before its outbox marked the events
// delivered leaves them pending; the next drain finds each in its chain
// and drops it rather than writing it twice.
func TestACrashAfterTheBatchPushDoublesNothing(t *testing.T) {
	repo := newBareRepo(t)
	keys := newKeys(t)
	stateDir := t.TempDir()
	s := openStoreIn(t, repo, stateDir, keys)
	ids := recordOnly(t, s, contractNames(3), 2)
	outboxes, err := filepath.Glob(filepath.Join(stateDir, outboxDir, "*.jsonl"))
	if err != nil || len(outboxes) != 3 {
		t.Fatalf("outboxes %v (%v)", outboxes, err)
	}
	kept := map[string][]byte{}
	for _, f := range outboxes {
		if kept[f], err = os.ReadFile(f); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	// The crash: the outboxes as they were before the push.
	for f, b := range kept {
		if err := os.WriteFile(f, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	next := openStoreIn(t, repo, stateDir, keys)
	if p, _ := next.Pending(); len(p) != 6 {
		t.Fatalf("%d events pending after the crash, want 6", len(p))
	}
	if err := next.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	checkDeliveredOnce(t, repo, next, ids, nil)
}

// TestDeferredOutboxSyncSyncsWhatIsPending: with the outbox's sync
// deferred, SyncOutbox syncs each outbox file that still holds events
// once, and its directory after the files it created; files a drain
// emptied are not synced, there being nothing in them to keep.
func TestDeferredOutboxSyncSyncsWhatIsPending(t *testing.T) {
	repo := newBareRepo(t)
	stateDir := t.TempDir()
	s := openStoreIn(t, repo, stateDir, newKeys(t))
	s.DeferOutboxSync()
	var synced []string
	var mu sync.Mutex // SyncOutbox syncs several files at once
	orig := syncPath
	syncPath = func(p string) error {
		mu.Lock()
		synced = append(synced, p)
		mu.Unlock()
		return orig(p)
	}
	t.Cleanup(func() { syncPath = orig })
	file := func(c string) string { return filepath.Join(stateDir, outboxDir, c+".jsonl") }

	// Delivered: nothing left to sync.
	recordOnly(t, s, []string{"c-1"}, 2)
	if err := s.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	synced = nil
	if err := s.SyncOutbox(); err != nil {
		t.Fatal(err)
	}
	if slices.Contains(synced, file("c-1")) {
		t.Errorf("synced %v: the drained outbox holds nothing to keep", synced)
	}

	// Not delivered (the push fails): every file synced once, then the
	// directory.
	ids := recordOnly(t, s, []string{"c-2", "c-3"}, 2)
	s.target = &raceRemote{Remote: s.target, fail: errors.New("connection reset")}
	if err := s.Drain(t.Context()); err == nil {
		t.Fatal("Drain succeeded through a failing push")
	}
	synced = nil
	if err := s.SyncOutbox(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(stateDir, outboxDir)
	for _, c := range []string{"c-2", "c-3"} {
		if n := countOf(synced, file(c)); n != 1 {
			t.Errorf("%s synced %d times (%v), want once", file(c), n, synced)
		}
		if i, j := slices.Index(synced, file(c)), slices.Index(synced, dir); j < i {
			t.Errorf("syncs %v: the directory before the new file %s", synced, file(c))
		}
	}
	if p, _ := s.Pending(); len(p) != len(ids["c-2"])+len(ids["c-3"]) {
		t.Errorf("%d events pending, want 4", len(p))
	}
	synced = nil
	if err := s.SyncOutbox(); err != nil || len(synced) != 0 {
		t.Errorf("a second SyncOutbox synced %v (%v): nothing was appended since", synced, err)
	}
}

func countOf(xs []string, x string) int {
	n := 0
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}
