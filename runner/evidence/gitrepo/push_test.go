package gitrepo

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

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

	objs := NewObjects()
	head, _, _ := addCommits(t, objs, plumbing.ZeroHash, plumbing.ZeroHash, oldEntries(objs), 1, 11, nil)
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
	objs := NewObjects()
	addCommits(t, objs, plumbing.ZeroHash, plumbing.ZeroHash, nil, 1, 60, nil)
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
