package evidence

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestConcurrentWriters is the durability proof: 8 writers, each
// with its own outbox, append 50 events each to one bare repo. Writers
// share contracts, so most pushes race and must be re-chained. Nothing may
// be lost or doubled, and every chain must verify. It runs twice: with a
// separate clone per writer pushing through git's transport (file://, so
// real git-receive-pack takes the ref lock), and with the bare repo given
// as a path, written in place as local mode does.
func TestConcurrentWriters(t *testing.T) {
	t.Run("separate clones over file://", func(t *testing.T) {
		repo := newBareRepo(t)
		testConcurrentWriters(t, repo, "file://"+repo)
	})
	t.Run("in place", func(t *testing.T) {
		repo := newBareRepo(t)
		testConcurrentWriters(t, repo, repo)
	})
}

func testConcurrentWriters(t *testing.T, repo, url string) {
	const writers, perWriter = 8, 50
	keys := newKeys(t)
	contracts := []string{"c-shared-1", "c-shared-2", "c-shared-3"}

	var wg sync.WaitGroup
	ids := make([][]string, writers)
	errs := make(chan error, writers)
	for w := range writers {
		s := openStore(t, url, keys)
		wg.Add(1)
		go func() {
			defer wg.Done()
			ems := map[string]*runner.Emitter{}
			for i := range perWriter {
				c := contracts[(w+i)%len(contracts)]
				if ems[c] == nil {
					ems[c] = runner.NewEmitter(s, "urn:nova:writer", "run", nil)
				}
				e, err := ems[c].Emit(context.Background(), "nova.test.step", c, "dev", map[string]int{"writer": w, "i": i})
				if err != nil {
					errs <- err
					return
				}
				ids[w] = append(ids[w], e.ID)
				// Batches of a few events per contract, as runs push them,
				// racing the other writers' batches.
				if i%10 == 9 {
					if err := s.Drain(context.Background()); err != nil {
						errs <- err
						return
					}
				}
			}
			if p, err := s.Pending(); err != nil || len(p) != 0 {
				t.Errorf("writer %d: %d events left in the outbox (%v)", w, len(p), err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	rep := verifyRepo(t, repo, verifyOptions(t, keys))
	if !rep.OK() {
		t.Fatalf("verify found breaks:%s", dumpFindings(rep))
	}
	if rep.Events != writers*perWriter || rep.Commits != writers*perWriter {
		t.Fatalf("%d events in %d commits, want %d", rep.Events, rep.Commits, writers*perWriter)
	}
	// Every id written is in the repo exactly once (verify already refuses
	// duplicates; this catches loss).
	seen := map[string]int{}
	for _, c := range contracts {
		for _, e := range chainOf(t, repo, keys, c) {
			seen[e.ID]++
		}
	}
	lost := 0
	for _, wids := range ids {
		for _, id := range wids {
			if seen[id] != 1 {
				lost++
			}
		}
	}
	if lost != 0 || len(seen) != writers*perWriter {
		t.Fatalf("%d events lost or doubled; %d distinct in repo", lost, len(seen))
	}
}

// TestOneStoreManyContracts is the monorepo shape: several goroutines
// record events for several contracts through one Store at once (and, in
// the second case, through two Stores sharing one repo and one state dir,
// as two runs on one machine would). Each goroutine has its own Emitter,
// so the store alone keeps the chains straight. Nothing may be lost or
// doubled, every chain must be continuous and the repo must verify.
func TestOneStoreManyContracts(t *testing.T) {
	for _, tt := range []struct {
		name   string
		stores int
		url    func(repo string) string
	}{
		{"one store, in place", 1, func(repo string) string { return repo }},
		{"one store over file://", 1, func(repo string) string { return "file://" + repo }},
		{"two stores sharing a state dir", 2, func(repo string) string { return repo }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const goroutines, perGoroutine = 6, 8
			repo, keys, stateDir := newBareRepo(t), newKeys(t), t.TempDir()
			stores := make([]*Store, tt.stores)
			for i := range stores {
				stores[i] = openStoreIn(t, tt.url(repo), stateDir, keys)
			}
			contracts := []string{"c-1", "c-2", "c-3"}
			var wg sync.WaitGroup
			ids := make([][]string, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					s := stores[g%len(stores)]
					em := runner.NewEmitter(s, "urn:nova:test", fmt.Sprintf("run-%d", g), nil)
					for i := range perGoroutine {
						e, err := em.Emit(t.Context(), "nova.test.step", contracts[(g+i)%len(contracts)], "dev", map[string]int{"g": g, "i": i})
						if err != nil {
							t.Error(err)
							return
						}
						ids[g] = append(ids[g], e.ID)
					}
				})
			}
			wg.Wait()
			for _, s := range stores {
				if err := s.Drain(t.Context()); err != nil {
					t.Fatal(err)
				}
				if p, err := s.Pending(); err != nil || len(p) != 0 {
					t.Fatalf("%d events left in the outbox (%v)", len(p), err)
				}
			}
			if rep := verifyRepo(t, repo, verifyOptions(t, keys)); !rep.OK() || rep.Events != goroutines*perGoroutine {
				t.Fatalf("verify: %d events%s", rep.Events, dumpFindings(rep))
			}
			seen := map[string]int{}
			for _, c := range contracts {
				for _, e := range chainOf(t, repo, keys, c) {
					seen[e.ID]++
				}
			}
			for _, gids := range ids {
				for _, id := range gids {
					if seen[id] != 1 {
						t.Errorf("event %s is in the repo %d times", id, seen[id])
					}
				}
			}
		})
	}
}
