package gitrepo

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/object"
)

func TestEncodeDeltaRebuildsTarget(t *testing.T) {
	long := bytes.Repeat([]byte("0123456789abcdef"), 9000) // copies past 0xffff
	cases := map[string][2][]byte{
		"insert in the middle": {[]byte("abcdef"), []byte("abcXYZdef")},
		"hash replaced":        {[]byte("tree a\x00" + strings.Repeat("1", 20) + "tree b"), []byte("tree a\x00" + strings.Repeat("2", 20) + "tree b")},
		"identical":            {[]byte("same"), []byte("same")},
		"empty target":         {[]byte("old"), nil},
		"insert at the start":  {[]byte("tail"), []byte("headtail")},
		"append at the end":    {[]byte("head"), []byte("headtail")},
		"long insert":          {[]byte("ab"), append(append([]byte("a"), long[:1000]...), 'b')},
		"long copies":          {long, append(append(bytes.Clone(long[:70000]), "new entry"...), long[70000:]...)},
		"repeated bytes":       {[]byte("aaaa"), []byte("aaaaaa")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) { checkDelta(t, c[0], c[1]) })
	}
	rnd := rand.New(rand.NewPCG(1, 2))
	for range 200 {
		base := make([]byte, rnd.IntN(300))
		for i := range base {
			base[i] = byte('a' + rnd.IntN(3))
		}
		target := bytes.Clone(base)
		at := rnd.IntN(len(target) + 1)
		cut := rnd.IntN(len(target) - at + 1)
		target = append(target[:at:at], append(bytes.Repeat([]byte{'x'}, rnd.IntN(200)), target[at+cut:]...)...)
		checkDelta(t, base, target)
	}
}

func FuzzEncodeDelta(f *testing.F) {
	f.Add([]byte("abcdef"), []byte("abcXYZdef"))
	f.Add([]byte{}, []byte("x"))
	f.Fuzz(func(t *testing.T, base, target []byte) { checkDelta(t, base, target) })
}

// checkDelta has go-git apply EncodeDelta's delta, as any git reader would.
// An empty base is not a delta's: the pack writer never asks for one.
func checkDelta(t *testing.T, base, target []byte) {
	t.Helper()
	if len(base) == 0 {
		return
	}
	got, err := packfile.PatchDelta(base, EncodeDelta(base, target))
	if err != nil {
		t.Fatalf("delta of %q to %q does not apply: %v", base, target, err)
	}
	if !bytes.Equal(got, target) {
		t.Fatalf("delta of %q rebuilds %q, want %q", base, got, target)
	}
}

func TestOfsDeltaDistanceReadsBack(t *testing.T) {
	for _, rel := range []uint64{1, 127, 128, 129, 16383, 16384, 16511, 16512, 1 << 20, 1<<35 + 7} {
		b := AppendOfsDelta([]byte{0xff}, rel)
		got, used, err := ofsDeltaOffset(b[1:])
		if err != nil || uint64(got) != rel || used != len(b)-1 {
			t.Errorf("distance %d reads back as %d (%d of %d bytes), %v", rel, got, used, len(b)-1, err)
		}
	}
}

