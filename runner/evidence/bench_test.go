package evidence

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/evidencetest"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// fixtureRoot holds benchmark fixtures shared by every b.N round of one
// test binary; TestMain removes it.
var fixtureRoot string

func TestMain(m *testing.M) {
	code := m.Run()
	if fixtureRoot != "" {
		os.RemoveAll(fixtureRoot)
	}
	os.Exit(code)
}

// BenchmarkEvidenceAppend measures signed events committed to a local bare
// repo per second, through Record and Flush: outbox append + fsync, sign,
// commit, OpenPGP-sign, push, witness, outbox mark. Each contract's events
// are pushed ten at a time, as a run pushes them (one pack, one ref
// update, one witness append per batch). "batch-10" is how local mode
// writes its repo; "batch-10-file-transport" goes through a clone and
// git-receive-pack, as a remote would (minus the network).
func BenchmarkEvidenceAppend(b *testing.B) {
	for _, bb := range []struct {
		name      string
		transport bool
	}{
		{"batch-10", false},
		{"batch-10-file-transport", true},
	} {
		b.Run(bb.name, func(b *testing.B) {
			repo := newBareRepo(b)
			if bb.transport {
				repo = "file://" + repo
			}
			benchmarkAppend(b, repo, 10)
		})
	}
}

// benchmarkAppend records b.N events over ten contracts, batch events of
// one contract at a time, and flushes each batch.
func benchmarkAppend(b *testing.B, repo string, batch int) {
	s := openStore(b, repo, newKeys(b))
	ctx := context.Background()
	data, _ := json.Marshal(map[string]string{"stage": "plan", "verdict": "pass"})
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		contract := fmt.Sprintf("c-%02d", (i/batch)%10)
		e := runner.Event{
			SpecVersion: "1.0", ID: fmt.Sprintf("bench-%d", i), Source: "urn:nova:bench", Type: "nova.plan.created",
			Time: time.Now().UTC(), DataContentType: "application/json", RunID: "run", ContractID: contract,
			Environment: "dev", Data: data,
		}
		if err := s.Record(ctx, e); err != nil {
			b.Fatal(err)
		}
		if (i+1)%batch == 0 {
			if err := s.Flush(ctx, contract); err != nil {
				b.Fatal(err)
			}
		}
	}
	if err := s.Drain(ctx); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkEvidenceVerify measures what `nova evidence verify` does, per
// event, on a 10 000-event repo (100 contracts' runs, packed as a clone
// would be): every commit signature and content, every event signature,
// every chain. The fixture is built once per test binary.
func BenchmarkEvidenceVerify(b *testing.B) {
	const contracts, events = 100, 10_000
	repo, keys := verifyFixture(b, contracts, events)
	opts := verifyOptions(b, keys)
	for b.Loop() {
		if rep := verifyRepo(b, repo, opts); !rep.OK() || rep.Events != events {
			b.Fatalf("fixture does not verify: %d events%s", rep.Events, dumpFindings(rep))
		}
	}
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "events/s")
}

var fixtureOnce sync.Once
var fixtureRepo string
var fixtureKeys signing.Keys

// verifyFixture builds, once per test binary, a repo of events events of
// contracts contracts' runs (evidencetest.History), signed with keys of
// its own.
func verifyFixture(b *testing.B, contracts, events int) (string, signing.Keys) {
	fixtureOnce.Do(func() {
		dir, err := os.MkdirTemp("", "nova-evidence-bench-")
		if err != nil {
			b.Fatal(err)
		}
		fixtureRoot = dir
		keys := newKeys(b)
		repo := filepath.Join(dir, "evidence.git")
		history := evidencetest.History(contracts, events, time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), 30*24*time.Hour)
		if _, err := evidencetest.Build(repo, keys, history); err != nil {
			b.Fatal(err)
		}
		fixtureRepo, fixtureKeys = repo, keys
	})
	if fixtureRepo == "" {
		b.Fatal("fixture build failed earlier")
	}
	return fixtureRepo, fixtureKeys
}

// BenchmarkEvidenceVerifySince measures `verify --since` on the verify
// fixture with its last 0, 100 and 1 000 events new since a head: the cost
// follows the new events (the 0 case is the fixed cost of opening the
// repo and reading its head), not the 10 000 before them.
func BenchmarkEvidenceVerifySince(b *testing.B) {
	for _, fresh := range []int{0, 100, 1000} {
		b.Run(fmt.Sprintf("new=%d", fresh), func(b *testing.B) {
			benchmarkVerifySince(b, fresh)
		})
	}
}

func benchmarkVerifySince(b *testing.B, fresh int) {
	repo, keys := verifyFixture(b, 100, 10_000)
	opts := verifyOptions(b, keys)
	ctx := context.Background()
	r, err := chain.OpenRepo(ctx, repo, "", chain.Credentials{})
	if err != nil {
		b.Fatal(err)
	}
	since := r.HeadHash()
	reader := r.NewReader()
	for range fresh {
		c, err := reader.Commit(since)
		if err != nil {
			b.Fatal(err)
		}
		since = c.FirstParent()
	}
	r.Close()
	opts.Since = since.String()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		rep := verifyRepo(b, repo, opts)
		if !rep.OK() || rep.Events != fresh || rep.Commits != fresh {
			b.Fatalf("fixture does not verify since %s: %d events, %d commits%s", since, rep.Events, rep.Commits, dumpFindings(rep))
		}
	}
	if fresh > 0 {
		b.ReportMetric(float64(b.N*fresh)/b.Elapsed().Seconds(), "events/s")
	}
}

// BenchmarkFirstSync measures a store's first sync on a state dir with no
// witness, as a hosted CI job starts: every commit of the history is
// checked (the verify fixture's 10 000, one per event). "commits/s" is
// the rate.
func BenchmarkFirstSync(b *testing.B) {
	const events = 10_000
	repo, keys := verifyFixture(b, 100, events)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		state, err := os.MkdirTemp(fixtureRoot, "first-sync-")
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		s, err := Open(ctx, Config{Repo: repo, StateDir: state, Keys: keys})
		if err == nil {
			err = s.Sync(ctx)
			s.Close()
		}
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		os.RemoveAll(state)
		b.StartTimer()
	}
	b.ReportMetric(float64(b.N*events)/b.Elapsed().Seconds(), "commits/s")
}
