package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// TestGateHeadGrowsOverAnotherWritersEvents: after another writer (its
// own state dir) extended a contract's chain, a process on this state dir
// answers the gate from the stored summary and the added files alone,
// across a bucket it filled and one it began, without reading the chain;
// what it answers is the whole chain's summary, and the next process
// answers from what Close stored.
func TestGateHeadGrowsOverAnotherWritersEvents(t *testing.T) {
	const contract = "c-grow"
	ctx := context.Background()
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	first := openStoreIn(t, repo, state, keys)
	emitGateRound(t, first, contract, 1, true)
	gateSummaryOf(t, first, contract)
	first.Close()

	other := openStore(t, repo, keys)
	emitGateRound(t, other, contract, 2, true)
	emitN(t, other, contract, 100)
	other.Close()
	events := chainOf(t, repo, keys, contract)
	if n := len(events); n <= chain.EventsPerBucket {
		t.Fatalf("the other writer left %d events: the test needs a bucket begun after the stored head's", n)
	}
	want := runner.SummarizeGate(events)

	for i, what := range []string{"grown over the other writer's events", "stored by the process before"} {
		s := openStoreIn(t, repo, state, keys)
		if i == 1 {
			s.mu.Lock()
			stored := s.loadGateHead(contract)
			s.mu.Unlock()
			if stored == nil || stored.seq != int64(len(events)) {
				t.Fatalf("Close did not store the grown gate head: %+v", stored)
			}
		}
		if diff := cmp.Diff(want, gateSummaryOf(t, s, contract)); diff != "" {
			t.Fatalf("summary %s (-chain +summary):\n%s", what, diff)
		}
		if _, read := s.chains[contract]; read {
			t.Fatalf("the summary %s read the whole chain", what)
		}
		seq, hash, err := s.ChainHead(ctx, contract)
		last := events[len(events)-1]
		if err != nil || seq != last.Seq || hash != eventHash(t, last) {
			t.Fatalf("process %d: ChainHead = %d %s %v, want %d %s", i, seq, hash, err, last.Seq, eventHash(t, last))
		}
		s.Close()
	}
}

// TestGrownGateHeadHoldsWhatItAdded: an event of the added files still in
// this state dir's outbox (delivered, the outbox not yet told) is known
// to the grown head as held, so it is not folded twice, and the chain is
// still not read.
func TestGrownGateHeadHoldsWhatItAdded(t *testing.T) {
	const contract = "c-grow-held"
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	first := openStoreIn(t, repo, state, keys)
	emitGateRound(t, first, contract, 1, true)
	gateSummaryOf(t, first, contract)
	first.Close()
	emitGateRound(t, openStore(t, repo, keys), contract, 2, true)
	events := chainOf(t, repo, keys, contract)

	s := openStoreIn(t, repo, state, keys)
	defer s.Close()
	if err := s.outbox.add(contract, events[len(events)-1], nil); err != nil {
		t.Fatal(err)
	}
	got := gateSummaryOf(t, s, contract)
	if _, read := s.chains[contract]; read {
		t.Fatal("a delivered event in the outbox made the store read the chain")
	}
	if diff := cmp.Diff(runner.SummarizeGate(events), got); diff != "" || got.Folded != int64(len(events)) {
		t.Fatalf("summary with a delivered event in the outbox: %d folded, want %d (-chain +summary):\n%s", got.Folded, len(events), diff)
	}
}

