// Package gitrepo is a git repository as Nova's evidence store uses it:
// objects read fast and cached, new objects kept aside until they are
// pushed, and a branch moved only by compare-and-swap — in place in a bare
// repo on this machine, or through a git transport from a local clone. It
// knows nothing of events; runner/evidence decides what is written.
package gitrepo

import (
	"bytes"
	"errors"
	"slices"
	"strconv"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// Entry is a tree entry parsed in place: go-git's DecodeTree allocates a
// string per entry, and a verify parses every contract directory once per
// commit that touches it, which made decoding its largest cost.
type Entry struct {
	Name string
	Mode filemode.FileMode
	Hash plumbing.Hash
}

// ParseTree reads git's tree format: "<octal mode> <name>\x00<20-byte
// hash>" repeated. One string holds all names, so a tree costs two
// allocations.
func ParseTree(b []byte) ([]Entry, error) {
	names := string(b)
	entries := make([]Entry, 0, 8)
	for i := 0; i < len(b); {
		sp := bytes.IndexByte(b[i:], ' ')
		if sp < 0 {
			return nil, errors.New("malformed tree entry")
		}
		var mode uint32
		for _, c := range b[i : i+sp] {
			if c < '0' || c > '7' {
				return nil, errors.New("malformed tree mode")
			}
			mode = mode<<3 | uint32(c-'0')
		}
		name := i + sp + 1
		nul := bytes.IndexByte(b[name:], 0)
		if nul < 0 || name+nul+1+20 > len(b) {
			return nil, errors.New("malformed tree entry")
		}
		e := Entry{Name: names[name : name+nul], Mode: filemode.FileMode(mode)}
		copy(e.Hash[:], b[name+nul+1:])
		entries = append(entries, e)
		i = name + nul + 1 + 20
	}
	return entries, nil
}

// EncodeTree is ParseTree's inverse; entries must be in git's order. Each
// commit encodes the five trees on its event's path, contracts/ with up to
// 256 entries, so it formats without fmt.
func EncodeTree(entries []Entry) []byte {
	n := 0
	for _, e := range entries {
		n += len("100644 ") + len(e.Name) + 1 + len(e.Hash)
	}
	b := make([]byte, 0, n)
	for _, e := range entries {
		b = strconv.AppendUint(b, uint64(e.Mode), 8)
		b = append(b, ' ')
		b = append(b, e.Name...)
		b = append(b, 0)
		b = append(b, e.Hash[:]...)
	}
	return b
}

// CompareEntries orders entries as git does, a directory sorting as if its
// name ended in "/", without building that string.
func CompareEntries(a, b Entry) int {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c
	}
	return sortByte(a, n) - sortByte(b, n)
}

// sortByte is the byte of e's sort key at i: past the name, "/" for a
// directory and nothing (-1) for a file.
func sortByte(e Entry, i int) int {
	switch {
	case i < len(e.Name):
		return int(e.Name[i])
	case i == len(e.Name) && e.Mode == filemode.Dir:
		return '/'
	}
	return -1
}

// Find returns the index of the entry called name, or -1.
func Find(entries []Entry, name string) int {
	return slices.IndexFunc(entries, func(e Entry) bool { return e.Name == name })
}

// FindDir is the tree of directory name in entries, zero when there is
// none.
func FindDir(entries []Entry, name string) plumbing.Hash {
	if i := Find(entries, name); i >= 0 && entries[i].Mode == filemode.Dir {
		return entries[i].Hash
	}
	return plumbing.ZeroHash
}

// Upsert puts e into entries, replacing the entry of its name or inserting
// it in git's order; git rejects trees in any other order.
func Upsert(entries []Entry, e Entry) []Entry {
	if i := Find(entries, e.Name); i >= 0 {
		entries[i] = e
		return entries
	}
	i, _ := slices.BinarySearchFunc(entries, e, CompareEntries)
	return slices.Insert(entries, i, e)
}
