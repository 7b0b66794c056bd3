package gitrepo

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/adler32"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
)

// packWriter writes a version 2 pack of whole objects and builds its index
// as it goes: go-git's encoder would need a second pass (its parser,
// inflating and hashing every object again) to learn the offsets and
// checksums the index holds.
type packWriter struct {
	w     *bufio.Writer
	sum   hash.Hash // of the whole pack: its trailer and name
	crc   hash.Hash32
	zw    *zlib.Writer
	off   uint64
	index idxfile.Writer
	left  uint32
}

// deflaters keeps zlib writers between packs: each holds a compressor of
// about a megabyte, which a run pushing twice allocated, zeroed and faulted
// in twice. A sync.Pool kept them only on the processor that put them
// back: a run's second push, on another, missed and made a new one, and a
// run does not collect to move them where any push would find them.
var deflaters struct {
	sync.Mutex
	spare []*zlib.Writer
}

// maxSpareDeflaters bounds what pushes of many contracts at once leave
// behind.
const maxSpareDeflaters = 4

func getDeflater() *zlib.Writer {
	deflaters.Lock()
	defer deflaters.Unlock()
	if n := len(deflaters.spare); n > 0 {
		zw := deflaters.spare[n-1]
		deflaters.spare = deflaters.spare[:n-1]
		return zw
	}
	// Small JSON events gain little from harder compression, and git
	// reads any level.
	zw, _ := zlib.NewWriterLevel(io.Discard, zlib.BestSpeed) // the level is valid
	return zw
}

func putDeflater(zw *zlib.Writer) {
	zw.Reset(io.Discard) // not to keep the last pack's writer alive
	deflaters.Lock()
	defer deflaters.Unlock()
	if len(deflaters.spare) < maxSpareDeflaters {
		deflaters.spare = append(deflaters.spare, zw)
	}
}

func newPackWriter(w io.Writer, count uint32) (*packWriter, error) {
	p := &packWriter{sum: sha1.New(), crc: crc32.NewIEEE(), left: count}
	p.w = bufio.NewWriterSize(io.MultiWriter(w, p.sum), 64<<10)
	p.zw = getDeflater()
	_ = p.index.OnHeader(count)
	var hdr [12]byte
	copy(hdr[:], "PACK")
	binary.BigEndian.PutUint32(hdr[4:], 2)
	binary.BigEndian.PutUint32(hdr[8:], count)
	_, err := p.w.Write(hdr[:])
	p.off = 12
	return p, err
}

// entryWriter counts and checksums what goes into one entry.
type entryWriter struct{ p *packWriter }

func (e entryWriter) Write(b []byte) (int, error) {
	n, err := e.p.w.Write(b)
	e.p.crc.Write(b[:n])
	e.p.off += uint64(n)
	return n, err
}

// object adds an object of type t with content b. A tree that lists
// only directories is stored as it is (zlib's stored blocks), not
// deflated: such trees are the path to a contract (the root, contracts/,
// a shard, a contract directory of buckets), which the gate, the store
// and verify read on every lookup to find one entry, and they are mostly
// 20-byte hashes, which do not compress. contracts/ deflated to about
// 80 % of its size, and inflating it took 15–30 times as long as copying
// (7.4 kB: ~120 µs against ~5 µs): across a repo of many contracts, most
// of what a gate decision cost beyond a repo of few. A tree of event
// files, whose names share most of their letters, deflates to about half
// and is read to list a chain, not on every lookup.
func (p *packWriter) object(h plumbing.Hash, t plumbing.ObjectType, b []byte) error {
	header := func(uint64) []byte { return objectHeader(t, len(b)) }
	if t == plumbing.TreeObject && onlyDirs(b) {
		return p.add(h, header, func(w io.Writer) error { return writeStored(w, b) })
	}
	return p.add(h, header, func(w io.Writer) error { return p.deflate(w, b) })
}

