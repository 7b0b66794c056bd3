package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/evidencetest"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// queryFixture is a 100 000-event evidence repo on disk (250 contracts'
// runs over half a year, from evidencetest.History) and the public keys
// that verify it, built once per test binary.
type queryFixture struct {
	repo, eventKey, commitKey, home string
	keys                            signing.Keys
}

var (
	queryOnce sync.Once
	queryFix  *queryFixture
	benchRoot string
)

func newQueryFixture(b *testing.B) *queryFixture {
	queryOnce.Do(func() {
		root, err := os.MkdirTemp("", "nova-query-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchRoot = root
		priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			b.Fatal(err)
		}
		ev, err := signing.NewSigner(priv)
		if err != nil {
			b.Fatal(err)
		}
		cs, err := signing.GenerateCommitSigner("Nova Bench", "nova-bench@example.com")
		if err != nil {
			b.Fatal(err)
		}
		f := &queryFixture{repo: filepath.Join(root, "evidence.git"), home: filepath.Join(root, "home"), keys: signing.Keys{Events: ev, Commit: cs}}
		pem, err := ev.PublicKeyPEM()
		if err != nil {
			b.Fatal(err)
		}
		asc, err := cs.ArmoredPublicKey()
		if err != nil {
			b.Fatal(err)
		}
		f.eventKey, f.commitKey = filepath.Join(root, "cosign.pub"), filepath.Join(root, "commit.asc")
		if err := os.WriteFile(f.eventKey, pem, 0o644); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(f.commitKey, asc, 0o644); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		events := evidencetest.History(250, 100_000, time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), 180*24*time.Hour)
		if _, err := evidencetest.Build(f.repo, f.keys, events); err != nil {
			b.Fatal(err)
		}
		b.Logf("built a %d-event evidence repo in %s", len(events), time.Since(start).Round(time.Second))
		queryFix = f
	})
	if queryFix == nil {
		b.Fatal("the query fixture could not be built")
	}
	return queryFix
}

// query runs `nova evidence query` over the fixture and returns its
// output.
func (f *queryFixture) query(b *testing.B, args ...string) string {
	var stdout, stderr bytes.Buffer
	full := append([]string{"evidence", "query", f.repo, "--key", f.eventKey, "--commit-key", f.commitKey}, args...)
	vars := map[string]string{"HOME": f.home}
	err := run(context.Background(), Env{Args: full, Getenv: func(k string) string { return vars[k] }, Stdout: &stdout, Stderr: &stderr})
	if err != nil {
		b.Fatalf("query %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// BenchmarkEvidenceQuery100k measures `nova evidence query`, the whole
// command, over a 100 000-event repo once it is local and indexed:
// "filtered" asks who approved what in prod (JSON Lines,
// so each matching event is read back from the repo), "all" lists every
// event as CSV, and "new-head" first records one more event, so the index
// is extended by it. Building the index the first time verifies every
// event and commit; it is logged, not timed.
func BenchmarkEvidenceQuery100k(b *testing.B) {
	f := newQueryFixture(b)
	start := time.Now()
	f.query(b, "--output", "csv", "--type", "none")
	b.Logf("first query (index built by verifying every event) in %s", time.Since(start).Round(10*time.Millisecond))

	b.Run("filtered", func(b *testing.B) {
		for b.Loop() {
			out := f.query(b, "--env", "prod", "--approver", "sre-oncall", "--type", runner.EventApprovalRecorded, "--output", "jsonl")
			if n := strings.Count(out, "\n"); n < 1000 {
				b.Fatalf("%d rows", n)
			}
		}
	})
	b.Run("all", func(b *testing.B) {
		for b.Loop() {
			if n := strings.Count(f.query(b, "--output", "csv"), "\n"); n < 100_001 {
				b.Fatalf("%d rows", n)
			}
		}
	})
	b.Run("new-head", func(b *testing.B) {
		store, err := evidence.Open(context.Background(), evidence.Config{Repo: f.repo, StateDir: filepath.Join(f.home, "writer"), Keys: f.keys})
		if err != nil {
			b.Fatal(err)
		}
		defer store.Close()
		em := runner.NewEmitter(store, "urn:nova:bench", "bench-run", nil)
		for b.Loop() {
			b.StopTimer()
			if _, err := em.Emit(context.Background(), runner.EventContractValidated, "svc-0007", runner.Dev, map[string]string{"contractDigest": "x"}); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			f.query(b, "--contract", "svc-0007", "--type", runner.EventContractValidated, "--since", "1d", "--output", "csv")
		}
	})
}
