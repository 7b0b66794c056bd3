package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/go-git/go-billy/v5/osfs"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"
)

// ErrConflict means the branch moved since it was read: the writer
// re-reads the head, rebuilds its commit and tries again.
var ErrConflict = errors.New("evidence repo head moved (non-fast-forward)")

// Remote is a branch that moves only by compare-and-swap, so concurrent
// writers can never overwrite each other: a bare repo written in place
// (OpenBare) or a remote reached through a git transport (OpenClone).
//
// Fetch and Push do the network I/O and need no lock, so a slow remote
// holds up nobody; the other methods touch the local object store, which
// go-git does not make safe for concurrent use, and the caller serialises
// them.
type Remote interface {
	// Objects is where trees, blobs and commits are read.
	Objects() storer.EncodedObjectStorer
	// Fetch reads where the branch is (zero: it does not exist yet) and,
	// unless readable says that commit can be read already, the objects
	// that lead to it.
	Fetch(ctx context.Context, readable func(plumbing.Hash) bool) (Fetched, error)
	// Install makes a fetched head readable through Objects. It writes
	// local files another process may share: hold a file lock.
	Install(f Fetched) error
	// Push sends objs and moves the branch from old to new, returning
	// ErrConflict (wrapped) when the branch is no longer at old.
	Push(ctx context.Context, old, new plumbing.Hash, objs *Objects) error
	// Keep makes a pushed commit readable through Objects.
	Keep(objs *Objects)
	// Close releases the files the remote keeps open.
	Close() error
}

// Fetched is what a fetch brought: the branch head and, when the reader
// lacked it, a pack of the objects leading to it.
type Fetched struct {
	Head plumbing.Hash
	Pack []byte
}

// OpenLocal opens a repo on disk keeping its pack files open: go-git
// otherwise reopens the pack for every object it reads, which dominates a
// verify of a large repo.
func OpenLocal(path string) (*git.Repository, func() error, error) {
	dir := gitDir(path)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err != nil {
		return nil, nil, git.ErrRepositoryNotExists
	}
	st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
	r, err := git.Open(st, nil)
	if err != nil {
		st.Close()
		return nil, nil, err
	}
	return r, st.Close, nil
}

// gitDir is the git directory of the repo at path: path itself when bare.
func gitDir(path string) string {
	if fi, err := os.Stat(filepath.Join(path, ".git")); err == nil && fi.IsDir() {
		return filepath.Join(path, ".git")
	}
	return path
}

// OpenObjects opens the objects of the repo at path for reading: its
// packs through a packStore, the rest through go-git. A read that misses
// re-lists the packs, waiting for a merge of them to finish (see Reader).
func OpenObjects(path string) (storer.EncodedObjectStorer, func() error, error) {
	o, closeFn, err := openObjects(path)
	if err != nil {
		return nil, nil, err
	}
	return o, closeFn, nil
}

func openObjects(path string) (*overlay, func() error, error) {
	repo, closeFn, err := OpenLocal(path)
	if err != nil {
		return nil, nil, err
	}
	dir := gitDir(path)
	ps, err := newPackStore(repo.Storer, dir)
	if err != nil {
		closeFn()
		return nil, nil, err
	}
	o := newOverlay(ps)
	o.gitDir = dir
	return o, ps.Close, nil
}

// BranchHead is the commit of branch ref. A missing branch is an error,
// never another branch or an empty head: verify would otherwise report
// "OK, 0 events" for a mistyped --branch while the evidence sits elsewhere.
// The one exception is a repo with no branch at all (nothing was ever
// recorded, like local mode's repo before its first run or a new forge
// repo): its head is zero whichever branch is asked, as for a remote that
// answers "empty repository", since there is no evidence to miss.
func BranchHead(r *git.Repository, ref plumbing.ReferenceName) (plumbing.Hash, error) {
	h, err := r.Reference(ref, true)
	if err == nil {
		return h.Hash(), nil
	}
	if !errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, fmt.Errorf("reading branch %s: %w", ref.Short(), err)
	}
	branches, err := r.Branches()
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("listing branches: %w", err)
	}
	defer branches.Close()
	other, err := branches.Next()
	switch {
	case errors.Is(err, io.EOF):
		return plumbing.ZeroHash, nil
	case err != nil:
		return plumbing.ZeroHash, fmt.Errorf("listing branches: %w", err)
	}
	return plumbing.ZeroHash, fmt.Errorf("no branch %q (it has %s, for one)", ref.Short(), other.Name().Short())
}

// IsBare reports whether path is a bare git repository.
func IsBare(path string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(path, name)); err != nil {
			return false
		}
	}
	return true
}

// InitBare creates a bare repo at path unless one is there.
func InitBare(path string, branch plumbing.ReferenceName) error {
	if IsBare(path) {
		return nil
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("creating repo %s: %w", path, err)
	}
	_, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{Bare: true, InitOptions: git.InitOptions{DefaultBranch: branch}})
	if err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
		return fmt.Errorf("creating repo %s: %w", path, err)
	}
	return nil
}
