package gitrepo

import (
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
)

// errRefDelta: the pack names a delta's base by its hash, as a thin pack
// does for a base outside it. indexPack leaves such packs to go-git's
// parser, which looks bases up in the clone.
var errRefDelta = errors.New("the pack holds a delta by reference")

// maxIngestCache bounds the inflated objects indexPack keeps as possible
// delta bases; a base it no longer holds is inflated again from the pack.
var maxIngestCache = 32 << 20

// maxIngestObject bounds the size an entry may declare: an evidence repo
// holds events, signatures and the trees that list them, and a header
// is read from whoever can push to it.
const maxIngestObject = 256 << 20

// indexPack indexes a whole pack as a fetch brought it: each object's
// hash (with SHA-1 collision detection, as go-git and git hash), offset
// and CRC-32, in one pass that inflates every entry once. go-git's parser
// took 2.6–2.9 times as long for the same work, and was most of what a
// runner without a state dir spent opening the repo (BenchmarkFreshClone).
// It refuses a pack whose trailer is not the SHA-1 of what precedes it,
// whose entries do not fill it exactly, or that names a delta base by
// hash (errRefDelta: the caller hands that pack to go-git).
func indexPack(pack []byte) (*idxfile.MemoryIndex, plumbing.Hash, error) {
	var sum plumbing.Hash
	if len(pack) < 12+20 || string(pack[:4]) != "PACK" {
		return nil, sum, errors.New("not a pack")
	}
	if v := binary.BigEndian.Uint32(pack[4:8]); v != 2 && v != 3 {
		return nil, sum, fmt.Errorf("pack version %d", v)
	}
	body := pack[:len(pack)-20]
	copy(sum[:], pack[len(body):])
	if sha1.Sum(body) != sum {
		return nil, sum, errors.New("the pack's checksum does not match its content")
	}
	count := binary.BigEndian.Uint32(pack[8:12])
	// The smallest entry is a header byte and an empty zlib stream (8
	// bytes); a count the pack cannot hold is refused before anything is
	// allocated for it.
	if uint64(count) > uint64(len(body)-12)/minEntry {
		return nil, sum, fmt.Errorf("a pack of %d bytes cannot hold %d objects", len(pack), count)
	}
	in := &ingest{body: body, cache: map[int64]rawObject{}, starts: make([]int64, 0, count)}
	var w idxfile.Writer
	_ = w.OnHeader(count) // cannot fail
	off := int64(12)
	for range count {
		if off >= int64(len(body)) {
			return nil, sum, fmt.Errorf("the pack ends before its %d objects", count)
		}
		o, end, err := in.read(off, 0)
		if err != nil {
			return nil, sum, fmt.Errorf("entry at %d: %w", off, err)
		}
		in.keep(off, o)
		in.starts = append(in.starts, off)
		w.Add(plumbing.ComputeHash(o.t, o.data), uint64(off), crc32.ChecksumIEEE(body[off:end]))
		off = end
	}
	if off != int64(len(body)) {
		return nil, sum, fmt.Errorf("%d bytes after the pack's %d objects", int64(len(body))-off, count)
	}
	if err := w.OnFooter(sum); err != nil {
		return nil, sum, err
	}
	index, err := w.Index()
	return index, sum, err
}

// ingest is indexPack's state: the pack's entries before the trailer,
// where the entries read so far start, and the inflated objects it keeps
// as bases.
type ingest struct {
	body   []byte
	starts []int64 // ascending
	cache  map[int64]rawObject
	cached int
	inflater
}

// minEntry is the size of the smallest pack entry.
const minEntry = 9

// maxDeltaChain bounds how many bases an entry may stand on; git writes
// chains of at most 50.
const maxDeltaChain = 4096

// read inflates the entry at off, resolving its base, and returns the
// object and where the entry ends.
func (in *ingest) read(off int64, depth int) (rawObject, int64, error) {
	if depth > maxDeltaChain {
		return rawObject{}, 0, errors.New("delta chain too long")
	}
	hdr := in.body[off:min(int64(len(in.body)), off+32)]
	t, size, i, err := entryHeader(hdr)
	if err != nil {
		return rawObject{}, 0, err
	}
	if size > maxIngestObject {
		return rawObject{}, 0, fmt.Errorf("an object of %d bytes", size)
	}
	var base rawObject
	switch t {
	case plumbing.REFDeltaObject:
		return rawObject{}, 0, errRefDelta
	case plumbing.OFSDeltaObject:
		rel, used, err := ofsDeltaOffset(hdr[i:])
		if err != nil {
			return rawObject{}, 0, err
		}
		i += used
		if _, ok := slices.BinarySearch(in.starts, off-rel); rel <= 0 || !ok {
			return rawObject{}, 0, errors.New("a delta whose base is not an entry before it")
		}
		if base, err = in.object(off-rel, depth+1); err != nil {
			return rawObject{}, 0, err
		}
	}
	data, end, err := in.inflate(off+int64(i), size)
	if err != nil {
		return rawObject{}, 0, err
	}
	if t != plumbing.OFSDeltaObject {
		return rawObject{t, data}, end, nil
	}
	if data, err = packfile.PatchDelta(base.data, data); err != nil {
		return rawObject{}, 0, err
	}
	return rawObject{base.t, data}, end, nil
}

// object is the object whose entry starts at off: kept, or read again.
// Bases precede their deltas, so an entry at off was read once already.
func (in *ingest) object(off int64, depth int) (rawObject, error) {
	if o, ok := in.cache[off]; ok {
		return o, nil
	}
	o, _, err := in.read(off, depth)
	return o, err
}

// keep remembers o, read at off, as a possible base; past the budget it
// forgets everything kept so far first.
func (in *ingest) keep(off int64, o rawObject) {
	if in.cached+len(o.data) > maxIngestCache {
		clear(in.cache)
		in.cached = 0
	}
	in.cache[off] = o
	in.cached += len(o.data)
}

// inflate reads the zlib stream at off, which must hold exactly size
// bytes, and returns them and where the stream ends: where the next
// entry starts.
func (in *ingest) inflate(off, size int64) ([]byte, int64, error) {
	if off >= int64(len(in.body)) {
		return nil, 0, io.ErrUnexpectedEOF
	}
	zr, err := in.start(in.body[off:])
	if err != nil {
		return nil, 0, err
	}
	var data []byte
	if size <= 1<<20 {
		data = make([]byte, size)
		_, err = io.ReadFull(zr, data)
	} else {
		// A size read from the pack is only allocated as the data comes.
		data, err = io.ReadAll(io.LimitReader(zr, size))
		if err == nil && int64(len(data)) < size {
			err = io.ErrUnexpectedEOF
		}
	}
	if err != nil {
		return nil, 0, fmt.Errorf("inflating: %w", err)
	}
	var more [1]byte
	if n, err := zr.Read(more[:]); n != 0 || err != io.EOF {
		if err == nil || err == io.EOF {
			err = errors.New("more data than its header says")
		}
		return nil, 0, fmt.Errorf("inflating: %w", err)
	}
	return data, int64(len(in.body)) - int64(in.src.Len()), nil
}
