package gitrepo

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

func TestToMergeKeepsPacksGeometric(t *testing.T) {
	sizes := func(ps []packInfo) []uint32 {
		var out []uint32
		for _, p := range ps {
			out = append(out, p.objects)
		}
		return out
	}
	packs := func(objects ...uint32) []packInfo {
		var ps []packInfo
		for i, n := range objects {
			ps = append(ps, packInfo{base: fmt.Sprint(i), objects: n})
		}
		return ps
	}
	many := func(n int, objects uint32) []uint32 {
		var out []uint32
		for range n {
			out = append(out, objects)
		}
		return out
	}
	for _, tc := range []struct {
		name  string
		packs []packInfo
		want  []uint32
	}{
		{"few packs are left alone", packs(many(maxPacks, 5)...), nil},
		{"equal small packs merge together", packs(many(maxPacks+1, 5)...), many(maxPacks+1, 5)},
		{"a big pack stays", packs(append(many(maxPacks, 5), 1000)...), many(maxPacks, 5)},
		// Sorted: 5×15 = 75, then 140 < 2×75: it joins; 10 000 ≥ 2×215 stays.
		{"a pack too small for the sum joins", packs(append(many(maxPacks-1, 5), 10000, 140)...), append(many(maxPacks-1, 5), 140)},
		// 150 = 2×75 stays.
		{"a pack twice the sum stays", packs(append(many(maxPacks-1, 5), 150, 10000)...), many(maxPacks-1, 5)},
		// Powers of two are not geometric enough (4 < 2×(1+2)): all merge.
		{"powers of two", packs(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536), []uint32{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}},
		// Powers of three are, but too many: the two smallest merge.
		{"geometric but too many", packs(1, 3, 9, 27, 81, 243, 729, 2187, 6561, 19683, 59049, 177147, 531441, 1594323, 4782969, 14348907, 43046721), []uint32{1, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := sizes(toMerge(tc.packs))
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("toMerge = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPushesMergePacksAndEveryObjectStaysReadable pushes many batches in
// place, one pack each, with a second reader opened before the merges, and
// a `git repack` half way (a pack of deltas, which a merge copies as
// deltas where their bases are already in the merged pack): the packs are merged as they accumulate, real git finds the repo
// sound and every commit, and the reader that listed packs since removed
// still reads every commit (it re-lists when a read misses).
func TestPushesMergePacksAndEveryObjectStaysReadable(t *testing.T) {
	var logged []string
	git, dir, target := newTestBare(t, func(f string, a ...any) { logged = append(logged, fmt.Sprintf(f, a...)) })
	branch := plumbing.NewBranchReferenceName("main")
	other, err := OpenBare(dir, branch, func(...string) error { return nil }, t.Logf)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	stale := NewReader(other.Objects())

	const batches = 3 * maxPacks
	head := plumbing.ZeroHash
	var commits []plumbing.Hash
	for i := range batches {
		objs := NewObjects()
		// Alike and large enough for git to store them as deltas.
		blob := objs.Put(plumbing.BlobObject, []byte(strings.Repeat("an event of the evidence repo\n", 100)+fmt.Sprint(i)))
		tree := objs.Put(plumbing.TreeObject, EncodeTree([]Entry{{Name: fmt.Sprintf("%04d.json", i), Mode: filemode.Regular, Hash: blob}}))
		sig := object.Signature{Name: "nova", Email: "nova@localhost", When: time.Unix(int64(i), 0).UTC()}
		c := &object.Commit{Author: sig, Committer: sig, Message: fmt.Sprintf("event %d\n", i), TreeHash: tree}
		if !head.IsZero() {
			c.ParentHashes = []plumbing.Hash{head}
		}
		h, err := objs.PutCommit(c)
		if err != nil {
			t.Fatal(err)
		}
		if err := target.Push(context.Background(), head, h, objs); err != nil {
			t.Fatalf("push %d: %v", i, err)
		}
		target.Keep(objs)
		head = h
		commits = append(commits, h)
		if i == 0 {
			if _, err := stale.Commit(h); err != nil { // lists the packs now
				t.Fatal(err)
			}
		}
		if i == maxPacks/2 {
			gitRepack(t, git, dir)
		}
	}
	if len(logged) > 0 {
		t.Errorf("merging logged: %v", logged)
	}
	packs, err := listPacks(filepath.Join(dir, "objects", "pack"))
	if err != nil {
		t.Fatal(err)
	}
	if len(packs) > maxPacks {
		t.Errorf("%d packs after %d pushes, want at most %d", len(packs), batches, maxPacks)
	}
	if len(packs) >= batches {
		t.Errorf("%d packs after %d pushes: nothing was merged", len(packs), batches)
	}
	for _, args := range [][]string{{"fsck", "--strict", "--no-dangling"}, {"rev-list", "--count", "main"}} {
		out, err := exec.Command(git, append([]string{"--git-dir", dir}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("git %s: %v\n%s", args[0], err, out)
		}
		if args[0] == "rev-list" && strings.TrimSpace(string(out)) != fmt.Sprint(batches) {
			t.Errorf("git rev-list counts %s commits, want %d", out, batches)
		}
	}
	for _, r := range []*Reader{stale, NewReader(target.Objects())} {
		for _, h := range commits {
			c, err := r.Commit(h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := r.Tree(c.TreeHash); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// newTestBare makes a bare repo with branch main and opens it as a push
// target that logs to logf, closed when the test ends; git is the git
// binary the tests check the repo with.
func newTestBare(t *testing.T, logf func(string, ...any)) (git, dir string, target Remote) {
	t.Helper()
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on PATH")
	}
	dir = filepath.Join(t.TempDir(), "evidence.git")
	branch := plumbing.NewBranchReferenceName("main")
	if err := InitBare(dir, branch); err != nil {
		t.Fatal(err)
	}
	if target, err = OpenBare(dir, branch, func(...string) error { return nil }, logf); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { target.Close() })
	return git, dir, target
}

// gitRepack packs the repo's objects with git, as `git gc` would, and
// checks the pack holds deltas.
func gitRepack(t *testing.T, git, dir string) {
	t.Helper()
	if out, err := exec.Command(git, "--git-dir", dir, "repack", "-a", "-d", "-q").CombinedOutput(); err != nil {
		t.Fatalf("git repack: %v\n%s", err, out)
	}
	idx, _ := filepath.Glob(filepath.Join(dir, "objects", "pack", "pack-*.idx"))
	if len(idx) != 1 {
		t.Fatalf("after git repack: %v", idx)
	}
	out, err := exec.Command(git, "verify-pack", "-v", idx[0]).CombinedOutput()
	if err != nil {
		t.Fatalf("git verify-pack: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "chain length") {
		t.Fatalf("git repack made no deltas:\n%s", out)
	}
}

// TestPackStoreReadsWhatGitWrote reads every object of a repo git packed
// with deep delta chains (offset and ref deltas), plus a loose one, through
// the pack store and compares it with go-git's reading of the same object.
func TestPackStoreReadsWhatGitWrote(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Fatal("git is not on PATH")
	}
	work := t.TempDir()
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(git, args...)
		cmd.Dir = work
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=n", "GIT_AUTHOR_EMAIL=n@x", "GIT_COMMITTER_NAME=n", "GIT_COMMITTER_EMAIL=n@x")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run("init", "-q", "-b", "main")
	for i := range 40 {
		body := strings.Repeat(fmt.Sprintf("line %d of a file that changes a little\n", i%7), 60) + fmt.Sprint(i)
		if err := os.WriteFile(filepath.Join(work, "f.txt"), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		run("add", "f.txt")
		run("commit", "-q", "-m", fmt.Sprint("commit ", i))
	}
	if err := os.WriteFile(filepath.Join(work, "loose.txt"), []byte("loose\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	loose := strings.TrimSpace(run("hash-object", "-w", "loose.txt"))
	// Offset deltas, then reference deltas (what git writes with
	// repack.useDeltaBaseOffset off, and what thin packs carry).
	for _, offsets := range []string{"true", "false"} {
		run("-c", "repack.useDeltaBaseOffset="+offsets, "repack", "-a", "-d", "-f", "-q", "--window=50", "--depth=50")
		if !strings.Contains(run("verify-pack", "-v", mustGlob(t, filepath.Join(work, ".git", "objects", "pack", "*.idx"))), "chain length") {
			t.Fatal("git made no deltas")
		}
		comparePackStore(t, work, strings.Fields(run("cat-file", "--batch-all-objects", "--batch-check=%(objectname)")), loose)
	}
}

func comparePackStore(t *testing.T, work string, hashes []string, loose string) {
	st, closeSt, err := OpenObjects(work)
	if err != nil {
		t.Fatal(err)
	}
	defer closeSt()
	repo, closeRepo, err := OpenLocal(work)
	if err != nil {
		t.Fatal(err)
	}
	defer closeRepo()
	if len(hashes) < 120 || !slices.Contains(hashes, loose) {
		t.Fatalf("%d objects listed (loose %s among them: %v)", len(hashes), loose, slices.Contains(hashes, loose))
	}
	content := func(st storer.EncodedObjectStorer, h plumbing.Hash) (plumbing.ObjectType, string) {
		t.Helper()
		obj, err := st.EncodedObject(plumbing.AnyObject, h)
		if err != nil {
			t.Fatalf("%s: %v", h, err)
		}
		r, err := obj.Reader()
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		b, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if sum := plumbing.ComputeHash(obj.Type(), b); sum != h {
			t.Fatalf("object read for %s hashes to %s", h, sum)
		}
		return obj.Type(), string(b)
	}
	for _, s := range hashes {
		h := plumbing.NewHash(s)
		gt, gb := content(st, h)
		wt, wb := content(repo.Storer, h)
		if gt != wt || gb != wb {
			t.Fatalf("%s: pack store read %s of %d bytes, go-git %s of %d", h, gt, len(gb), wt, len(wb))
		}
	}
	if err := st.HasEncodedObject(plumbing.NewHash(strings.Repeat("ab", 20))); err == nil {
		t.Error("an object no pack holds is reported present")
	}
}

func mustGlob(t *testing.T, pattern string) string {
	t.Helper()
	m, _ := filepath.Glob(pattern)
	if len(m) == 0 {
		t.Fatalf("nothing matches %s", pattern)
	}
	return m[0]
}

// TestPacksShareOneCompressor: each pack's zlib compressor is about a
// megabyte, which a run pushing twice must not allocate (and fault in)
// twice: after one pack, the next, written from another goroutine on
// whichever processor, allocates a small part of that.
func TestPacksShareOneCompressor(t *testing.T) {
	dir := t.TempDir()
	nosync := func(...string) error { return nil }
	objs := NewObjects()
	for i := range 20 {
		objs.Put(plumbing.BlobObject, []byte(fmt.Sprintf(`{"event":%d,"data":"some event of a run"}`, i)))
	}
	if _, err := writeObjectsPack(dir, objs, nosync); err != nil {
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	done := make(chan error)
	go func() {
		_, err := writeObjectsPack(dir, objs, nosync)
		done <- err
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	if n := after.TotalAlloc - before.TotalAlloc; n > 256<<10 {
		t.Errorf("the second pack allocated %d KiB; a compressor of its own would explain it", n>>10)
	}
}