// TestGrownGateHeadDoesNotHideTampering: what was changed in the repo
// after a state dir stored a contract's gate summary (by someone with the
// commit key, so the head is accepted) is refused with the reason a read
// of the whole chain from nothing gives, whether it only added files or
// also changed the ones the summary was folded from.
func TestGrownGateHeadDoesNotHideTampering(t *testing.T) {
	const (
		dir = "contracts/87/c-a/"
		a2  = dir + "0xx/2-nova.test.step.json"
		a4  = dir + "0xx/4-nova.test.step.json"
	)
	for _, tc := range []struct {
		name   string
		before func(t *testing.T, f *tamperFixture)
		tamper func(t *testing.T, f *tamperFixture)
	}{
		{"an added event signed by another key", nil, func(t *testing.T, f *tamperFixture) { f.forgeEvent(t, "c-a") }},
		{"an added file that is no event", nil, func(t *testing.T, f *tamperFixture) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { files[dir+"0xx/notes.txt"] = []byte("hi") })
		}},
		{"an added event after a gap", nil, func(t *testing.T, f *tamperFixture) {
			emitN(t, openStore(t, f.repo, f.keys), "c-a", 1)
			f.moveEvent(t, dir+"0xx/5-nova.test.step.json", dir+"0xx/6-nova.test.step.json")
		}},
		{"an added event in a bucket of its own after a gap", nil, func(t *testing.T, f *tamperFixture) {
			emitN(t, openStore(t, f.repo, f.keys), "c-a", 1)
			f.moveEvent(t, dir+"0xx/5-nova.test.step.json", dir+"1xx/105-nova.test.step.json")
		}},
		{"an added copy of an event at a seq taken", nil, func(t *testing.T, f *tamperFixture) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[dir+"0xx/4-nova.test.other.json"], files[dir+"0xx/4-nova.test.other.sig"] = files[a4], files[chain.SigPath(a4)]
			})
		}},
		{"a folded event deleted", nil, func(t *testing.T, f *tamperFixture) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { delete(files, a2); delete(files, chain.SigPath(a2)) })
		}},
		{"a folded event's signature replaced and an event added", nil, func(t *testing.T, f *tamperFixture) {
			emitN(t, openStore(t, f.repo, f.keys), "c-a", 1)
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { files[chain.SigPath(a2)] = files[chain.SigPath(a4)] })
		}},
		{"a folded event deleted and an event added", nil, func(t *testing.T, f *tamperFixture) {
			emitN(t, openStore(t, f.repo, f.keys), "c-a", 1)
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { delete(files, a2); delete(files, chain.SigPath(a2)) })
		}},
		{"the last folded event deleted and the next added", nil, func(t *testing.T, f *tamperFixture) {
			emitN(t, openStore(t, f.repo, f.keys), "c-a", 1)
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { delete(files, a4); delete(files, chain.SigPath(a4)) })
		}},
		{"a full bucket deleted and an event added", func(t *testing.T, f *tamperFixture) { emitN(t, f.store, "c-a", 100) }, func(t *testing.T, f *tamperFixture) {
			emitN(t, openStore(t, f.repo, f.keys), "c-a", 1)
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				for p := range files {
					if strings.HasPrefix(p, dir+"0xx/") {
						delete(files, p)
					}
				}
			})
		}},
		{"a folded event moved to a bucket of its own", nil, func(t *testing.T, f *tamperFixture) {
			f.moveDir(t, dir+"0xx/", dir+"9xx/")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newTamperFixture(t)
			state := f.store.cfg.StateDir
			if tc.before != nil {
				tc.before(t, f)
			}
			if _, err := f.store.GateSummary(ctx, "c-a"); err != nil {
				t.Fatal(err)
			}
			f.store.Close()
			tc.tamper(t, f)
			_, want := openStore(t, f.repo, f.keys).Chain(ctx, "c-a")
			if want == nil {
				t.Fatal("a read of the whole chain from nothing accepts the tampered repo: the case tests nothing")
			}
			s := openStoreIn(t, f.repo, state, f.keys)
			defer s.Close()
			_, err := s.GateSummary(ctx, "c-a")
			if runner.ReasonOf(err) != runner.ReasonOf(want) {
				t.Fatalf("GateSummary on the stored summary = %v, want %s as the whole chain read gives (%v)", err, runner.ReasonOf(want), want)
			}
		})
	}
}

// eventHash is the sha256 of e's file: the next event's preveventhash.
func eventHash(t *testing.T, e runner.Event) string {
	t.Helper()
	canon, err := e.Canonical()
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(canon)
	return hex.EncodeToString(sum[:])
}

// TestChecksInBatches: a chain read from nothing checks its files in
// batches on every core; files in every batch, the last one short, are
// checked and linked as one walk, and an event signed by another key in a
// later batch is found. A first sync checks the history's commits in
// batches too, and names the newest unsigned one.
func TestChecksInBatches(t *testing.T) {
	ctx := context.Background()
	f := newTamperFixture(t)
	want := chainOf(t, f.repo, f.keys, "c-a")
	defer func(n int) { checkBatch = n }(checkBatch)
	checkBatch = 3
	got, err := openStore(t, f.repo, f.keys).Chain(ctx, "c-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" || len(got) != 4 {
		t.Fatalf("chain read in batches of 3 (-whole +batches):\n%s", diff)
	}
	emitN(t, openStore(t, f.repo, f.keys), "c-a", 2)
	f.forgeEvent(t, "c-a")
	if _, err := openStore(t, f.repo, f.keys).Chain(ctx, "c-a"); runner.ReasonOf(err) != runner.EvidenceSignatureInvalid {
		t.Fatalf("chain with a forged seventh event = %v, want %s", err, runner.EvidenceSignatureInvalid)
	}

	unsigned := f.rewriteFiles(t, nil, func(map[string][]byte) {})
	for range 4 {
		f.rewriteFiles(t, f.keys.Commit, func(map[string][]byte) {})
	}
	err = openStore(t, f.repo, f.keys).Sync(ctx)
	if runner.ReasonOf(err) != runner.EvidenceCommitUnsigned || !strings.Contains(err.Error(), short(unsigned)) {
		t.Fatalf("first sync over an unsigned commit = %v, want %s naming %s", err, runner.EvidenceCommitUnsigned, short(unsigned))
	}
}
