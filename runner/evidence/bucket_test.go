package evidence

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// TestEventsCrossIntoTheNextBucket writes a contract's events past seq 99,
// in a batch that starts in one bucket and ends in the next, and checks
// that every reader agrees: a fresh store reads the whole chain, verify
// (full and --since across the boundary) finds nothing, git fsck accepts
// the trees, and each bucket holds only its own hundred.
func TestEventsCrossIntoTheNextBucket(t *testing.T) {
	repo := newBareRepo(t)
	keys := newKeys(t)
	s := openStore(t, repo, keys)
	emitN(t, s, "c-a", 95)
	since := headOf(t, repo)
	emitN(t, s, "c-a", 10) // seq 96–105: one batch, two buckets
	emitN(t, openStore(t, repo, keys), "c-a", 1)

	events := chainOf(t, repo, keys, "c-a")
	if len(events) != 106 || events[105].Seq != 106 {
		t.Fatalf("fresh store reads %d events", len(events))
	}
	opts := verifyOptions(t, keys)
	if rep := verifyRepo(t, repo, opts); !rep.OK() || rep.Events != 106 || rep.Commits != 106 {
		t.Fatalf("verify: %+v%s", rep, dumpFindings(rep))
	}
	opts.Since = since.String()
	if rep := verifyRepo(t, repo, opts); !rep.OK() || rep.Events != 11 || rep.Commits != 11 {
		t.Fatalf("verify --since: %+v%s", rep, dumpFindings(rep))
	}

	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on PATH")
	}
	if out, err := exec.Command(gitBin, "--git-dir", repo, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}

	r, err := git.PlainOpen(repo)
	if err != nil {
		t.Fatal(err)
	}
	c, err := r.CommitObject(headOf(t, repo))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := tree.Tree("contracts/87/c-a")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range dir.Entries {
		names = append(names, e.Name)
	}
	if strings.Join(names, " ") != "0xx 1xx" {
		t.Fatalf("contracts/87/c-a holds %v, want the buckets 0xx and 1xx", names)
	}
	for bucket, files := range map[string]int{"0xx": 2 * 99, "1xx": 2 * 7} {
		b, err := dir.Tree(bucket)
		if err != nil {
			t.Fatal(err)
		}
		if len(b.Entries) != files {
			t.Errorf("bucket %s holds %d files, want %d", bucket, len(b.Entries), files)
		}
	}
}

// TestStoreRefusesTheFlatLayout: a contract whose events lie directly in
// its directory (what Nova wrote before buckets) is not extended as if it
// had no events: the store says why, writes nothing and keeps the event
// in its outbox.
func TestStoreRefusesTheFlatLayout(t *testing.T) {
	f := newTamperFixture(t)
	f.moveDir(t, "contracts/87/c-a/0xx/", "contracts/87/c-a/")
	assertStoreRefuses(t, f, "not in a <seq/100>xx/ bucket")
}

// TestStoreRefusesTheUnshardedLayout: a contract directory directly in
// contracts/, as Nova wrote them before shards, is not read as a contract
// without events: its chain would start again at seq 1 in the shard.
func TestStoreRefusesTheUnshardedLayout(t *testing.T) {
	f := newTamperFixture(t)
	f.moveDir(t, "contracts/87/c-a/", "contracts/c-a/")
	assertStoreRefuses(t, f, "contracts/c-a is a contract directory outside its shard 87/")
}

// assertStoreRefuses checks that a store on f's repo refuses to record
// an event of c-a, saying want, and keeps it in the outbox.
func assertStoreRefuses(t *testing.T, f *tamperFixture, want string) {
	t.Helper()
	head := f.head(t)
	s := openStore(t, f.repo, f.keys)
	err := s.Record(context.Background(), runner.Event{ID: "auth-1", SpecVersion: "1.0", Type: runner.EventApplyAuthorized, ContractID: "c-a"})
	if err == nil {
		err = s.Flush(context.Background(), "c-a")
	}
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("appending to an old layout = %v, want %q", err, want)
	}
	if _, err := s.Chain(context.Background(), "c-a"); runner.ReasonOf(err) != runner.EvidenceLayoutInvalid {
		t.Fatalf("reading the old layout's chain = %v, want EVIDENCE_LAYOUT_INVALID", err)
	}
	if f.head(t) != head {
		t.Fatal("the store wrote on top of a layout it cannot read")
	}
	if pending, err := s.Pending(); err != nil || len(pending) != 1 || pending[0].ID != "auth-1" {
		t.Fatalf("outbox = %d events, %v; want the refused event kept", len(pending), err)
	}
}

// TestContractsSharingAShard: c-a, c-a.13 and c-a-143 all hash to shard
// 87/, where git's order puts directories c-a-143 and c-a.13 before c-a
// (which sorts as "c-a/"). Each chain must be found where it is and
// continue from its own last event, and the repo verify.
func TestContractsSharingAShard(t *testing.T) {
	ids := []string{"c-a", "c-a.13", "c-a-143"}
	for _, id := range ids {
		if chain.ShardOf(id) != "87" {
			t.Fatalf("test broken: %s is in shard %s", id, chain.ShardOf(id))
		}
	}
	repo := newBareRepo(t)
	keys := newKeys(t)
	for round := range 2 {
		for _, id := range ids {
			// A fresh store each time: it must find the chain in the repo.
			emitN(t, openStore(t, repo, keys), id, 2)
			if events := chainOf(t, repo, keys, id); len(events) != 2*(round+1) || events[len(events)-1].Seq != int64(2*(round+1)) {
				t.Fatalf("round %d: chain of %s is %d events", round, id, len(events))
			}
		}
	}
	if rep := verifyRepo(t, repo, verifyOptions(t, keys)); !rep.OK() || rep.Events != 12 || rep.Contracts != 3 {
		t.Fatalf("verify: %+v%s", rep, dumpFindings(rep))
	}
}
