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