// onlyDirs reports whether every entry of stored tree b is a directory
// (an empty tree has none that is not).
func onlyDirs(b []byte) bool {
	for i := 0; i < len(b); {
		e, err := parseEntry(b, i)
		if err != nil || e.mode != filemode.Dir {
			return false
		}
		i = e.end
	}
	return true
}

// add adds entry h: its header, which may depend on where the entry
// starts, then the compressed content body writes.
func (p *packWriter) add(h plumbing.Hash, header func(start uint64) []byte, body func(io.Writer) error) error {
	start, err := p.begin(h)
	if err != nil {
		return err
	}
	e := entryWriter{p}
	if _, err := e.Write(header(start)); err != nil {
		return err
	}
	if err := body(e); err != nil {
		return err
	}
	p.index.Add(h, start, p.crc.Sum32())
	return nil
}

// deflate writes b to w as a zlib stream.
func (p *packWriter) deflate(w io.Writer, b []byte) error {
	p.zw.Reset(w)
	if _, err := p.zw.Write(b); err != nil {
		return err
	}
	return p.zw.Close()
}

// maxStoredBlock is the most a stored deflate block holds: its length is
// 16 bits.
const maxStoredBlock = 1<<16 - 1

// writeStored writes b to w as a zlib stream (RFC 1950) of stored deflate
// blocks (RFC 1951, 3.2.4): what zlib.NoCompression writes, without the
// compressor of about a megabyte that every level allocates.
func writeStored(w io.Writer, b []byte) error {
	sum := adler32.Checksum(b)
	if _, err := w.Write([]byte{0x78, 0x01}); err != nil { // deflate, 32 kB window, no dictionary
		return err
	}
	for {
		n := min(len(b), maxStoredBlock)
		var final byte
		if n == len(b) {
			final = 1
		}
		if _, err := w.Write([]byte{final, byte(n), byte(n >> 8), ^byte(n), ^byte(n >> 8)}); err != nil {
			return err
		}
		if _, err := w.Write(b[:n]); err != nil {
			return err
		}
		if b = b[n:]; final == 1 {
			break
		}
	}
	_, err := w.Write(binary.BigEndian.AppendUint32(nil, sum))
	return err
}

// raw adds an entry copied as it is from another pack (a whole object,
// header and compressed content), which must have the checksum crc.
func (p *packWriter) raw(h plumbing.Hash, entry []byte, crc uint32) error {
	if crc32.ChecksumIEEE(entry) != crc {
		return fmt.Errorf("object %s: its pack entry does not match the checksum its index records", h)
	}
	return p.entry(h, entry)
}

// entry adds a pack entry as it is: header and compressed content.
func (p *packWriter) entry(h plumbing.Hash, entry []byte) error {
	start, err := p.begin(h)
	if err != nil {
		return err
	}
	if _, err := (entryWriter{p}).Write(entry); err != nil {
		return err
	}
	p.index.Add(h, start, p.crc.Sum32())
	return nil
}

func (p *packWriter) begin(h plumbing.Hash) (uint64, error) {
	if p.left == 0 {
		return 0, fmt.Errorf("object %s is one more than the pack's header counts", h)
	}
	p.left--
	p.crc.Reset()
	return p.off, nil
}

