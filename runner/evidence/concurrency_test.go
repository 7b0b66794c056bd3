package evidence

import (
	"context"
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
