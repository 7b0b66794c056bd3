package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// batchObjects builds one batch as a run's commits make it: n commits on
// parent, each adding a file to a directory of some size, so each commit's
// tree is the next version of the one before (PutNext).
func batchObjects(t *testing.T, parent, prevTree plumbing.Hash, entries []Entry, first, n int) (objs *Objects, head, tree plumbing.Hash, _ []Entry) {
	t.Helper()
	objs, head, tree = NewObjects(), parent, prevTree
	for i := first; i < first+n; i++ {
		name := fmt.Sprintf("%d-nova.test.step.json", i)
		entries = Upsert(entries, Entry{Name: name, Mode: filemode.Regular, Hash: objs.Put(plumbing.BlobObject, []byte(name))})
		tree = objs.PutNext(plumbing.TreeObject, EncodeTree(entries), tree)
		sig := object.Signature{Name: "nova", Email: "nova@localhost", When: time.Unix(int64(i), 0).UTC()}
		c := &object.Commit{Author: sig, Committer: sig, Message: name + "\n", TreeHash: tree}
		if !head.IsZero() {
			c.ParentHashes = []plumbing.Hash{head}
		}
		var err error
		if head, err = objs.PutCommit(c); err != nil {
			t.Fatal(err)
		}
	}
	return objs, head, tree, entries
}

// TestPushOverATransportSendsTreeVersionsAsDeltas pushes a batch through
// git's own receive-pack (file://), told to keep what it receives as a pack
// and to fsck every object, and checks that the pack it kept holds the
// later tree versions as deltas, and that git reads every object back.
func TestPushOverATransportSendsTreeVersionsAsDeltas(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on PATH")
	}
	remote := filepath.Join(t.TempDir(), "remote.git")
	branch := plumbing.NewBranchReferenceName("main")
	if err := InitBare(remote, branch); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{"receive.unpackLimit", "1"}, {"transfer.fsckObjects", "true"}, {"receive.autogc", "false"}} {
		if out, err := exec.Command(git, "--git-dir", remote, "config", kv[0], kv[1]).CombinedOutput(); err != nil {
			t.Fatalf("git config: %v\n%s", err, out)
		}
	}
	target, err := OpenClone(filepath.Join(t.TempDir(), "clone.git"), "file://"+remote, branch, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })

	var entries []Entry
	for j := range 50 {
		entries = append(entries, Entry{Name: fmt.Sprintf("old-%02d", j), Mode: filemode.Regular, Hash: plumbing.ComputeHash(plumbing.BlobObject, []byte{byte(j)})})
	}
	seed := NewObjects()
	for j := range 50 {
		seed.Put(plumbing.BlobObject, []byte{byte(j)})
	}
	objs, head, _, _ := batchObjects(t, plumbing.ZeroHash, plumbing.ZeroHash, entries, 1, 11)
	for _, h := range seed.order {
		objs.add(seed.get(h))
	}
	if err := target.Push(context.Background(), plumbing.ZeroHash, head, objs); err != nil {
		t.Fatal(err)
	}
	// The first tree is whole, the ten after it deltas of the one before.
	if got := packDeltas(t, git, remote); got != 10 {
		t.Errorf("the pushed pack holds %d deltas, want 10", got)
	}
	if out, err := exec.Command(git, "--git-dir", remote, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	out, err := exec.Command(git, "--git-dir", remote, "rev-parse", "refs/heads/main").Output()
	if err != nil || string(bytes.TrimSpace(out)) != head.String() {
		t.Fatalf("the remote branch is %q (%v), want %s", out, err, head)
	}
}

// TestStreamedPackWithoutDeltasHoldsEveryObjectWhole: for a receiver that
// does not announce ofs-delta, the same objects go whole, and git indexes
// the pack.
func TestStreamedPackWithoutDeltasHoldsEveryObjectWhole(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on PATH")
	}
	objs, _, _, _ := batchObjects(t, plumbing.ZeroHash, plumbing.ZeroHash, nil, 1, 60)
	for _, deltas := range []bool{false, true} {
		var pack bytes.Buffer
		if err := streamObjectsPack(&pack, objs, deltas); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(t.TempDir(), "p.pack")
		if err := os.WriteFile(file, pack.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command(git, "index-pack", "--strict", file).CombinedOutput(); err != nil {
			t.Fatalf("git index-pack (deltas %v): %v\n%s", deltas, err, out)
		}
		out, err := exec.Command(git, "verify-pack", "-s", strings.TrimSuffix(file, ".pack")+".idx").CombinedOutput()
		if err != nil {
			t.Fatalf("git verify-pack: %v\n%s", err, out)
		}
		whole := bytes.Contains(out, []byte("non delta: 180 objects"))
		if whole == deltas {
			t.Errorf("deltas %v: git verify-pack -s says\n%s", deltas, out)
		}
	}
}