// finish writes the trailer and returns the pack's checksum (its name) and
// its index.
func (p *packWriter) finish() (plumbing.Hash, *idxfile.MemoryIndex, error) {
	if p.left != 0 {
		return plumbing.ZeroHash, nil, fmt.Errorf("pack is %d object(s) short of its header", p.left)
	}
	if err := p.w.Flush(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	var sum plumbing.Hash
	copy(sum[:], p.sum.Sum(nil))
	if _, err := p.w.Write(sum[:]); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	if err := p.w.Flush(); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	putDeflater(p.zw)
	p.zw = nil
	if err := p.index.OnFooter(sum); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	index, err := p.index.Index()
	return sum, index, err
}

// objectHeader is a pack entry's type and inflated size: three bits of
// type and four of size in the first byte, then seven bits of size per
// byte, each byte but the last with its high bit set.
func objectHeader(t plumbing.ObjectType, size int) []byte {
	b := []byte{byte(t)<<4 | byte(size&0x0f)}
	for size >>= 4; size > 0; size >>= 7 {
		b[len(b)-1] |= 0x80
		b = append(b, byte(size&0x7f))
	}
	return b
}

// writePack writes count objects, added by fill, as a pack and its index
// into packDir, and makes both durable before naming them, so a power cut
// never leaves a named but torn pack (go-git and git read every index they
// find, and one bad index makes the whole repo unreadable). The index is
// named before the pack: go-git lists packs by their .pack file and then
// opens the index beside it. It returns the pack's path; the caller syncs
// the directory with whatever else it syncs.
func writePack(packDir string, count uint32, fill func(*packWriter) error, sync func(paths ...string) error) (string, error) {
	return savePack(packDir, func(pf *os.File) (plumbing.Hash, *idxfile.MemoryIndex, error) {
		pw, err := newPackWriter(pf, count)
		if err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if err := fill(pw); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		sum, index, err := pw.finish()
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("writing pack: %w", err)
		}
		return sum, index, nil
	}, sync)
}

// storePack stores pack, whose checksum is sum and whose index is index,
// in packDir as writePack does.
func storePack(packDir string, pack []byte, sum plumbing.Hash, index *idxfile.MemoryIndex, sync func(paths ...string) error) (string, error) {
	return savePack(packDir, func(pf *os.File) (plumbing.Hash, *idxfile.MemoryIndex, error) {
		if _, err := pf.Write(pack); err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("writing pack: %w", err)
		}
		return sum, index, nil
	}, sync)
}

// savePack has write put a pack in a temporary file in packDir, writes
// its index beside it, makes both durable, and names them after the
// pack's checksum: the index first, since readers list packs by their
// .pack file.
func savePack(packDir string, write func(*os.File) (plumbing.Hash, *idxfile.MemoryIndex, error), sync func(paths ...string) error) (string, error) {
	if err := os.MkdirAll(packDir, 0o755); err != nil {
		return "", err
	}
	pf, err := os.CreateTemp(packDir, "tmp_pack_")
	if err != nil {
		return "", err
	}
	defer func() {
		pf.Close()
		os.Remove(pf.Name())
	}()
	sum, index, err := write(pf)
	if err != nil {
		return "", err
	}
	xf, err := os.CreateTemp(packDir, "tmp_idx_")
	if err != nil {
		return "", err
	}
	defer func() {
		xf.Close()
		os.Remove(xf.Name())
	}()
	bw := bufio.NewWriterSize(xf, 16<<10)
	if _, err = idxfile.NewEncoder(bw).Encode(index); err == nil {
		err = bw.Flush()
	}
	if err != nil {
		return "", fmt.Errorf("writing pack index: %w", err)
	}
	for _, f := range []*os.File{pf, xf} {
		if err := f.Chmod(0o444); err != nil {
			return "", err
		}
	}
	if err := sync(pf.Name(), xf.Name()); err != nil {
		return "", fmt.Errorf("syncing pack: %w", err)
	}
	base := filepath.Join(packDir, "pack-"+sum.String())
	if err := os.Rename(xf.Name(), base+".idx"); err != nil {
		return "", err
	}
	if err := os.Rename(pf.Name(), base+".pack"); err != nil {
		return "", err
	}
	return base + ".pack", nil
}

// writeObjectsPack writes objs as one pack into packDir: an object that
// is the next version of one written before it (Objects.PutNext) as a
// delta of that one, while its chain is short and the delta smaller.
func writeObjectsPack(packDir string, objs *Objects, sync func(paths ...string) error) (string, error) {
	return writePack(packDir, uint32(len(objs.order)), func(pw *packWriter) error { return objs.fill(pw, true) }, sync)
}

