package gitrepo

import (
	"encoding/binary"
	"os"
	"path/filepath"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestPackIndexFind reads a version 2 index written by hand: a name found
// through the fanout and its part of the index, read once and then kept,
// an offset of the small table
// and one of the large table (a pack past 2 GiB, which no test can write),
// a name absent, and a large offset pointing past its table. A truncated
// index is refused when it is opened.
func TestPackIndexFind(t *testing.T) {
	small := plumbing.NewHash("10" + "00000000000000000000000000000000000001")
	large := plumbing.NewHash("20" + "00000000000000000000000000000000000002")
	bad := plumbing.NewHash("20" + "00000000000000000000000000000000000003")
	names := []plumbing.Hash{small, large, bad}
	idx := []byte("\xfftOc\x00\x00\x00\x02")
	for b := range 256 {
		n := 0
		for _, h := range names {
			if int(h[0]) <= b {
				n++
			}
		}
		idx = binary.BigEndian.AppendUint32(idx, uint32(n))
	}
	for _, h := range names {
		idx = append(idx, h[:]...)
	}
	idx = append(idx, make([]byte, 4*len(names))...) // crc32s
	idx = binary.BigEndian.AppendUint32(idx, 12)
	idx = binary.BigEndian.AppendUint32(idx, 0x80000000)
	idx = binary.BigEndian.AppendUint32(idx, 0x80000001) // past the large table
	idx = binary.BigEndian.AppendUint64(idx, 5<<32|16)
	idx = append(idx, make([]byte, 40)...) // the pack's and the index's sums

	base := filepath.Join(t.TempDir(), "pack-test")
	if err := os.WriteFile(base+".pack", append([]byte("PACK\x00\x00\x00\x02\x00\x00\x00\x00"), make([]byte, 20)...), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(base+".idx", idx, 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := openPackIndex(base)
	if err != nil {
		t.Fatal(err)
	}
	defer p.close()
	// Twice: the parts of the index read by the first pass are kept.
	for pass := range 2 {
		for _, c := range []struct {
			h    plumbing.Hash
			off  int64
			hold bool
		}{
			{small, 12, true},
			{large, 5<<32 | 16, true},
			{bad, 0, false},
			{plumbing.NewHash("1000000000000000000000000000000000000002"), 0, false},
			{plumbing.NewHash("ff00000000000000000000000000000000000002"), 0, false},
			{plumbing.ZeroHash, 0, false},
		} {
			if off, ok := p.find(c.h); off != c.off || ok != c.hold {
				t.Errorf("pass %d: find(%s) = %d, %v; want %d, %v", pass, c.h, off, ok, c.off, c.hold)
			}
		}
	}

	if err := os.WriteFile(base+".idx", idx[:len(idx)-41], 0o600); err != nil {
		t.Fatal(err)
	}
	if p, err := openPackIndex(base); err == nil {
		p.close()
		t.Error("a truncated index was opened")
	}
}
