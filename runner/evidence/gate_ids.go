package evidence

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/gob"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math/bits"
	"os"
	"slices"
	"sort"

	"github.com/go-git/go-git/v5/plumbing"
)

// The stored id hashes of a chain (<key>.ids) are asked about once per
// pending event, and a chain may hold years of events: a question reads
// the file's header and one bucket of about idsPerBucket hashes, never the
// whole file. Each part carries its own checksum, so a torn or altered
// file is found out by whichever part a question reads; any such failure
// is a miss, and the chain is read instead.
//
// Layout: gateIDsMagic, the header's length (4 bytes) and gob encoding,
// its sha256; 2^Bits bucket records of 16 bytes (first and end index of
// the bucket's hashes, the crc32 of their bytes, the crc32 of the
// record's first 12 bytes); then every hash, sorted, 8 bytes big-endian.
// A hash's bucket is its top Bits bits.

const (
	gateIDsMagic = "nova-gate-ids 2\n"
	idsPerBucket = 64
	idsRecord    = 16
	// maxIDsHeader bounds the header read before its length is trusted.
	maxIDsHeader = 4 << 10
)

type idsHeader struct {
	Keys  string
	Dir   string
	Tree  plumbing.Hash
	Count uint32
	Bits  uint8
}

// idsFile is an opened stored ids file whose header matched.
type idsFile struct {
	path           string
	count          uint32
	bits           uint8
	recOff, idsOff int64
}

// writeIDs stores hashes (sorted here) for the chain hdr names.
func writeIDs(path string, hdr idsHeader, hashes []uint64) (*idsFile, error) {
	slices.Sort(hashes)
	hdr.Count = uint32(len(hashes))
	hdr.Bits = 0
	if n := len(hashes) / idsPerBucket; n > 1 {
		hdr.Bits = uint8(bits.Len(uint(n - 1)))
	}
	var head bytes.Buffer
	if err := gob.NewEncoder(&head).Encode(hdr); err != nil {
		return nil, err
	}
	sum := sha256.Sum256(head.Bytes())
	buckets := 1 << hdr.Bits
	out := make([]byte, 0, len(gateIDsMagic)+4+head.Len()+len(sum)+buckets*idsRecord+8*len(hashes))
	out = append(out, gateIDsMagic...)
	out = binary.BigEndian.AppendUint32(out, uint32(head.Len()))
	out = append(out, head.Bytes()...)
	out = append(out, sum[:]...)
	ids := make([]byte, 0, 8*len(hashes))
	for _, h := range hashes {
		ids = binary.BigEndian.AppendUint64(ids, h)
	}
	start := 0
	for b := range buckets {
		end := start
		for end < len(hashes) && bucketOf(hashes[end], hdr.Bits) == uint64(b) {
			end++
		}
		rec := binary.BigEndian.AppendUint32(nil, uint32(start))
		rec = binary.BigEndian.AppendUint32(rec, uint32(end))
		rec = binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(ids[8*start:8*end]))
		rec = binary.BigEndian.AppendUint32(rec, crc32.ChecksumIEEE(rec))
		out = append(out, rec...)
		start = end
	}
	out = append(out, ids...)
	if err := writeAtomic(path, out); err != nil {
		return nil, err
	}
	recOff := int64(len(gateIDsMagic) + 4 + head.Len() + len(sum))
	return &idsFile{path: path, count: hdr.Count, bits: hdr.Bits, recOff: recOff, idsOff: recOff + int64(buckets*idsRecord)}, nil
}

func bucketOf(h uint64, bits uint8) uint64 {
	if bits == 0 {
		return 0
	}
	return h >> (64 - bits)
}

