package evidence

import (
	"context"
	"crypto"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// TestChainCacheAcrossProcesses: a store reads the chain a store before it
// verified in the same state dir, extends it by what was added since, and
// reads the repo again when the cache is torn or was written under other
// keys — with the same answer every time.
func TestChainCacheAcrossProcesses(t *testing.T) {
	ctx := context.Background()
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	first := openStoreIn(t, repo, state, keys)
	emitN(t, first, "c-a", 3)
	want, err := first.Chain(ctx, "c-a")
	if err != nil {
		t.Fatal(err)
	}
	first.Close()
	path := first.chainCachePath("c-a")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("no chain cache after Close: %v", err)
	}

	second := openStoreIn(t, repo, state, keys)
	got, err := second.Chain(ctx, "c-a")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("chain from the cache differs (-repo +cache):\n%s", diff)
	}
	if !second.chains["c-a"].stored {
		t.Fatal("the second store read the chain from the repo, not the cache")
	}
	// Another writer extends the chain; this state dir's cache is behind.
	emitN(t, openStore(t, repo, keys), "c-a", 2)
	second.Close()
	third := openStoreIn(t, repo, state, keys)
	grown, err := third.Chain(ctx, "c-a")
	if err != nil {
		t.Fatal(err)
	}
	fromRepo := chainOf(t, repo, keys, "c-a")
	if diff := cmp.Diff(fromRepo, grown); diff != "" || len(grown) != 5 {
		t.Fatalf("extended chain differs from the repo's (%d events, -repo +cache):\n%s", len(grown), diff)
	}
	third.Close()

	// A torn cache is a miss, not an answer.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b[:len(b)/2], 0o600); err != nil {
		t.Fatal(err)
	}
	torn := openStoreIn(t, repo, state, keys)
	if got, err := torn.Chain(ctx, "c-a"); err != nil || !cmp.Equal(fromRepo, got) || torn.chains["c-a"].stored {
		t.Fatalf("after a torn cache: %d events, %v, from the cache: %v", len(got), err, torn.chains["c-a"].stored)
	}
	torn.Close()

	// Written under other event keys: not used.
	other := newKeys(t)
	rekeyed, err := Open(ctx, Config{Repo: repo, StateDir: state, Keys: keys, TrustedEventKeys: []crypto.PublicKey{other.Events.PublicKey()}}, WithRetry(testRetry), WithLogf(t.Logf))
	if err != nil {
		t.Fatal(err)
	}
	defer rekeyed.Close()
	if _, err := rekeyed.Chain(ctx, "c-a"); err != nil || rekeyed.chains["c-a"].stored {
		t.Fatalf("under other keys: %v, from the cache: %v", err, rekeyed.chains["c-a"].stored)
	}
	if filepath.Dir(path) != filepath.Join(state, chainCacheDir) {
		t.Fatalf("cache at %s, outside the state dir's %s", path, chainCacheDir)
	}
}

// TestChainCacheDoesNotHideTampering: an event deleted from the repo after
// its chain was cached (by someone with the commit key, so the head is
// accepted) changes the directory's tree, and the chain read on top of the
// cache is refused as the repo's own would be.
func TestChainCacheDoesNotHideTampering(t *testing.T) {
	ctx := context.Background()
	f := newTamperFixture(t)
	if _, err := f.store.Chain(ctx, "c-a"); err != nil {
		t.Fatal(err)
	}
	f.store.Close()
	f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
		const a2 = "contracts/87/c-a/0xx/2-nova.test.step.json"
		delete(files, a2)
		delete(files, chain.SigPath(a2))
	})
	s := openStoreIn(t, f.repo, filepath.Dir(f.store.WitnessPath()), f.keys)
	if _, err := s.Chain(ctx, "c-a"); runner.ReasonOf(err) != runner.EvidenceChainBroken {
		t.Fatalf("Chain after an event was deleted = %v, want EVIDENCE_CHAIN_BROKEN", err)
	}
}

// TestChainCacheOfOwnDelivery: a store that delivered its own events
// reads its chain at the new head (as Close does, for the cache) without
// reading back and verifying those files: it knows what checking them
// would find. That must be exactly what reading and verifying the repo
// from nothing finds: the same files, sums, signers and events, in memory
// and in the cache.
func TestChainCacheOfOwnDelivery(t *testing.T) {
	ctx := context.Background()
	repo, keys, state := newBareRepo(t), newKeys(t), t.TempDir()
	s := openStoreIn(t, repo, state, keys)
	s.DeferOutboxSync()
	contracts := []string{"c-a", "c-b", "c-c"}
	em := runner.NewEmitter(s, "urn:nova:test", "run-1", testClock())
	for _, c := range contracts {
		// The chain is read first, as a run's gate reads it, so the
		// delivery carries it forward.
		if _, err := s.Chain(ctx, c); err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			if _, err := em.Emit(ctx, "nova.test.step", c, runner.Environment("dev"), map[string]any{"i": i, "c": c}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := openStore(t, repo, keys)
	head := headOf(t, repo)
	for _, c := range contracts {
		carried := s.chains[c]
		if got := len(carried.checks); got != 3 {
			t.Fatalf("%s: the delivery left %d known checks, want 3", c, got)
		}
		own, err := s.readChain(c, carried.tree, carried)
		if err != nil {
			t.Fatal(err)
		}
		want, err := fresh.chainAt(head, c)
		if err != nil {
			t.Fatal(err)
		}
		if len(want.events) != 3 {
			t.Fatalf("%s: %d events in the repo, want 3", c, len(want.events))
		}
		if diff := cmp.Diff(want.files, own.files); diff != "" {
			t.Fatalf("%s: files differ (-verified +known):\n%s", c, diff)
		}
		if diff := cmp.Diff(want.checks, own.checks); diff != "" {
			t.Fatalf("%s: checks differ (-verified +known):\n%s", c, diff)
		}
		if diff := cmp.Diff(want.events, own.events); diff != "" || want.hash != own.hash {
			t.Fatalf("%s: events differ (-verified +known):\n%s", c, diff)
		}
	}
	s.Close()
	for _, c := range contracts {
		cached, err := readChainCache(s.chainCachePath(c), c, s.eventKeys.Fingerprint())
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		if diff := cmp.Diff(chainOf(t, repo, keys, c), cached.events); diff != "" {
			t.Fatalf("%s: cached events differ (-repo +cache):\n%s", c, diff)
		}
	}
}
