package gitrepo

import (
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/objfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// packStore reads a repo's objects itself, packed and loose, and leaves
// everything else (writes, iteration) to go-git's storage. go-git decodes every
// pack index whole before its first lookup, which made opening a repo cost
// in proportion to its history (a 10 000-event repo: 50 000 index entries
// read and copied for a gate decision that reads a dozen objects). Here an
// index is mapped, not read, and a lookup is a binary search that touches a
// few of its pages.
//
// Not safe for concurrent use, like go-git's storage.
type packStore struct {
	storer.EncodedObjectStorer
	objectsDir, packDir string
	packs               []*packIndex
	inflater            // reused for every entry of a mapped pack
	// bases caches objects that deltas were applied to (git gc packs
	// chains of them): each chain would otherwise inflate its base again.
	bases map[baseKey]rawObject
}

// inflater inflates zlib streams that lie in memory, with one reader
// reset for each: a new reader allocates its window and tables each time.
// The reader takes bytes one at a time from a bytes.Reader (a
// ByteReader, so flate adds no buffer of its own), so it stops where its
// stream ends.
type inflater struct {
	zr  io.ReadCloser
	src bytes.Reader // what zr reads
}

// start points the reader at the zlib stream that begins b.
func (f *inflater) start(b []byte) (io.Reader, error) {
	f.src.Reset(b)
	if f.zr == nil {
		var err error
		f.zr, err = zlib.NewReader(&f.src)
		return f.zr, err
	}
	return f.zr, f.zr.(zlib.Resetter).Reset(&f.src, nil)
}

// rawObject is an object's type and content.
type rawObject struct {
	t    plumbing.ObjectType
	data []byte
}

type baseKey struct {
	pack   *packIndex
	offset int64
}

// maxBases bounds the delta base cache (objects of a few KB each).
const maxBases = 512

func newPackStore(st storer.EncodedObjectStorer, gitDir string) (*packStore, error) {
	objects := filepath.Join(gitDir, "objects")
	s := &packStore{EncodedObjectStorer: st, objectsDir: objects, packDir: filepath.Join(objects, "pack"), bases: map[baseKey]rawObject{}}
	return s, s.list()
}

// list opens the packs present now, keeping those already open.
func (s *packStore) list() error {
	entries, err := os.ReadDir(s.packDir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	open := map[string]*packIndex{}
	for _, p := range s.packs {
		open[p.base] = p
	}
	var packs []*packIndex
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		base := filepath.Join(s.packDir, name)
		if p, ok := open[base]; ok {
			packs = append(packs, p)
			delete(open, base)
			continue
		}
		p, err := openPackIndex(base)
		if errors.Is(err, os.ErrNotExist) {
			continue // removed by a merge since the listing
		}
		if err != nil {
			return err
		}
		packs = append(packs, p)
	}
	for _, p := range open {
		p.close() // gone from the directory
	}
	s.packs = packs
	clear(s.bases)
	return nil
}

// Reindex re-lists the packs (another writer added or merged some).
func (s *packStore) Reindex() {
	_ = s.list() // a listing that fails leaves reads to fail and say why
	if r, ok := s.EncodedObjectStorer.(interface{ Reindex() }); ok {
		r.Reindex()
	}
}

// Close lets go of the packs and go-git's storage.
func (s *packStore) Close() error {
	for _, p := range s.packs {
		p.close()
	}
	s.packs = nil
	if c, ok := s.EncodedObjectStorer.(interface{ Close() error }); ok {
		return c.Close()
	}
	return nil
}

func (s *packStore) HasEncodedObject(h plumbing.Hash) error {
	for _, p := range s.packs {
		if _, ok := p.find(h); ok {
			return nil
		}
	}
	if _, err := os.Stat(s.loosePath(h)); err != nil {
		return plumbing.ErrObjectNotFound
	}
	return nil
}

func (s *packStore) loosePath(h plumbing.Hash) string {
	hex := h.String()
	return filepath.Join(s.objectsDir, hex[:2], hex[2:])
}

// loose reads a loose object (go-git would look in its own list of packs
// first, decoding each pack index whole on the first miss).
func (s *packStore) loose(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	f, err := os.Open(s.loosePath(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, plumbing.ErrObjectNotFound
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := objfile.NewReader(f)
	if err != nil {
		return nil, fmt.Errorf("reading loose object %s: %w", h, err)
	}
	defer r.Close()
	ot, size, err := r.Header()
	if err != nil {
		return nil, fmt.Errorf("reading loose object %s: %w", h, err)
	}
	if t != plumbing.AnyObject && ot != t {
		return nil, plumbing.ErrObjectNotFound
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(r, b); err != nil {
		return nil, fmt.Errorf("reading loose object %s: %w", h, err)
	}
	return &readObject{h: h, rawObject: rawObject{ot, b}}, nil
}

func (s *packStore) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	for _, p := range s.packs {
		if off, ok := p.find(h); ok {
			o, err := s.readAt(p, off)
			if err != nil {
				return nil, fmt.Errorf("reading %s from %s: %w", h, filepath.Base(p.base), err)
			}
			if t != plumbing.AnyObject && o.t != t {
				return nil, plumbing.ErrObjectNotFound
			}
			return &readObject{h: h, rawObject: o}, nil
		}
	}
	return s.loose(t, h)
}

// readObject is an object as read, under the hash it was looked up by, as
// go-git's own pack reader gives it: a plumbing.MemoryObject would copy
// the content once more and hash it again on every read.
type readObject struct {
	h plumbing.Hash
	rawObject
}

func (o *readObject) Hash() plumbing.Hash           { return o.h }
func (o *readObject) Type() plumbing.ObjectType     { return o.t }
func (o *readObject) SetType(t plumbing.ObjectType) { o.t = t }
func (o *readObject) Size() int64                   { return int64(len(o.data)) }
func (o *readObject) SetSize(int64)                 {}
func (o *readObject) Reader() (io.ReadCloser, error) {
	return io.NopCloser(bytes.NewReader(o.data)), nil
}
func (o *readObject) Writer() (io.WriteCloser, error) {
	return nil, errors.New("an object read from the repo cannot be written")
}

// readAt reads the object whose entry is at off in p, resolving deltas.
func (s *packStore) readAt(p *packIndex, off int64) (rawObject, error) {
	if o, ok := s.bases[baseKey{p, off}]; ok {
		return o, nil
	}
	if off < 12 || off >= p.size {
		return rawObject{}, fmt.Errorf("entry at %d is outside the pack", off)
	}
	hdr := p.pack[off:min(off+32, p.size)]
	n := len(hdr)
	t, size, i, err := entryHeader(hdr)
	if err != nil {
		return rawObject{}, err
	}
	var base *rawObject
	switch t {
	case plumbing.OFSDeltaObject:
		rel, used, err := ofsDeltaOffset(hdr[i:n])
		if err != nil {
			return rawObject{}, err
		}
		i += used
		if rel <= 0 || rel > off {
			return rawObject{}, fmt.Errorf("delta at %d names a base outside the pack", off)
		}
		b, err := s.readBase(p, off-rel)
		if err != nil {
			return rawObject{}, err
		}
		base = &b
	case plumbing.REFDeltaObject:
		if n < i+20 {
			return rawObject{}, fmt.Errorf("entry at %d is truncated", off)
		}
		var bh plumbing.Hash
		copy(bh[:], hdr[i:i+20])
		i += 20
		bo, ok := p.find(bh)
		if !ok {
			return rawObject{}, fmt.Errorf("delta at %d: base %s is not in its pack", off, bh)
		}
		b, err := s.readBase(p, bo)
		if err != nil {
			return rawObject{}, err
		}
		base = &b
	}
	data, err := s.inflate(p, off+int64(i), size)
	if err != nil {
		return rawObject{}, err
	}
	if base == nil {
		return rawObject{t, data}, nil
	}
	if data, err = packfile.PatchDelta(base.data, data); err != nil {
		return rawObject{}, err
	}
	return rawObject{base.t, data}, nil
}

func (s *packStore) readBase(p *packIndex, off int64) (rawObject, error) {
	o, err := s.readAt(p, off)
	if err != nil {
		return rawObject{}, err
	}
	if len(s.bases) >= maxBases {
		clear(s.bases)
	}
	s.bases[baseKey{p, off}] = o
	return o, nil
}

// inflate reads size bytes of zlib data starting at off in p's pack. The
// inflater reads the mapped pack in place: reading the file instead cost
// two system calls per object, a fair share of a verify's time.
func (s *packStore) inflate(p *packIndex, off, size int64) ([]byte, error) {
	if off > p.size {
		return nil, fmt.Errorf("entry at %d is outside the pack", off)
	}
	zr, err := s.start(p.pack[off:p.size])
	if err != nil {
		return nil, err
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(zr, b); err != nil {
		return nil, fmt.Errorf("inflating entry at %d: %w", off, err)
	}
	return b, nil
}

// entryHeader parses a pack entry's type and inflated size, returning
// how many bytes they took.
func entryHeader(b []byte) (plumbing.ObjectType, int64, int, error) {
	if len(b) == 0 {
		return 0, 0, 0, io.ErrUnexpectedEOF
	}
	t := plumbing.ObjectType((b[0] >> 4) & 7)
	size := int64(b[0] & 0x0f)
	shift := 4
	i := 1
	for c := b[0]; c&0x80 != 0; i++ {
		if i >= len(b) || shift > 56 {
			return 0, 0, 0, errors.New("malformed pack entry header")
		}
		c = b[i]
		size |= int64(c&0x7f) << shift
		shift += 7
	}
	if !t.Valid() {
		return 0, 0, 0, fmt.Errorf("pack entry of unknown type %d", t)
	}
	return t, size, i, nil
}

// ofsDeltaOffset parses the distance back to an offset delta's base.
func ofsDeltaOffset(b []byte) (int64, int, error) {
	if len(b) == 0 {
		return 0, 0, io.ErrUnexpectedEOF
	}
	c := b[0]
	off := int64(c & 0x7f)
	i := 1
	for c&0x80 != 0 {
		if i >= len(b) || off > 1<<55 {
			return 0, 0, errors.New("malformed delta offset")
		}
		c = b[i]
		i++
		off = ((off + 1) << 7) | int64(c&0x7f)
	}
	return off, i, nil
}

// packIndex is a pack, mapped, and its version 2 index, open: packs are
// never changed once named, only removed, and a mapping or an open file
// outlives removal. The index is read with pread, by the names and
// offsets of one first byte at a time (1/256 of it), each kept once read,
// not mapped: each page of a mapping a lookup touches is a page fault,
// and where faults are dear (several µs on a paravirtual machine) the
// index of a repo of 10 000 contracts cost the gate ~190 µs a decision
// that a repo of 10 did not (BenchmarkGateWide). Kept, the parts cost a
// reader that looks up many objects (verify) no more system calls than
// the first lookup of each first byte.
type packIndex struct {
	base      string
	idx       *os.File
	idxSize   int64
	fanout    [256]uint32
	parts     [256]atomic.Pointer[idxPart]
	pack      []byte
	unmapPack func()
	size      int64 // of the pack without its trailer
	count     int
}

// Where a version 2 index keeps its tables: the header, 256 cumulative
// counts by first byte, then count names, crc32s and offsets.
const idxFanout, idxNames = 8, 8 + 256*4

func openPackIndex(base string) (*packIndex, error) {
	f, err := os.Open(base + ".idx")
	if err != nil {
		return nil, err
	}
	p := &packIndex{base: base, idx: f}
	fi, err := f.Stat()
	if err != nil {
		p.close()
		return nil, err
	}
	p.idxSize = fi.Size()
	var hdr [idxNames]byte
	if _, err := f.ReadAt(hdr[:], 0); err != nil || string(hdr[:4]) != "\xfftOc" || binary.BigEndian.Uint32(hdr[4:]) != 2 {
		p.close()
		return nil, fmt.Errorf("%s.idx is not a version 2 pack index", filepath.Base(base))
	}
	for i := range p.fanout {
		p.fanout[i] = binary.BigEndian.Uint32(hdr[idxFanout+i*4:])
	}
	p.count = int(p.fanout[255])
	if p.idxSize < int64(idxNames+p.count*(20+4+4)+40) {
		p.close()
		return nil, fmt.Errorf("%s.idx is truncated", filepath.Base(base))
	}
	if p.pack, p.unmapPack, err = mapFile(base + ".pack"); err != nil {
		p.close()
		return nil, err
	}
	if len(p.pack) < 12+20 || string(p.pack[:4]) != "PACK" {
		p.close()
		return nil, fmt.Errorf("%s.pack is not a pack", filepath.Base(base))
	}
	p.size = int64(len(p.pack)) - 20
	return p, nil
}

func (p *packIndex) close() {
	if p.unmapPack != nil {
		p.unmapPack()
	}
	if p.idx != nil {
		p.idx.Close()
	}
}

// idxPart is the names and offsets of an index's objects of one first
// byte.
type idxPart struct {
	names, offsets []byte
}

// part reads, or returns as read before, the part of the index for
// objects whose name starts with b. Two lookups may read it at once; both
// read the same bytes.
func (p *packIndex) part(b byte) (*idxPart, bool) {
	lo := 0
	if b > 0 {
		lo = int(p.fanout[b-1])
	}
	hi := int(p.fanout[b])
	if hi > p.count || lo > hi {
		return nil, false
	}
	if x := p.parts[b].Load(); x != nil {
		return x, true
	}
	x := &idxPart{names: make([]byte, (hi-lo)*20), offsets: make([]byte, (hi-lo)*4)}
	if _, err := p.idx.ReadAt(x.names, int64(idxNames+lo*20)); err != nil {
		return nil, false
	}
	if _, err := p.idx.ReadAt(x.offsets, int64(idxNames+p.count*(20+4)+lo*4)); err != nil {
		return nil, false
	}
	p.parts[b].Store(x)
	return x, true
}

// find returns the offset of h's entry in the pack.
func (p *packIndex) find(h plumbing.Hash) (int64, bool) {
	x, ok := p.part(h[0])
	if !ok {
		return 0, false
	}
	n := len(x.names) / 20
	j := sort.Search(n, func(j int) bool { return string(x.names[j*20:j*20+20]) >= string(h[:]) })
	if j >= n || string(x.names[j*20:j*20+20]) != string(h[:]) {
		return 0, false
	}
	off := binary.BigEndian.Uint32(x.offsets[j*4:])
	if off&0x80000000 == 0 {
		return int64(off), true
	}
	offsets := idxNames + p.count*(20+4)
	large := offsets + p.count*4 + int(off&0x7fffffff)*8
	if int64(large+8) > p.idxSize-40 {
		return 0, false
	}
	var b [8]byte
	if _, err := p.idx.ReadAt(b[:], int64(large)); err != nil {
		return 0, false
	}
	return int64(binary.BigEndian.Uint64(b[:])), true
}