// openIDs opens the stored ids at path if they are those of the chain of
// dir at tree, signed with keys.
func openIDs(path, keys, dir string, tree plumbing.Hash) (*idsFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, maxIDsHeader)
	n, err := io.ReadFull(f, b)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, err
	}
	b = b[:n]
	body, ok := bytes.CutPrefix(b, []byte(gateIDsMagic))
	if !ok || len(body) < 4 {
		return nil, fmt.Errorf("%s: not a %s file", path, "nova-gate-ids 2")
	}
	size := int(binary.BigEndian.Uint32(body))
	if 4+size+sha256.Size > len(body) {
		return nil, fmt.Errorf("%s: header truncated", path)
	}
	head, sum := body[4:4+size], body[4+size:4+size+sha256.Size]
	if want := sha256.Sum256(head); !bytes.Equal(sum, want[:]) {
		return nil, fmt.Errorf("%s: header checksum mismatch", path)
	}
	var hdr idsHeader
	if err := gob.NewDecoder(bytes.NewReader(head)).Decode(&hdr); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if hdr.Keys != keys || hdr.Dir != dir || hdr.Tree != tree || hdr.Bits > 24 {
		return nil, fmt.Errorf("%s: of another chain", path)
	}
	recOff := int64(len(gateIDsMagic) + 4 + size + sha256.Size)
	return &idsFile{path: path, count: hdr.Count, bits: hdr.Bits, recOff: recOff, idsOff: recOff + int64(idsRecord)<<hdr.Bits}, nil
}

// hasAny reports whether the stored hashes hold any of hs, reading only
// their buckets.
func (f *idsFile) hasAny(hs []uint64) (bool, error) {
	if len(hs) == 0 {
		return false, nil
	}
	file, err := os.Open(f.path)
	if err != nil {
		return false, err
	}
	defer file.Close()
	for _, h := range hs {
		ids, err := f.bucket(file, bucketOf(h, f.bits))
		if err != nil {
			return false, err
		}
		n := len(ids) / 8
		i := sort.Search(n, func(i int) bool { return binary.BigEndian.Uint64(ids[8*i:]) >= h })
		if i < n && binary.BigEndian.Uint64(ids[8*i:]) == h {
			return true, nil
		}
	}
	return false, nil
}

// all reads every stored hash.
func (f *idsFile) all() ([]uint64, error) {
	file, err := os.Open(f.path)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	hashes := make([]uint64, 0, f.count)
	for b := range uint64(1) << f.bits {
		ids, err := f.bucket(file, b)
		if err != nil {
			return nil, err
		}
		for i := 0; i+8 <= len(ids); i += 8 {
			hashes = append(hashes, binary.BigEndian.Uint64(ids[i:]))
		}
	}
	if len(hashes) != int(f.count) {
		return nil, fmt.Errorf("%s: %d hashes, its header says %d", f.path, len(hashes), f.count)
	}
	return hashes, nil
}

// bucket reads and checks bucket b's hashes.
func (f *idsFile) bucket(file *os.File, b uint64) ([]byte, error) {
	var rec [idsRecord]byte
	if _, err := file.ReadAt(rec[:], f.recOff+int64(b)*idsRecord); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	if crc32.ChecksumIEEE(rec[:12]) != binary.BigEndian.Uint32(rec[12:]) {
		return nil, fmt.Errorf("%s: bucket %d: record checksum mismatch", f.path, b)
	}
	start, end := binary.BigEndian.Uint32(rec[0:]), binary.BigEndian.Uint32(rec[4:])
	if start > end || end > f.count {
		return nil, fmt.Errorf("%s: bucket %d out of range", f.path, b)
	}
	ids := make([]byte, 8*int(end-start))
	if _, err := file.ReadAt(ids, f.idsOff+8*int64(start)); err != nil {
		return nil, fmt.Errorf("%s: %w", f.path, err)
	}
	if crc32.ChecksumIEEE(ids) != binary.BigEndian.Uint32(rec[8:]) {
		return nil, fmt.Errorf("%s: bucket %d: checksum mismatch", f.path, b)
	}
	return ids, nil
}
