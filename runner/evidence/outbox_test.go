package evidence

import (
	"context"
	"crypto/sha256"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// TestPushFailureBeforeApply: with the evidence repo unreachable an
// ordinary event is kept in the outbox and acknowledged, but the
// authorizing event fails closed with EVIDENCE_PUSH_FAILED so apply never
// starts. The next run's drain delivers everything exactly once.
func TestPushFailureBeforeApply(t *testing.T) {
	ctx := context.Background()
	keys := newKeys(t)
	stateDir := t.TempDir()
	remote := filepath.Join(t.TempDir(), "not-yet", "evidence.git") // unreachable: nothing there

	s := openStoreIn(t, remote, stateDir, keys)
	em := runner.NewEmitter(s, "urn:nova:test", "run-1", nil)
	plan, err := em.Emit(ctx, runner.EventPlanCreated, "c-1", "dev", map[string]string{"digest": "abc"})
	if err != nil {
		t.Fatalf("plan event with the repo down = %v, want nil (kept in the outbox)", err)
	}
	_, err = em.Emit(ctx, runner.EventApplyAuthorized, "c-1", "dev", map[string]string{"digest": "abc"})
	if runner.ReasonOf(err) != runner.EvidencePushFailed {
		t.Fatalf("apply.authorized with the repo down = %v, want EVIDENCE_PUSH_FAILED", err)
	}
	pending, err := s.Pending()
	if err != nil || len(pending) != 2 || pending[0].ID != plan.ID || pending[1].Type != runner.EventApplyAuthorized {
		t.Fatalf("outbox holds %d events (%v), want plan + authorization", len(pending), err)
	}

	// The next run: the repo is back, a new Store on the same state dir.
	if err := gitrepo.InitBare(remote, "refs/heads/main"); err != nil {
		t.Fatal(err)
	}
	next := openStoreIn(t, remote, stateDir, keys)
	if err := next.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	if err := next.Drain(ctx); err != nil { // nothing left: a no-op
		t.Fatal(err)
	}
	// A redelivery of an already pushed event (a crash between push and
	// outbox rewrite) is dropped by id.
	if err := next.Record(ctx, pending[0]); err != nil {
		t.Fatal(err)
	}
	if err := next.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	rep := verifyRepo(t, remote, verifyOptions(t, keys))
	if !rep.OK() || rep.Events != 2 {
		t.Fatalf("after drain: %d events, findings:%s", rep.Events, dumpFindings(rep))
	}
	if p, _ := next.Pending(); len(p) != 0 {
		t.Fatalf("outbox still holds %d events", len(p))
	}
}

func TestPushFailureUnreachableURL(t *testing.T) {
	keys := newKeys(t)
	// A closed port on loopback: connection refused, no traffic leaves.
	s := openStore(t, "http://127.0.0.1:1/evidence.git", keys, WithBasicAuth("x-access-token", "s3cr3t-token"))
	err := s.Record(context.Background(), runner.Event{SpecVersion: "1.0", ID: "a-1", Type: runner.EventApplyAuthorized, ContractID: "c"})
	if runner.ReasonOf(err) != runner.EvidencePushFailed {
		t.Fatalf("Record = %v, want EVIDENCE_PUSH_FAILED", err)
	}
	if strings.Contains(err.Error(), "s3cr3t-token") {
		t.Fatalf("token leaked into the error: %v", err)
	}
	if p, _ := s.Pending(); len(p) != 1 {
		t.Fatalf("outbox holds %d events, want 1", len(p))
	}
}

func TestOutboxDropsTornLastLine(t *testing.T) {
	dir := t.TempDir()
	o := outbox{dir: dir, lock: filepath.Join(dir, lockName)}
	e := runner.Event{SpecVersion: "1.0", ID: "e-1", Type: "nova.test.step"}
	if err := o.add("c", e, nil); err != nil {
		t.Fatal(err)
	}
	if err := o.add("c", e, nil); err != nil { // redelivery: no second line
		t.Fatal(err)
	}
	f, err := os.OpenFile(o.file("c"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString(`{"id":"torn","ty`) // a crash mid-append
	f.Close()
	got, _, err := o.load("c")
	if err != nil || len(got) != 1 || got[0].ID != "e-1" {
		t.Fatalf("load = %+v, %v; want just e-1", got, err)
	}
	if err := o.add("c", runner.Event{SpecVersion: "1.0", ID: "e-2", Type: "nova.test.step"}, nil); err != nil {
		t.Fatal(err)
	}
	if got, _, err = o.load("c"); err != nil || len(got) != 2 {
		t.Fatalf("after append: %d events, %v", len(got), err)
	}
}

// TestInPlacePushIsDurableBeforeDelivered: writing a bare repo in place,
// the batch's pack and its index are fsynced under their temporary names
// (so a name never points at a torn file), then the pack directory, then
// the branch's directory, all before the outbox forgets the event. A power
// cut cannot be staged here, so the test watches the sync calls and, when
// the branch's directory is synced, that the outbox still holds the event.
func TestInPlacePushIsDurableBeforeDelivered(t *testing.T) {
	repo := newBareRepo(t)
	stateDir := t.TempDir()
	s := openStoreIn(t, repo, stateDir, newKeys(t))
	refsDir := filepath.Join(repo, "refs", "heads")
	packDir := filepath.Join(repo, "objects", "pack")

	var mu sync.Mutex
	var order []string
	syncedContent := map[[32]byte]bool{} // of temporary pack files, when synced
	outboxAtRefSync := ""
	orig := syncPath
	syncPath = func(p string) error {
		mu.Lock()
		defer mu.Unlock()
		order = append(order, p)
		if strings.HasPrefix(filepath.Base(p), "tmp_") {
			b, err := os.ReadFile(p)
			if err != nil {
				t.Errorf("syncing %s: %v", p, err)
			}
			syncedContent[sha256.Sum256(b)] = true
		}
		if p == refsDir {
			b, _ := os.ReadFile(filepath.Join(stateDir, outboxDir, "c-1.jsonl"))
			outboxAtRefSync = string(b)
		}
		return orig(p)
	}
	t.Cleanup(func() { syncPath = orig })

	e := emitN(t, s, "c-1", 1)[0]

	named, _ := filepath.Glob(filepath.Join(packDir, "pack-*"))
	if len(named) != 2 {
		t.Fatalf("pack dir holds %v, want one pack and its index", named)
	}
	for _, p := range named {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if !syncedContent[sha256.Sum256(b)] {
			t.Errorf("%s was named before its content was synced", filepath.Base(p))
		}
	}
	packSync, refSync := slices.Index(order, packDir), slices.Index(order, refsDir)
	if packSync < 0 || refSync < 0 || packSync > refSync {
		t.Errorf("syncs in order %v: want the pack dir synced before the branch's dir", order)
	}
	if !strings.Contains(outboxAtRefSync, e.ID) {
		t.Errorf("the outbox had dropped event %s before the branch was durable (outbox: %q)", e.ID, outboxAtRefSync)
	}
}

// TestOneUndeliverableContractHoldsNoOtherBack: a contract whose chain in
// the repo is broken (here: a file outside the layout, in a commit the
// allowed key signed) cannot be delivered, and its events wait in its
// outbox; the other contracts' events, queued behind it while the repo was
// down, still arrive, and Drain's error names only the broken contract.
func TestOneUndeliverableContractHoldsNoOtherBack(t *testing.T) {
	ctx := t.Context()
	f := newTamperFixture(t)
	remote := filepath.Join(t.TempDir(), "evidence.git") // nothing there yet
	s := openStoreIn(t, remote, t.TempDir(), f.keys)
	for _, c := range []string{"a-broken", "b-ok", "c-ok"} {
		if _, err := runner.NewEmitter(s, "urn:nova:test", "run", nil).Emit(ctx, "nova.test.step", c, "dev", nil); err != nil {
			t.Fatal(err)
		}
	}
	// The repo appears, with a-broken's chain damaged.
	emitN(t, f.store, "a-broken", 1)
	f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { files["contracts/70/a-broken/notes.txt"] = []byte("hi") })
	if err := os.Rename(f.repo, remote); err != nil {
		t.Fatal(err)
	}

	err := s.Drain(ctx)
	if runner.ReasonOf(err) != runner.EvidencePushFailed || !strings.Contains(err.Error(), "contract a-broken: contracts/70/a-broken/notes.txt") {
		t.Fatalf("Drain = %v; want EVIDENCE_PUSH_FAILED naming contract a-broken and its broken layout", err)
	}
	t.Logf("Drain: %v", err)
	if strings.Contains(err.Error(), "b-ok") || strings.Contains(err.Error(), "c-ok") {
		t.Errorf("Drain names contracts that were delivered: %v", err)
	}
	pending, _ := s.Pending()
	if len(pending) != 1 || pending[0].ContractID != "a-broken" {
		t.Errorf("pending = %+v; want a-broken's event only", pending)
	}
	for _, c := range []string{"b-ok", "c-ok"} {
		if events := chainOf(t, remote, f.keys, c); len(events) != 1 {
			t.Errorf("%s has %d events in the repo, want 1", c, len(events))
		}
	}
}

// TestOpenMovesTheLegacyOutbox: an outbox.jsonl left by a Nova that kept
// one outbox for every contract is split into per-contract outboxes on
// Open, delivered marks and torn last line honoured, so an upgrade loses
// nothing.
func TestOpenMovesTheLegacyOutbox(t *testing.T) {
	repo, keys, stateDir := newBareRepo(t), newKeys(t), t.TempDir()
	var legacy []byte
	for _, e := range []runner.Event{
		{SpecVersion: "1.0", ID: "e-1", Source: "urn:x", Type: "nova.test.step", ContractID: "c-1", Seq: 1},
		{SpecVersion: "1.0", ID: "e-2", Source: "urn:x", Type: "nova.test.step", ContractID: "c-2", Seq: 1},
		{SpecVersion: "1.0", ID: "e-3", Source: "urn:x", Type: "nova.test.step", ContractID: "c-1", Seq: 2},
	} {
		line, _ := e.Canonical()
		legacy = append(append(legacy, line...), '\n')
	}
	legacy = append(legacy, `{"delivered":"e-3"}`+"\n"+`{"id":"torn`...)
	if err := os.WriteFile(filepath.Join(stateDir, legacyOutbox), legacy, 0o600); err != nil {
		t.Fatal(err)
	}
	s := openStoreIn(t, repo, stateDir, keys)
	pending, err := s.Pending()
	if err != nil || len(pending) != 2 || pending[0].ID != "e-1" || pending[1].ID != "e-2" {
		t.Fatalf("pending after the upgrade = %+v, %v; want e-1 (c-1), e-2 (c-2)", pending, err)
	}
	if _, err := os.Stat(filepath.Join(stateDir, legacyOutbox)); !os.IsNotExist(err) {
		t.Errorf("the legacy outbox is still there: %v", err)
	}
	if err := s.Drain(t.Context()); err != nil {
		t.Fatal(err)
	}
	if rep := verifyRepo(t, repo, verifyOptions(t, keys)); !rep.OK() || rep.Events != 2 {
		t.Fatalf("verify: %d events%s", rep.Events, dumpFindings(rep))
	}
}

// TestOutboxLinesAreCanonical: what a delivery signs without encoding it
// again (canonicalAt) is the outbox line of an event still at the place
// its emitter numbered it, so each line must be exactly the canonical form
// of the event it holds, whether the recorder was handed that form or
// computed it; an event renumbered since is encoded anew.
func TestOutboxLinesAreCanonical(t *testing.T) {
	ctx := context.Background()
	s := openStore(t, newBareRepo(t), newKeys(t))
	em := runner.NewEmitter(s, "urn:nova:test", "run-1", testClock())
	if _, err := em.Emit(ctx, "nova.test.step", "c", runner.Environment("dev"), map[string]any{"b": "<&>", "a": []any{1.5, "x"}}); err != nil {
		t.Fatal(err)
	}
	if err := s.Record(ctx, runner.Event{SpecVersion: "1.0", ID: "e-plain", Type: "nova.test.step", ContractID: "c", Seq: 2, Data: []byte(`{"z":1,"a":"\u00e9"}`)}); err != nil {
		t.Fatal(err)
	}
	pending, lines, err := s.outbox.load("c")
	if err != nil || len(pending) != 2 || len(lines) != 2 {
		t.Fatalf("load = %d events, %d lines, %v; want 2", len(pending), len(lines), err)
	}
	for i, e := range pending {
		want, err := e.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		if string(lines[i]) != string(want) {
			t.Fatalf("line %d is not its event's canonical form:\n got %s\nwant %s", i, lines[i], want)
		}
		_, same, err := canonicalAt(e, lines[i], e.Seq, e.PrevEventHash)
		if err != nil || string(same) != string(want) {
			t.Fatalf("canonicalAt at the event's own place = %s, %v; want its line", same, err)
		}
		moved, renumbered, err := canonicalAt(e, lines[i], e.Seq+1, "other")
		if err != nil {
			t.Fatal(err)
		}
		if want, _ := moved.Canonical(); moved.Seq != e.Seq+1 || moved.PrevEventHash != "other" || string(renumbered) != string(want) {
			t.Fatalf("canonicalAt of a renumbered event = %s (seq %d), want %s", renumbered, moved.Seq, want)
		}
	}
}
