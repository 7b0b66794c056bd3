package gitrepo

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestWriteStoredIsAZlibStream: what writeStored writes inflates back to
// its input, across the 64 kB limit of a stored block and for nothing at
// all, and its checksum is checked: zlib's reader refuses a changed byte.
func TestWriteStoredIsAZlibStream(t *testing.T) {
	for _, n := range []int{0, 1, 100, maxStoredBlock, maxStoredBlock + 1, 3*maxStoredBlock + 7} {
		in := make([]byte, n)
		for i := range in {
			in[i] = byte(i * 7)
		}
		var buf bytes.Buffer
		if err := writeStored(&buf, in); err != nil {
			t.Fatal(err)
		}
		if want := 2 + 5*max(1, (n+maxStoredBlock-1)/maxStoredBlock) + n + 4; buf.Len() != want {
			t.Errorf("%d bytes: stream is %d bytes, want %d (header, block headers, data, checksum)", n, buf.Len(), want)
		}
		zr, err := zlib.NewReader(bytes.NewReader(buf.Bytes()))
		if err != nil {
			t.Fatalf("%d bytes: %v", n, err)
		}
		out, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(out, in) {
			t.Fatalf("%d bytes: read back %d bytes, %v", n, len(out), err)
		}
		if n == 0 {
			continue
		}
		bad := bytes.Clone(buf.Bytes())
		bad[len(bad)-5] ^= 1 // the last data byte
		zr, err = zlib.NewReader(bytes.NewReader(bad))
		if err == nil {
			_, err = io.ReadAll(zr)
		}
		if err == nil {
			t.Errorf("%d bytes: a changed byte read back without an error", n)
		}
	}
}

// TestTreesOfDirectoriesAreStoredAsTheyAre: in a pack Nova writes, a tree
// that lists only directories (contracts/ and its 256 shards, a shard of
// contracts named by people, whose names would deflate) is stored as it
// is, while a tree of event files and a blob are deflated. git
// verify-pack's sizes say which, git fsck --strict accepts the pack, and
// git and Nova's reader both read every object back as written.
func TestTreesOfDirectoriesAreStoredAsTheyAre(t *testing.T) {
	git, dir, target := newTestBare(t, t.Logf)
	hashOf := func(s string) plumbing.Hash { return plumbing.Hash(sha1.Sum([]byte(s))) }
	objs := NewObjects()
	var files []Entry
	for seq := 1; seq <= 100; seq++ {
		for _, ext := range []string{"json", "sig"} {
			name := strconv.Itoa(seq) + "-nova.plan.created." + ext
			files = append(files, Entry{Name: name, Mode: filemode.Regular, Hash: objs.Put(plumbing.BlobObject, []byte(name+` {"event":"of a run"}`))})
		}
	}
	event := []byte(strings.Repeat(`{"type":"nova.plan.created","data":{"verdict":"pass"}}`, 40))
	blob := objs.Put(plumbing.BlobObject, event)
	slices.SortFunc(files, CompareEntries)
	bucket := EncodeTree(files)
	bucketHash := objs.Put(plumbing.TreeObject, bucket)
	var dirs []Entry
	for i := range 256 {
		dirs = append(dirs, Entry{Name: fmt.Sprintf("%02x", i), Mode: filemode.Dir, Hash: hashOf(fmt.Sprint(i))})
	}
	dirs[0].Hash = bucketHash // one that exists, for fsck
	shards := EncodeTree(dirs)
	shardsHash := objs.Put(plumbing.TreeObject, shards)
	var named []Entry
	for i := range 40 {
		name := fmt.Sprintf("payments-api-%02d-prod", i)
		named = append(named, Entry{Name: name, Mode: filemode.Dir, Hash: hashOf(name)})
	}
	shard := EncodeTree(named)
	shardHash := objs.Put(plumbing.TreeObject, shard)
	pack, err := writeObjectsPack(filepath.Join(dir, "objects", "pack"), objs, func(...string) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(git, "verify-pack", "-v", strings.TrimSuffix(pack, ".pack")+".idx").CombinedOutput()
	if err != nil {
		t.Fatalf("git verify-pack: %v\n%s", err, out)
	}
	// sha1 type size size-in-packfile offset
	inPack := map[plumbing.Hash][2]int{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) >= 5 && plumbing.IsHash(f[0]) {
			size, _ := strconv.Atoi(f[2])
			packed, _ := strconv.Atoi(f[3])
			inPack[plumbing.NewHash(f[0])] = [2]int{size, packed}
		}
	}
	if s := inPack[shardsHash]; s[0] != len(shards) || s[1] <= s[0] {
		t.Errorf("the tree of 256 directories: %d bytes, %d in the pack; want it stored as it is (more than its size)", s[0], s[1])
	}
	if s := inPack[shardHash]; s[0] != len(shard) || s[1] <= s[0] {
		t.Errorf("the tree of 40 contracts named by people: %d bytes, %d in the pack; want it stored as it is", s[0], s[1])
	}
	if s := inPack[bucketHash]; s[0] != len(bucket) || 3*s[1] >= 2*s[0] {
		t.Errorf("the tree of event files: %d bytes, %d in the pack; want it deflated to less than two thirds", s[0], s[1])
	}
	if s := inPack[blob]; s[0] != len(event) || s[1] == 0 || s[1] >= s[0]/2 {
		t.Errorf("a blob: %d bytes, %d in the pack; want it deflated", s[0], s[1])
	}
	if out, err := exec.Command(git, "--git-dir", dir, "fsck", "--strict", "--no-dangling").CombinedOutput(); err != nil {
		t.Fatalf("git fsck: %v\n%s", err, out)
	}
	r := NewReader(target.Objects())
	for h, want := range map[plumbing.Hash][]byte{shardsHash: shards, shardHash: shard, bucketHash: bucket} {
		got, err := exec.Command(git, "--git-dir", dir, "cat-file", "tree", h.String()).Output()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("git cat-file tree %s: %d bytes, %v; want the %d written", h, len(got), err, len(want))
		}
		if got, err := r.RawTree(h); err != nil || !bytes.Equal(got, want) {
			t.Errorf("Reader.RawTree(%s): %d bytes, %v; want the %d written", h, len(got), err, len(want))
		}
	}
}