// streamObjectsPack writes objs to w as the pack writeObjectsPack would
// store: what a push over a transport sends. go-git's encoder sent every
// object whole, and a batch's dozen versions of each tree on its events'
// path, each one entry away from the one before, were most of the bytes.
// Without deltas (a receiver that does not announce ofs-delta) every
// object goes whole.
func streamObjectsPack(w io.Writer, objs *Objects, deltas bool) error {
	pw, err := newPackWriter(w, uint32(len(objs.order)))
	if err != nil {
		return err
	}
	if err := objs.fill(pw, deltas); err != nil {
		return err
	}
	_, _, err = pw.finish()
	return err
}

// fill adds the set's objects to pw in order; with deltas, each next
// version of a tree (PutNext) as a delta of the one before while its chain
// is short and the delta smaller.
//
// What each entry holds is settled first, in order (a delta needs its
// base's content); the entries are then compressed on every core, each
// on its own, and written in order, each delta's header naming where its
// base starts. Compressing a drain's thousands of objects one after
// another was a tenth of validating many contracts, on one core.
func (objs *Objects) fill(pw *packWriter, deltas bool) error {
	type written struct {
		entry int
		data  []byte
		depth int
	}
	bases := make(map[plumbing.Hash]written, len(objs.prev))
	for _, p := range objs.prev {
		bases[p] = written{depth: -1} // not written yet
	}
	entries := make([]packEntry, 0, len(objs.order))
	for _, h := range objs.order {
		obj := objs.get(h)
		r, err := obj.Reader()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(r)
		r.Close()
		if err != nil {
			return err
		}
		w := written{entry: len(entries), data: b}
		e := packEntry{h: h, typ: obj.Type(), content: b, base: -1}
		if prev, ok := bases[objs.prev[h]]; ok && deltas && prev.depth >= 0 && prev.depth < maxDeltaDepth && len(prev.data) > 0 {
			if d := EncodeDelta(prev.data, b); len(d) < len(b)/2 {
				w.depth = prev.depth + 1
				e.typ, e.content, e.base = plumbing.OFSDeltaObject, d, prev.entry
			}
		}
		e.stored = e.typ == plumbing.TreeObject && onlyDirs(b)
		entries = append(entries, e)
		if _, isBase := bases[h]; isBase {
			bases[h] = w
		}
	}
	if err := compressEntries(entries); err != nil {
		return err
	}
	starts := make([]uint64, len(entries))
	for i, e := range entries {
		start := pw.off
		header := objectHeader(e.typ, len(e.content))
		if e.base >= 0 {
			header = AppendOfsDelta(header, start-starts[e.base])
		}
		if err := pw.entry(e.h, slices.Concat(header, e.body)); err != nil {
			return err
		}
		starts[i] = start
	}
	return nil
}

// packEntry is one object of a pack being written: its type (an offset
// delta's when it is one, of the entry base), its content (or delta),
// whether it is stored rather than deflated (packWriter.object), and its
// compressed body once compressEntries has run.
type packEntry struct {
	h       plumbing.Hash
	typ     plumbing.ObjectType
	content []byte
	base    int
	stored  bool
	body    []byte
}

// entriesPerCompressor is the fewest entries worth another goroutine: a
// run's own push of a few events compresses on its own goroutine. (A
// variable so a test can compress on one.)
var entriesPerCompressor = 64

// compressEntries sets each entry's body, on every core.
func compressEntries(entries []packEntry) error {
	workers := max(1, min(runtime.GOMAXPROCS(0), len(entries)/entriesPerCompressor))
	var next atomic.Int64
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			zw := getDeflater()
			defer putDeflater(zw)
			var buf bytes.Buffer
			for i := int(next.Add(1)) - 1; i < len(entries); i = int(next.Add(1)) - 1 {
				e := &entries[i]
				buf.Reset()
				if e.stored {
					errs[w] = writeStored(&buf, e.content)
				} else {
					zw.Reset(&buf)
					if _, errs[w] = zw.Write(e.content); errs[w] == nil {
						errs[w] = zw.Close()
					}
				}
				if errs[w] != nil {
					return
				}
				e.body = bytes.Clone(buf.Bytes())
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
