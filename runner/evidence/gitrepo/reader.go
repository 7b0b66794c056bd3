package gitrepo

import (
	"io"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/nova-platform/nova/runner"
)

// Reader reads a repo's objects, keeping trees: walking a run of commits,
// a commit's parent trees are read once and reused as an older commit's
// own, and a store re-reads the same few directories for every event.
// It keeps the trees of the last thousand or two reads, so a contract
// directory survives until a verify reaches the commit before it even
// when many contracts interleave. go-git's storage is not safe for
// concurrent use, so neither is a Reader: give each goroutine its own, or
// hold a lock.
type Reader struct {
	st storer.EncodedObjectStorer
	// trees holds recent trees, older the ones before them: when trees is
	// full it becomes older, so what was read last is never dropped all
	// at once (a verify would then read a hundred directories again).
	trees, older map[plumbing.Hash]*tree
}

// tree is a tree as stored, parsed when someone asks for its entries.
type tree struct {
	raw     []byte
	entries []Entry
	parsed  bool
}

// treesKept bounds each generation of a Reader's trees.
const treesKept = 1024

// NewReader reads st.
func NewReader(st storer.EncodedObjectStorer) *Reader {
	return &Reader{st: st, trees: map[plumbing.Hash]*tree{}}
}

// Use switches to st (the same repo, reopened); trees read stay valid.
func (r *Reader) Use(st storer.EncodedObjectStorer) { r.st = st }

// Has reports whether the object h can be read.
func (r *Reader) Has(h plumbing.Hash) bool { return r.st.HasEncodedObject(h) == nil }

// Tree returns the entries of tree h (none for the zero hash). The slice is
// shared: copy it before changing it.
func (r *Reader) Tree(h plumbing.Hash) ([]Entry, error) {
	t, err := r.tree(h)
	if err != nil || t == nil {
		return nil, err
	}
	if !t.parsed {
		if t.entries, err = ParseTree(t.raw); err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "parsing tree %s: %w", h, err)
		}
		t.parsed = true
	}
	return t.entries, nil
}

// RawTree returns tree h as stored, for DiffTrees (none for the zero
// hash). The slice is shared: do not change it.
func (r *Reader) RawTree(h plumbing.Hash) ([]byte, error) {
	t, err := r.tree(h)
	if err != nil || t == nil {
		return nil, err
	}
	return t.raw, nil
}

func (r *Reader) tree(h plumbing.Hash) (*tree, error) {
	if h.IsZero() {
		return nil, nil
	}
	if t, ok := r.trees[h]; ok {
		return t, nil
	}
	t, ok := r.older[h]
	if !ok {
		b, err := r.read(plumbing.TreeObject, h)
		if err != nil {
			return nil, err
		}
		t = &tree{raw: b}
	}
	if len(r.trees) >= treesKept {
		r.older, r.trees = r.trees, make(map[plumbing.Hash]*tree, treesKept)
	}
	r.trees[h] = t
	return t, nil
}

// Blob returns the content of blob h. It may be shared: do not change it.
func (r *Reader) Blob(h plumbing.Hash) ([]byte, error) { return r.read(plumbing.BlobObject, h) }

// Commit returns commit h.
func (r *Reader) Commit(h plumbing.Hash) (*Commit, error) {
	raw, err := r.read(plumbing.CommitObject, h)
	if err != nil {
		return nil, err
	}
	c, err := ParseCommit(h, raw)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading commit %s: %w", h, err)
	}
	return c, nil
}

// maxRereads bounds how often a read re-lists the packs: one merge at a
// time runs, so a second miss means a second merge ran in between, and a
// third that the object is really not there.
const maxRereads = 3

// reindex makes the storage list the repo's packs again, as git does when
// an object is not where it looked: another writer may have merged the
// packs it listed into one it has not seen. It reports whether there is
// anything to retry.
func (r *Reader) reindex() bool {
	ri, ok := r.st.(interface{ reindex() })
	if ok {
		ri.reindex()
	}
	return ok
}

func (r *Reader) read(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	b, err := r.readOnce(t, h)
	for retry := 0; err != nil && retry < maxRereads && r.reindex(); retry++ {
		b, err = r.readOnce(t, h)
	}
	return b, err
}

func (r *Reader) readOnce(t plumbing.ObjectType, h plumbing.Hash) ([]byte, error) {
	o, err := r.st.EncodedObject(t, h)
	if ro, ok := o.(*readObject); ok && err == nil {
		// Read by the pack store for this call (or kept as a delta base,
		// which nobody changes): copying it again was most of what a
		// verify allocated.
		return ro.data, nil
	}
	if err == nil {
		var rd io.ReadCloser
		if rd, err = o.Reader(); err == nil {
			defer rd.Close()
			// Sized up front: io.ReadAll's growing buffer was a fair share
			// of a verify's allocations, two blobs per event.
			b := make([]byte, o.Size())
			if _, err = io.ReadFull(rd, b); err == nil {
				return b, nil
			}
		}
	}
	return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading %s %s: %w", t, h, err)
}
