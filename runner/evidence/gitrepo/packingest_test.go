package gitrepo

import (
	"bytes"
	"crypto/sha1"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// gitPack is a pack git wrote, with deltas of deltas, and git's index of
// it; the tests share one.
func gitPack(t *testing.T) (pack, idx []byte) {
	t.Helper()
	p, err := sharedGitPack()
	if err != nil {
		t.Fatal(err)
	}
	return p[0], p[1]
}

// sharedGitPack is makeGitPack's, made once.
//
// makeGitPack makes a repo with git whose history rewrites a growing
// file and adds one to a directory in every commit, packs it with deltas,
// and returns the pack and the index git wrote for it.
var sharedGitPack = sync.OnceValues(func() ([2][]byte, error) {
	pack, idx, err := makeGitPack()
	return [2][]byte{pack, idx}, err
})

func makeGitPack() (pack, idx []byte, err error) {
	git, err := exec.LookPath("git")
	if err != nil {
		return nil, nil, errors.New("git is not on PATH")
	}
	dir, err := os.MkdirTemp("", "nova-gitpack-")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	run := func(args ...string) error {
		cmd := exec.Command(git, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t", "GIT_AUTHOR_DATE=2026-01-01T00:00:00Z", "GIT_COMMITTER_DATE=2026-01-01T00:00:00Z")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("init", "-q", "-b", "main"); err != nil {
		return nil, nil, err
	}
	var log strings.Builder
	for i := range 60 {
		fmt.Fprintf(&log, "event %d: %s\n", i, strings.Repeat("x", i))
		if err := os.WriteFile(filepath.Join(dir, "log.txt"), []byte(log.String()), 0o644); err != nil {
			return nil, nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("%03d.json", i)), []byte(fmt.Sprintf(`{"seq":%d}`, i)), 0o644); err != nil {
			return nil, nil, err
		}
		if err := run("add", "."); err != nil {
			return nil, nil, err
		}
		if err := run("commit", "-q", "-m", fmt.Sprintf("event %d", i)); err != nil {
			return nil, nil, err
		}
	}
	if err := run("repack", "-a", "-d", "-f", "-q", "--depth=50", "--window=10"); err != nil {
		return nil, nil, err
	}
	packs, _ := filepath.Glob(filepath.Join(dir, ".git", "objects", "pack", "*.pack"))
	if len(packs) != 1 {
		return nil, nil, fmt.Errorf("git repack left %v", packs)
	}
	if pack, err = os.ReadFile(packs[0]); err != nil {
		return nil, nil, err
	}
	idx, err = os.ReadFile(strings.TrimSuffix(packs[0], ".pack") + ".idx")
	return pack, idx, err
}

func encodeIndex(t *testing.T, index *idxfile.MemoryIndex) []byte {
	t.Helper()
	var b bytes.Buffer
	if _, err := idxfile.NewEncoder(&b).Encode(index); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestIndexPackWritesGitsIndex: the index indexPack makes of a pack git
// wrote, with deltas of deltas, is byte for byte the one git wrote, and
// stays so when it can keep no base and must inflate each one again.
func TestIndexPackWritesGitsIndex(t *testing.T) {
	pack, want := gitPack(t)
	for _, budget := range []int{maxIngestCache, 1} {
		saved := maxIngestCache
		maxIngestCache = budget
		index, sum, err := indexPack(pack)
		maxIngestCache = saved
		if err != nil {
			t.Fatalf("budget %d: %v", budget, err)
		}
		if sum.String() != fmt.Sprintf("%x", pack[len(pack)-20:]) {
			t.Fatalf("checksum %s", sum)
		}
		if got := encodeIndex(t, index); !bytes.Equal(got, want) {
			t.Fatalf("budget %d: the index differs from git's (%d bytes, git's %d)", budget, len(got), len(want))
		}
	}
	// The pack must exercise deltas, or the test proves little.
	dir := t.TempDir()
	packDir := filepath.Join(dir, "objects", "pack")
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"p.pack": pack, "p.idx": want} {
		if err := os.WriteFile(filepath.Join(packDir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	git, _ := exec.LookPath("git")
	if deltas := packDeltas(t, git, dir); deltas < 20 {
		t.Fatalf("git's pack holds %d deltas; the test needs a pack of many", deltas)
	}
}

// TestIndexPackAgreesWithGitOnDamage changes the pack byte by byte (and
// its trailer to match, so the entries themselves are read): indexPack
// refuses what git index-pack refuses, and where both accept, their
// indexes are the same. A delta by reference is left to go-git.
func TestIndexPackAgreesWithGitOnDamage(t *testing.T) {
	pack, _ := gitPack(t)
	git, _ := exec.LookPath("git")
	dir := t.TempDir()
	step := max(1, (len(pack)-20)/150)
	var accepted, refused int
	defer func() { t.Logf("%d damaged packs refused by both, %d accepted by both", refused, accepted) }()
	for at := 0; at < len(pack)-20; at += step {
		for _, flip := range []byte{0x01, 0x80} {
			bad := bytes.Clone(pack)
			bad[at] ^= flip
			sum := sha1.Sum(bad[:len(bad)-20])
			copy(bad[len(bad)-20:], sum[:])
			index, _, err := indexPack(bad)
			if errors.Is(err, errRefDelta) {
				continue
			}
			file := filepath.Join(dir, fmt.Sprintf("p%d-%d.pack", at, flip))
			if err := os.WriteFile(file, bad, 0o644); err != nil {
				t.Fatal(err)
			}
			out, gitErr := exec.Command(git, "index-pack", file).CombinedOutput()
			if (err == nil) != (gitErr == nil) {
				t.Fatalf("byte %d ^ %#x: indexPack says %v, git index-pack %v: %s", at, flip, err, gitErr, out)
			}
			if err != nil {
				refused++
				continue
			}
			accepted++
			want, rerr := os.ReadFile(strings.TrimSuffix(file, ".pack") + ".idx")
			if rerr != nil {
				t.Fatal(rerr)
			}
			if !bytes.Equal(encodeIndex(t, index), want) {
				t.Fatalf("byte %d ^ %#x: both accept, and the indexes differ", at, flip)
			}
		}
	}
}

// TestIndexPackRefusesWhatIsNotAWholePack: a wrong checksum, a pack cut
// short, bytes after the last entry.
func TestIndexPackRefusesWhatIsNotAWholePack(t *testing.T) {
	pack, _ := gitPack(t)
	body := pack[:len(pack)-20]
	withSum := func(b []byte) []byte {
		s := sha1.Sum(b)
		return append(bytes.Clone(b), s[:]...)
	}
	for name, bad := range map[string][]byte{
		"wrong checksum":   append(bytes.Clone(body), make([]byte, 20)...),
		"cut short":        withSum(body[:len(body)-7]),
		"bytes after it":   withSum(append(bytes.Clone(body), 0x78, 0x01)),
		"not a pack":       withSum(append([]byte("KCAP"), body[4:]...)),
		"too short":        pack[:31],
		"more than counts": withSum(append(append([]byte{}, body[:11]...), append([]byte{body[11] + 1}, body[12:]...)...)),
		// Found by FuzzIndexPack: four billion objects were allocated for
		// before the first was read.
		"a count it cannot hold": withSum(append(append([]byte{}, body[:8]...), append([]byte{0xff, 0xff, 0xff, 0xff}, body[12:]...)...)),
	} {
		if _, _, err := indexPack(bad); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// FuzzIndexPack: whatever a fetch brings, indexPack returns an index or
// an error, never a panic, and an index only of objects inside the pack.
// The trailer is made to match, so the entries themselves are read.
func FuzzIndexPack(f *testing.F) {
	pack, _, err := makeGitPack()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(pack)
	f.Add(pack[:len(pack)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 20 {
			b = bytes.Clone(b)
			sum := sha1.Sum(b[:len(b)-20])
			copy(b[len(b)-20:], sum[:])
		}
		index, _, err := indexPack(b)
		if err != nil {
			return
		}
		n, err := index.Count()
		if err != nil {
			t.Fatal(err)
		}
		entries, err := index.EntriesByOffset()
		if err != nil {
			t.Fatal(err)
		}
		defer entries.Close()
		for range n {
			e, err := entries.Next()
			if err != nil {
				t.Fatal(err)
			}
			if e.Offset < 12 || e.Offset >= uint64(len(b)-20) {
				t.Fatalf("an object at %d, outside the pack's %d bytes", e.Offset, len(b))
			}
		}
	})
}
