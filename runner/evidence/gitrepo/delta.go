package gitrepo

import "encoding/binary"

// maxDeltaDepth bounds a delta chain in the packs Nova writes: reading the
// newest of a batch's versions of a tree applies each delta before it.
// git's own default is 50; a batch is a run's dozen events.
const maxDeltaDepth = 50

// EncodeDelta encodes target as a git delta of base (not empty): what
// they share at the start and at the end is copied from base, what lies
// between is inserted. Successive versions of a tree in a batch differ in one entry
// (an event's two files added, or a subdirectory's hash changed), so that
// is the whole difference, found in one pass and without an index.
func EncodeDelta(base, target []byte) []byte {
	prefix := 0
	for prefix < len(base) && prefix < len(target) && base[prefix] == target[prefix] {
		prefix++
	}
	suffix := 0
	for suffix < len(base)-prefix && suffix < len(target)-prefix && base[len(base)-1-suffix] == target[len(target)-1-suffix] {
		suffix++
	}
	d := binary.AppendUvarint(nil, uint64(len(base)))
	d = binary.AppendUvarint(d, uint64(len(target)))
	d = appendCopyOp(d, 0, prefix)
	for rest := target[prefix : len(target)-suffix]; len(rest) > 0; {
		n := min(len(rest), 0x7f)
		d = append(append(d, byte(n)), rest[:n]...)
		rest = rest[n:]
	}
	return appendCopyOp(d, len(base)-suffix, suffix)
}

// appendCopyOp appends delta instructions copying n bytes of the base from
// off: an instruction byte whose low bits say which offset and size bytes
// follow, in pieces of at most 0xffff bytes (a size of 0x10000 would be
// written as none at all, a special case better not needed).
func appendCopyOp(d []byte, off, n int) []byte {
	for n > 0 {
		size := min(n, 0xffff)
		op, at := byte(0x80), len(d)
		d = append(d, 0)
		for i := range 4 {
			if b := byte(off >> (8 * i)); b != 0 {
				op |= 1 << i
				d = append(d, b)
			}
		}
		for i := range 2 {
			if b := byte(size >> (8 * i)); b != 0 {
				op |= 0x10 << i
				d = append(d, b)
			}
		}
		d[at] = op
		off, n = off+size, n-size
	}
	return d
}

// AppendOfsDelta appends the distance back from an offset delta's entry to
// its base's as a pack stores it: seven bits a byte, most significant
// first, each byte but the last with its high bit set and the value less
// one (so that no two encodings mean the same distance).
func AppendOfsDelta(d []byte, rel uint64) []byte {
	var buf [10]byte
	i := len(buf) - 1
	buf[i] = byte(rel & 0x7f)
	for rel >>= 7; rel > 0; rel >>= 7 {
		rel--
		i--
		buf[i] = 0x80 | byte(rel&0x7f)
	}
	return append(d, buf[i:]...)
}
