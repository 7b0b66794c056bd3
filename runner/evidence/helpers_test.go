package evidence

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// testRetry keeps failure tests fast; conflicts still get plenty of tries.
var testRetry = Retry{Conflicts: 1000, Unreachable: 2, Base: time.Millisecond, Max: 50 * time.Millisecond}

// newBareRepo makes an empty bare repo like `git init --bare` on a forge.
//
// Pushes over file:// run git's own receive-pack, which starts a
// detached `git gc --auto` once the loose objects pass git's threshold
// (the objects of every push a racing writer lost stay behind): that gc
// could still be writing when the test's temporary directory is removed.
// A forge collects garbage on its own schedule; this repo does not.
func newBareRepo(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "evidence.git")
	if err := gitrepo.InitBare(dir, plumbing.NewBranchReferenceName(chain.DefaultBranch)); err != nil {
		t.Fatal(err)
	}
	r, err := git.PlainOpen(dir)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := r.Config()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Raw.Section("receive").SetOption("autogc", "false")
	cfg.Raw.Section("gc").SetOption("auto", "0")
	if err := r.SetConfig(cfg); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newKeys(t testing.TB) signing.Keys {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := signing.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := signing.GenerateCommitSigner("Nova Test", "nova-test@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return signing.Keys{Events: ev, Commit: cs}
}

func openStore(t testing.TB, repo string, keys signing.Keys, opts ...Option) *Store {
	t.Helper()
	return openStoreIn(t, repo, t.TempDir(), keys, opts...)
}

func openStoreIn(t testing.TB, repo, stateDir string, keys signing.Keys, opts ...Option) *Store {
	t.Helper()
	opts = append([]Option{WithRetry(testRetry), WithLogf(t.Logf)}, opts...)
	s, err := Open(context.Background(), Config{Repo: repo, StateDir: stateDir, Keys: keys}, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func testClock() func() time.Time {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	n := 0
	return func() time.Time { n++; return t0.Add(time.Duration(n) * time.Second) }
}

// emitN records n stage events for contract through an Emitter and
// flushes them, as a run would by its end, and returns them.
func emitN(t testing.TB, rec runner.Recorder, contract string, n int) []runner.Event {
	t.Helper()
	em := runner.NewEmitter(rec, "urn:nova:test", "run-"+contract, testClock())
	var out []runner.Event
	for i := range n {
		e, err := em.Emit(context.Background(), "nova.test.step", contract, runner.Environment("dev"), map[string]any{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := em.Flush(context.Background(), contract); err != nil {
		t.Fatal(err)
	}
	return out
}

func verifyOptions(t testing.TB, keys ...signing.Keys) chain.VerifyOptions {
	t.Helper()
	var ks []crypto.PublicKey
	var rings [][]byte
	for _, k := range keys {
		ks = append(ks, k.Events.PublicKey())
		pub, err := k.Commit.ArmoredPublicKey()
		if err != nil {
			t.Fatal(err)
		}
		rings = append(rings, pub)
	}
	eventKeys, err := signing.NewKeySet(ks...)
	if err != nil {
		t.Fatal(err)
	}
	commitKeys, err := signing.LoadCommitKeyRing(rings...)
	if err != nil {
		t.Fatal(err)
	}
	return chain.VerifyOptions{EventKeys: eventKeys, CommitKeys: commitKeys}
}

func verifyRepo(t testing.TB, repo string, opts chain.VerifyOptions) *chain.Report {
	t.Helper()
	r, err := chain.OpenRepo(context.Background(), repo, "", chain.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	rep, err := chain.Verify(context.Background(), r, opts)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

// hasFinding reports whether rep names reason at path (any path when
// path is "") and, when commit is set, at that commit.
func hasFinding(rep *chain.Report, reason runner.Reason, path, commit string) bool {
	return slices.ContainsFunc(rep.Findings, func(f chain.Finding) bool {
		return f.Reason == reason && (path == "" || f.Path == path) && (commit == "" || f.Commit == commit)
	})
}

func dumpFindings(rep *chain.Report) string {
	s := ""
	for _, f := range rep.Findings {
		s += fmt.Sprintf("\n  %s %s %s %s", f.Reason, f.Path, f.Commit, f.Message)
	}
	return s
}

func headOf(t testing.TB, repo string) plumbing.Hash {
	t.Helper()
	r, err := git.PlainOpen(repo)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := r.Reference(plumbing.NewBranchReferenceName(chain.DefaultBranch), true)
	if err != nil {
		t.Fatal(err)
	}
	return ref.Hash()
}

// chainOf reads a contract's chain as a fresh store sees it: every event
// verified, seq continuous.
func chainOf(t testing.TB, repo string, keys signing.Keys, contract string) []runner.Event {
	t.Helper()
	events, err := openStore(t, repo, keys).Chain(context.Background(), contract)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// unresolved is the gate's question over Store.Chain: the id of the open
// indeterminate apply of contract in env, "" when there is none.
func unresolved(ctx context.Context, s *Store, contract string, env runner.Environment) (string, error) {
	events, err := s.Chain(ctx, contract)
	if open := runner.UnresolvedApply(events, env); open != nil {
		return open.ID, err
	}
	return "", err
}
