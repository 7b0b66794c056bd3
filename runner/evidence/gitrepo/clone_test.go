package gitrepo

import (
	"bytes"
	"crypto/sha1"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// gitPack makes a repo with git whose history rewrites a growing file and
// adds one to a directory in every commit, packs it with deltas of deltas,
// and returns the pack and the hash of its last commit.
func gitPack(t *testing.T) ([]byte, plumbing.Hash) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on PATH")
	}
	dir := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return strings.TrimSpace(string(out))
	}
	run("init", "-q", "-b", "main")
	var log strings.Builder
	for i := range 30 {
		fmt.Fprintf(&log, "event %d: %s\n", i, strings.Repeat("x", i))
		writeTestFile(t, filepath.Join(dir, "log.txt"), log.String())
		writeTestFile(t, filepath.Join(dir, fmt.Sprintf("%03d.json", i)), fmt.Sprintf(`{"seq":%d}`, i))
		run("add", ".")
		run("commit", "-q", "-m", fmt.Sprintf("event %d", i))
	}
	run("repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=10")
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		t.Fatalf("git repack left %v", packs)
	}
	pack, err := os.ReadFile(packs[0])
	if err != nil {
		t.Fatal(err)
	}
	return pack, plumbing.NewHash(run("rev-parse", "HEAD"))
}

func writeTestFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestCloneStoresFetchedPacks: a fetched pack is stored whole and its
// objects read back; a pack that is damaged, cut, padded or counts more
// objects than it holds is refused with an error and adds nothing.
func TestCloneStoresFetchedPacks(t *testing.T) {
	pack, head := gitPack(t)
	body := pack[:len(pack)-20]
	withSum := func(b []byte) []byte {
		s := sha1.Sum(b)
		return append(bytes.Clone(b), s[:]...)
	}
	withCount := func(count ...byte) []byte {
		return withSum(append(append(bytes.Clone(body[:8]), count...), body[12:]...))
	}
	flipped := bytes.Clone(body)
	flipped[len(flipped)/2] ^= 0xff
	for _, tt := range []struct {
		name string
		pack []byte
	}{
		{"wrong checksum", append(bytes.Clone(body), make([]byte, 20)...)},
		{"cut short", withSum(body[:len(body)-7])},
		{"bytes after it", withSum(append(bytes.Clone(body), 0x78, 0x01))},
		{"not a pack", withSum(append([]byte("KCAP"), body[4:]...))},
		{"too short", pack[:31]},
		{"a changed byte", withSum(flipped)},
		{"one more than it holds", withCount(body[8], body[9], body[10], body[11]+1)},
		// go-git allocates for the count before it reads an entry.
		{"a count it cannot hold", withCount(0xff, 0xff, 0xff, 0xff)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := newTestClone(t)
			if err := c.store(tt.pack); err == nil {
				t.Fatal("stored")
			}
			if c.repo.Storer.HasEncodedObject(head) == nil {
				t.Error("the refused pack's head is readable")
			}
			if left, _ := os.ReadDir(filepath.Join(c.dir, "objects", "pack")); len(left) > 0 {
				t.Errorf("the refused pack left %v", left)
			}
		})
	}
	c := newTestClone(t)
	if err := c.store(pack); err != nil {
		t.Fatal(err)
	}
	commit, err := c.repo.CommitObject(head)
	if err != nil {
		t.Fatal(err)
	}
	f, err := commit.File("log.txt")
	if err != nil {
		t.Fatal(err)
	}
	if text, err := f.Contents(); err != nil || !strings.HasPrefix(text, "event 0: \n") || strings.Count(text, "\n") != 30 {
		t.Errorf("log.txt at the head: %q, %v", text, err)
	}
}

func newTestClone(t *testing.T) *cloneTarget {
	t.Helper()
	r, err := OpenClone(filepath.Join(t.TempDir(), "clone.git"), "file:///nowhere", plumbing.NewBranchReferenceName("main"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r.(*cloneTarget)
}
