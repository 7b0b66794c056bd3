package index

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// The index file is read by every query, so it is a compact binary form
// that decodes in tens of milliseconds at 100 000 events, not JSON: varints,
// raw hashes, and each repeated string (types, environments, run ids,
// facets) written once and then referred to by number. A sha256 of the
// whole file ends it, so a torn or altered file is a cache miss rather than
// a wrong answer.

const indexMagic = "nova-evidence-index 1\n"

type indexWriter struct {
	buf     bytes.Buffer
	strings map[string]uint64
}

func (w *indexWriter) uvarint(v uint64) { w.buf.Write(binary.AppendUvarint(nil, v)) }
func (w *indexWriter) varint(v int64)   { w.buf.Write(binary.AppendVarint(nil, v)) }
func (w *indexWriter) hash(h plumbing.Hash) {
	w.buf.Write(h[:])
}

func (w *indexWriter) str(s string) {
	w.uvarint(uint64(len(s)))
	w.buf.WriteString(s)
}

// ref writes a repeated string: its number when it was written before,
// else 0 and the string, which gets the next number.
func (w *indexWriter) ref(s string) {
	if n, ok := w.strings[s]; ok {
		w.uvarint(n)
		return
	}
	w.uvarint(0)
	w.str(s)
	w.strings[s] = uint64(len(w.strings) + 1)
}

func (w *indexWriter) findings(fs []chain.Finding) {
	w.uvarint(uint64(len(fs)))
	for _, f := range fs {
		w.ref(string(f.Reason))
		w.str(f.Path)
		w.str(f.Commit)
		w.str(f.Message)
	}
}

func (ix *Index) encode() []byte {
	w := &indexWriter{strings: map[string]uint64{}}
	w.buf.WriteString(indexMagic)
	w.str(ix.keys)
	w.str(ix.facetsVersion)
	w.hash(ix.head)
	w.uvarint(uint64(len(ix.commits)))
	for _, c := range ix.commits {
		w.hash(c)
	}
	w.findings(ix.global)
	w.uvarint(uint64(len(ix.dirs)))
	for _, d := range ix.dirs {
		w.str(d.name)
		w.hash(d.tree)
		w.findings(d.commitFindings)
		w.findings(d.chainFindings)
		w.uvarint(uint64(len(d.events)))
		for i := range d.events {
			e := &d.events[i]
			w.str(e.ID)
			w.ref(e.Type)
			w.ref(e.ContractID)
			w.ref(e.Environment)
			w.ref(e.RunID)
			w.uvarint(uint64(e.Seq))
			w.varint(e.Time.UnixNano())
			c, _ := slices.BinarySearchFunc(ix.commits, e.Commit, compareHash)
			w.uvarint(uint64(c))
			w.hash(e.blob)
			w.hash(e.sig)
			w.buf.Write(e.sum[:])
			w.uvarint(uint64(len(e.Facets)))
			for _, f := range e.Facets {
				w.ref(f)
			}
		}
	}
	sum := sha256.Sum256(w.buf.Bytes())
	w.buf.Write(sum[:])
	return w.buf.Bytes()
}

type indexReader struct {
	b       []byte
	strings []string
	err     error
}

func (r *indexReader) fail() {
	if r.err == nil {
		r.err = errIndexFormat
	}
	r.b = nil
}

func (r *indexReader) uvarint() uint64 {
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *indexReader) varint() int64 {
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.fail()
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *indexReader) bytes(n uint64) []byte {
	if uint64(len(r.b)) < n {
		r.fail()
		return make([]byte, n)
	}
	b := r.b[:n]
	r.b = r.b[n:]
	return b
}

func (r *indexReader) hash() (h plumbing.Hash) {
	copy(h[:], r.bytes(uint64(len(h))))
	return h
}

func (r *indexReader) str() string { return string(r.bytes(r.uvarint())) }

func (r *indexReader) ref() string {
	n := r.uvarint()
	if n == 0 {
		s := r.str()
		r.strings = append(r.strings, s)
		return s
	}
	if n > uint64(len(r.strings)) {
		r.fail()
		return ""
	}
	return r.strings[n-1]
}

// count reads a length, refusing one the rest of the file cannot hold
// (each item takes at least min bytes): a damaged file must not make the
// reader allocate without bound.
func (r *indexReader) count(min int) int {
	n := r.uvarint()
	if n > uint64(len(r.b)/min) {
		r.fail()
		return 0
	}
	return int(n)
}

func (r *indexReader) findings() []chain.Finding {
	var fs []chain.Finding
	for range r.count(4) {
		fs = append(fs, chain.Finding{Reason: runner.Reason(r.ref()), Path: r.str(), Commit: r.str(), Message: r.str()})
	}
	return fs
}

func decodeIndex(b []byte) (*Index, error) {
	if len(b) < len(indexMagic)+sha256.Size || !bytes.HasPrefix(b, []byte(indexMagic)) {
		return nil, errIndexFormat
	}
	body := b[:len(b)-sha256.Size]
	if sum := sha256.Sum256(body); !bytes.Equal(sum[:], b[len(body):]) {
		return nil, fmt.Errorf("%w: checksum mismatch", errIndexFormat)
	}
	r := &indexReader{b: body[len(indexMagic):]}
	ix := &Index{keys: r.str(), facetsVersion: r.str(), head: r.hash()}
	ix.commits = make([]plumbing.Hash, r.count(20))
	for i := range ix.commits {
		ix.commits[i] = r.hash()
	}
	ix.global = r.findings()
	for range r.count(21) {
		d := &indexedDir{name: r.str(), tree: r.hash()}
		d.commitFindings, d.chainFindings = r.findings(), r.findings()
		d.events = make([]IndexedEvent, r.count(80))
		for i := range d.events {
			e := &d.events[i]
			e.ID = r.str()
			e.Type, e.ContractID, e.Environment, e.RunID = r.ref(), r.ref(), r.ref(), r.ref()
			e.Seq = int64(r.uvarint())
			e.Time = time.Unix(0, r.varint()).UTC()
			if c := r.uvarint(); c < uint64(len(ix.commits)) {
				e.Commit = ix.commits[c]
			} else {
				r.fail()
			}
			e.blob, e.sig = r.hash(), r.hash()
			copy(e.sum[:], r.bytes(32))
			if n := r.count(1); n > 0 {
				e.Facets = make([]string, n)
				for j := range e.Facets {
					e.Facets[j] = r.ref()
				}
			}
		}
		ix.dirs = append(ix.dirs, d)
	}
	if r.err != nil || len(r.b) != 0 {
		return nil, errIndexFormat
	}
	ix.flatten()
	return ix, nil
}