// TestTreeVersionsArePackedAsDeltas pushes batches that each write five
// versions of a growing directory, as a run's commits do, and checks that
// the packs hold the later versions as deltas — before and after the
// pushes merged them — while git fsck accepts the repo and every version
// reads back as written.
func TestTreeVersionsArePackedAsDeltas(t *testing.T) {
	git, dir, target := newTestBare(t, t.Logf)
	const batches, versions = maxPacks + 4, 5
	head, prevTree := plumbing.ZeroHash, plumbing.ZeroHash
	var entries []Entry
	trees := map[plumbing.Hash][]byte{}
	for i := range batches {
		objs := NewObjects()
		parent := head
		if i == 0 {
			entries = oldEntries(objs)
		}
		head, prevTree, entries = addCommits(t, objs, head, prevTree, entries, i*versions+1, versions, trees)
		if err := target.Push(context.Background(), parent, head, objs); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		target.Keep(objs)
		if i == 0 {
			// The first version of each batch is whole: its base is in an
			// earlier pack.
			if got := packDeltas(t, git, dir); got != versions-1 {
				t.Fatalf("the first batch's pack holds %d deltas, want %d", got, versions-1)
			}
		}
	}
	packs, err := listPacks(filepath.Join(dir, "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) >= batches {
		t.Fatalf("%d packs after %d pushes: nothing was merged", len(packs), batches)
	}
	if got, want := packDeltas(t, git, dir), batches*(versions-1); got != want {
		t.Errorf("the packs hold %d deltas after merging, want %d", got, want)
	}
	if out, err := exec.Command(git, "--git-dir", dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	r := NewReader(target.Objects())
	for h, want := range trees {
		got, err := r.RawTree(h)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("tree %s reads back as %q, %v", h, got, err)
		}
	}
}

// oldEntries puts the files of a directory of some size into objs and
// returns its entries, as a contract's bucket soon is: a delta of a
// two-entry tree would not be worth its instructions.
func oldEntries(objs *Objects) []Entry {
	var entries []Entry
	for j := range 50 {
		name := fmt.Sprintf("old-%02d", j)
		entries = append(entries, Entry{Name: name, Mode: filemode.Regular, Hash: objs.Put(plumbing.BlobObject, []byte(name))})
	}
	return entries
}

// addCommits adds to objs n commits on head, as a run's commits make
// them: each adds a file named after its event (numbered from first) to
// entries, so each commit's tree is the next version of the one before
// (PutNext). It returns the last commit and tree, and the entries; trees,
// when not nil, gets each tree's content by its hash.
func addCommits(t *testing.T, objs *Objects, head, prevTree plumbing.Hash, entries []Entry, first, n int, trees map[plumbing.Hash][]byte) (plumbing.Hash, plumbing.Hash, []Entry) {
	t.Helper()
	for i := first; i < first+n; i++ {
		name := fmt.Sprintf("%d-nova.test.step.json", i)
		entries = Upsert(entries, Entry{Name: name, Mode: filemode.Regular, Hash: objs.Put(plumbing.BlobObject, []byte(name))})
		data := EncodeTree(entries)
		prevTree = objs.PutNext(plumbing.TreeObject, data, prevTree)
		if trees != nil {
			trees[prevTree] = data
		}
		sig := object.Signature{Name: "nova", Email: "nova@localhost", When: time.Unix(int64(i), 0).UTC()}
		c := &object.Commit{Author: sig, Committer: sig, Message: name + "\n", TreeHash: prevTree}
		if !head.IsZero() {
			c.ParentHashes = []plumbing.Hash{head}
		}
		var err error
		if head, err = objs.PutCommit(c); err != nil {
			t.Fatal(err)
		}
	}
	return head, prevTree, entries
}

// packDeltas counts the delta entries of every pack in the repo at dir,
// as git verify-pack lists them (a delta's line names its depth and base).
func packDeltas(t *testing.T, git, dir string) int {
	t.Helper()
	idx, err := filepath.Glob(filepath.Join(dir, "objects", "pack", "*.idx"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range idx {
		out, err := exec.Command(git, "verify-pack", "-v", p).CombinedOutput()
		if err != nil {
			t.Fatalf("git verify-pack %s: %v\n%s", p, err, out)
		}
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) == 7 && plumbing.IsHash(f[0]) {
				n++
			}
		}
	}
	return n
}

// TestABigBatchIsCompressedOnEveryCore pushes one batch of hundreds of
// versions of a directory, as a drain of many contracts does: its entries
// are compressed on several goroutines, yet written in order, each delta
// naming its base's offset, so git fsck accepts the repo, verify-pack
// finds every delta the chain-depth rule makes (whole every 51st version)
// and every version reads back as written.
func TestABigBatchIsCompressedOnEveryCore(t *testing.T) {
	git, dir, target := newTestBare(t, t.Logf)
	const versions = 300
	if entries := 3 * versions; entries < 2*entriesPerCompressor {
		t.Fatalf("%d entries make one compressor", entries)
	}
	objs := NewObjects()
	trees := map[plumbing.Hash][]byte{}
	head, _, _ := addCommits(t, objs, plumbing.ZeroHash, plumbing.ZeroHash, nil, 1, versions, trees)
	if err := target.Push(context.Background(), plumbing.ZeroHash, head, objs); err != nil {
		t.Fatal(err)
	}
	if got := packDeltas(t, git, dir); got < versions*9/10 {
		t.Errorf("the pack holds %d deltas of %d versions", got, versions)
	}
	// Byte for byte the pack one compressor writes.
	var parallel, serial bytes.Buffer
	if err := streamObjectsPack(&parallel, objs, true); err != nil {
		t.Fatal(err)
	}
	defer func(n int) { entriesPerCompressor = n }(entriesPerCompressor)
	entriesPerCompressor = 1 << 30
	if err := streamObjectsPack(&serial, objs, true); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(parallel.Bytes(), serial.Bytes()) {
		t.Error("the pack compressed on several goroutines differs from the one compressed on one")
	}
	if out, err := exec.Command(git, "--git-dir", dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	target.Keep(objs)
	r := NewReader(target.Objects())
	for h, want := range trees {
		got, err := r.RawTree(h)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("tree %s reads back as %q, %v", h, got, err)
		}
	}
}
