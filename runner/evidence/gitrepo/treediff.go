package gitrepo

import (
	"bytes"
	"errors"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// DiffTrees calls fn for every entry that differs between the trees a and
// b, given as stored, in git's order: ea alone for an entry only a has, eb
// alone for one only b has, both for a name whose mode or hash changed.
//
// A verify diffs two versions of the same directory for every commit, and
// they differ in one entry of hundreds: the bytes before the first
// difference and after the last one are compared whole, not entry by
// entry, and only the entries that differ are parsed into an Entry (a
// string each).
func DiffTrees(a, b []byte, fn func(ea, eb *Entry) error) error {
	i, err := entryBefore(a, commonPrefix(a, b))
	if err != nil {
		return err
	}
	j := i // the bytes before are the same entries in both
	for !bytes.Equal(a[i:], b[j:]) {
		var ea, eb rawEntry
		if i < len(a) {
			if ea, err = parseEntry(a, i); err != nil {
				return err
			}
		}
		if j < len(b) {
			if eb, err = parseEntry(b, j); err != nil {
				return err
			}
		}
		var cmp int
		switch {
		case i == len(a):
			cmp = 1
		case j == len(b):
			cmp = -1
		default:
			cmp = compareRaw(ea, eb)
		}
		switch {
		case cmp < 0:
			err = fn(ea.entry(), nil)
			i = ea.end
		case cmp > 0:
			err = fn(nil, eb.entry())
			j = eb.end
		default:
			if ea.mode != eb.mode || !bytes.Equal(ea.hash, eb.hash) {
				err = fn(ea.entry(), eb.entry())
			}
			i, j = ea.end, eb.end
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// rawEntry is an entry of a stored tree, in place.
type rawEntry struct {
	mode filemode.FileMode
	name []byte
	hash []byte
	end  int // offset of the next entry
}

func (e rawEntry) entry() *Entry {
	out := &Entry{Name: string(e.name), Mode: e.mode}
	copy(out.Hash[:], e.hash)
	return out
}

// ErrMalformedTree is DiffTrees' error for bytes that are not a tree.
var ErrMalformedTree = errors.New("malformed tree entry")

// parseEntry reads the entry at offset i of a stored tree, checking it as
// ParseTree does.
func parseEntry(b []byte, i int) (rawEntry, error) {
	sp := bytes.IndexByte(b[i:], ' ')
	if sp < 0 {
		return rawEntry{}, ErrMalformedTree
	}
	var mode uint32
	for _, c := range b[i : i+sp] {
		if c < '0' || c > '7' {
			return rawEntry{}, ErrMalformedTree
		}
		mode = mode<<3 | uint32(c-'0')
	}
	name := i + sp + 1
	nul := bytes.IndexByte(b[name:], 0)
	if nul < 0 || name+nul+1+20 > len(b) {
		return rawEntry{}, ErrMalformedTree
	}
	h := name + nul + 1
	return rawEntry{mode: filemode.FileMode(mode), name: b[name : name+nul], hash: b[h : h+20], end: h + 20}, nil
}

// entryBefore is the offset of the entry of b that holds offset n (len(b)
// when n is its end): the start of the first entry not wholly before n.
func entryBefore(b []byte, n int) (int, error) {
	i := 0
	for i < len(b) {
		e, err := parseEntry(b, i)
		if err != nil {
			return 0, err
		}
		if e.end > n {
			break
		}
		i = e.end
	}
	return i, nil
}

// commonPrefix is the length of the longest prefix a and b share.
func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	i := 0
	for i+64 <= n && bytes.Equal(a[i:i+64], b[i:i+64]) {
		i += 64
	}
	for i < n && a[i] == b[i] {
		i++
	}
	return i
}

// compareRaw is CompareEntries for entries in place.
func compareRaw(a, b rawEntry) int {
	n := min(len(a.name), len(b.name))
	if c := bytes.Compare(a.name[:n], b.name[:n]); c != 0 {
		return c
	}
	return rawSortByte(a, n) - rawSortByte(b, n)
}

func rawSortByte(e rawEntry, i int) int {
	switch {
	case i < len(e.name):
		return int(e.name[i])
	case i == len(e.name) && e.mode == filemode.Dir:
		return '/'
	}
	return -1
}

// FindRaw returns the entry called name in the stored tree b, looking
// from offset from (an entry's start), and the offsets it spans. Entries
// are in git's order, in which a directory sorts as its name and "/", so
// the search stops at the first entry past name as a directory: "c-a.b"
// is not past directory "c-a", which sorts after it.
func FindRaw(b []byte, from int, name string) (e Entry, start, end int, ok bool) {
	last := rawEntry{name: []byte(name), mode: filemode.Dir}
	for i := from; i < len(b); {
		re, err := parseEntry(b, i)
		if err != nil {
			return Entry{}, 0, 0, false
		}
		if bytes.Equal(re.name, last.name) {
			return *re.entry(), i, re.end, true
		}
		if compareRaw(re, last) > 0 {
			return Entry{}, 0, 0, false
		}
		i = re.end
	}
	return Entry{}, 0, 0, false
}

// TreeHash is the hash of a tree stored as b.
func TreeHash(b []byte) plumbing.Hash { return plumbing.ComputeHash(plumbing.TreeObject, b) }

// KeepTree makes the tree stored as b, which must hash to h, readable
// from r's cache as if read from the repo. A verify derives the trees a
// commit's parent must have from the commit's own and checks them by
// hash, instead of inflating them from the pack.
func (r *Reader) KeepTree(h plumbing.Hash, b []byte) {
	if _, ok := r.trees[h]; ok {
		return
	}
	if len(r.trees) >= treesKept {
		r.older, r.trees = r.trees, make(map[plumbing.Hash]*tree, treesKept)
	}
	r.trees[h] = &tree{raw: b}
}
