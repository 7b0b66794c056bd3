package monorepo

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// maxTreeDepth bounds how deep the base tree is followed, as go-git's
// tree walker bounds it: a tree that deep is bad data, not a repository.
const maxTreeDepth = 1024

// trees reads the base and head trees of a change once: the diff and the
// listing of the base's contracts share every decoded tree, and a subtree
// repeated across the repository (the same reports, vendored code) is
// listed once, by its hash.
type trees struct {
	s       storer.EncodedObjectStorer
	decoded map[plumbing.Hash]*object.Tree
	// listed holds, per tree, the files below it whose name could be a
	// contract's, relative to it, in the tree's own order.
	listed map[plumbing.Hash][]leaf
	// named holds the verdict on each entry name already checked.
	named map[string]error
}

// leaf is a file of a tree, relative to the tree listed.
type leaf struct {
	rel  string
	mode filemode.FileMode
	hash plumbing.Hash
}

func newTrees(s storer.EncodedObjectStorer) *trees {
	return &trees{s: s, decoded: map[plumbing.Hash]*object.Tree{}, listed: map[plumbing.Hash][]leaf{}, named: map[string]error{}}
}

func (r *trees) tree(h plumbing.Hash) (*object.Tree, error) {
	if t, ok := r.decoded[h]; ok {
		return t, nil
	}
	t, err := object.GetTree(r.s, h)
	if err != nil {
		return nil, err
	}
	r.decoded[h] = t
	return t, nil
}

// diff calls changed with the path of every file that differs between the
// trees from and to, in the order go-git's DiffTree reports its changes
// (each directory's entries by name, a file replaced by a directory or
// the reverse as the old side's files then the new side's), once per
// change. The selection's reasons keep the order its files came in.
func (r *trees) diff(ctx context.Context, from, to *object.Tree, changed func(string)) error {
	return r.diffEntries(ctx, "", from.Entries, to.Entries, changed)
}

func (r *trees) diffEntries(ctx context.Context, dir string, from, to []object.TreeEntry, changed func(string)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	from, to = byName(from), byName(to)
	for len(from) > 0 || len(to) > 0 {
		switch {
		case len(to) == 0 || len(from) > 0 && from[0].Name < to[0].Name:
			if err := r.files(dir, from[0], changed); err != nil {
				return err
			}
			from = from[1:]
			continue
		case len(from) == 0 || from[0].Name > to[0].Name:
			if err := r.files(dir, to[0], changed); err != nil {
				return err
			}
			to = to[1:]
			continue
		}
		f, t := from[0], to[0]
		from, to = from[1:], to[1:]
		p := path.Join(dir, f.Name)
		switch fromDir, toDir := f.Mode == filemode.Dir, t.Mode == filemode.Dir; {
		case f.Hash == t.Hash && diffMode(f.Mode) == diffMode(t.Mode):
		case !fromDir && !toDir:
			changed(p)
		case fromDir != toDir:
			if err := r.files(dir, f, changed); err != nil {
				return err
			}
			if err := r.files(dir, t, changed); err != nil {
				return err
			}
		default:
			ft, err := r.tree(f.Hash)
			if err != nil {
				return err
			}
			tt, err := r.tree(t.Hash)
			if err != nil {
				return err
			}
			if err := r.diffEntries(ctx, p, ft.Entries, tt.Entries, changed); err != nil {
				return err
			}
		}
	}
	return nil
}

// diffMode is the mode as the diff compares it: go-git's tree noder
// hashes the deprecated group-writable mode as a regular file's.
func diffMode(m filemode.FileMode) filemode.FileMode {
	if m == filemode.Deprecated {
		return filemode.Regular
	}
	return m
}

// byName is a tree's entries ordered by name, as go-git's diff visits
// them (git's own order puts a directory as if its name ended in "/").
func byName(es []object.TreeEntry) []object.TreeEntry {
	if slices.IsSortedFunc(es, func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) }) {
		return es
	}
	return slices.SortedStableFunc(slices.Values(es), func(a, b object.TreeEntry) int { return strings.Compare(a.Name, b.Name) })
}

// files calls changed with e's path, or with every file below it when it
// is a directory: a whole side of a change.
func (r *trees) files(dir string, e object.TreeEntry, changed func(string)) error {
	p := path.Join(dir, e.Name)
	if e.Mode != filemode.Dir {
		changed(p)
		return nil
	}
	t, err := r.tree(e.Hash)
	if err != nil {
		return err
	}
	for _, c := range byName(t.Entries) {
		if err := r.files(p, c, changed); err != nil {
			return err
		}
	}
	return nil
}

// contractFiles lists the files below tree h whose name could be a
// contract's, relative to it, in the order go-git's tree walker visits
// them. Every entry name is checked as the walker checks it, so a tree
// no checkout could hold is refused rather than listed.
func (r *trees) contractFiles(h plumbing.Hash, depth int) ([]leaf, error) {
	if l, ok := r.listed[h]; ok {
		return l, nil
	}
	if depth > maxTreeDepth {
		return nil, object.ErrMaxTreeDepth
	}
	t, err := r.tree(h)
	if err != nil {
		return nil, err
	}
	var out []leaf
	for _, e := range t.Entries {
		if err := r.validName(e.Name); err != nil {
			return nil, err
		}
		switch {
		case e.Mode == filemode.Dir:
			below, err := r.contractFiles(e.Hash, depth+1)
			if err != nil {
				return nil, err
			}
			for _, l := range below {
				out = append(out, leaf{rel: e.Name + "/" + l.rel, mode: l.mode, hash: l.hash})
			}
		case e.Mode == filemode.Submodule:
		case e.Name == contractFile || strings.HasSuffix(e.Name, contractSuffix):
			out = append(out, leaf{rel: e.Name, mode: e.Mode, hash: e.Hash})
		}
	}
	r.listed[h] = out
	return out, nil
}

// validName checks a tree entry's name with go-git's own rule for paths
// leaving the object store (FindEntry's), once per distinct name: an
// empty tree finds nothing, so what it answers is the rule's verdict.
func (r *trees) validName(name string) error {
	if err, ok := r.named[name]; ok {
		return err
	}
	_, err := (&object.Tree{}).FindEntry(name)
	if errors.Is(err, object.ErrEntryNotFound) || errors.Is(err, object.ErrDirectoryNotFound) {
		err = nil
	}
	r.named[name] = err
	return err
}
