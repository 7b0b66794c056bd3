package evidence

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
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/nova-platform/nova/runner"
)

// Repo is an evidence repo opened for reading; Close releases the pack
// files it keeps open.
type Repo struct {
	Git   *git.Repository
	Head  plumbing.Hash
	close func() error
	// fork opens another independent read handle, so Verify can read with
	// several goroutines.
	fork func() (storer.EncodedObjectStorer, func() error, error)
}

// Close releases the repo's open files.
func (r *Repo) Close() error {
	if r.close == nil {
		return nil
	}
	return r.close()
}

// OpenRepo opens an evidence repo for reading: a local path in place, a
// URL by cloning it into memory. Head is the branch's commit, zero for an
// empty repo.
func OpenRepo(ctx context.Context, repo, branch string, auth transport.AuthMethod) (*Repo, error) {
	if branch == "" {
		branch = DefaultBranch
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if isLocalPath(repo) {
		r, closeFn, err := openLocal(trimFileScheme(repo))
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "opening evidence repo %s: %w", repo, err)
		}
		fork := func() (storer.EncodedObjectStorer, func() error, error) {
			r, closeFn, err := openLocal(trimFileScheme(repo))
			if err != nil {
				return nil, nil, err
			}
			return r.Storer, closeFn, nil
		}
		head, err := branchHead(r, ref)
		if err != nil {
			closeFn()
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "evidence repo %s: %w", redactURL(repo), err)
		}
		return &Repo{Git: r, Head: head, close: closeFn, fork: fork}, nil
	}
	r, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: repo, Auth: auth, ReferenceName: ref, SingleBranch: true, NoCheckout: true, Tags: git.NoTags,
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		r, err = git.Init(memory.NewStorage(), nil)
	}
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "cloning evidence repo %s: %w", redactURL(repo), err)
	}
	head, err := branchHead(r, ref)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "evidence repo %s: %w", redactURL(repo), err)
	}
	// Reads of an in-memory repo are safe from several goroutines.
	shared := func() (storer.EncodedObjectStorer, func() error, error) {
		return r.Storer, func() error { return nil }, nil
	}
	return &Repo{Git: r, Head: head, fork: shared}, nil
}

// openLocal opens a repo on disk keeping its pack files open: go-git
// otherwise reopens the pack for every object it reads, which dominates a
// verify of a large repo.
func openLocal(path string) (*git.Repository, func() error, error) {
	dir := path
	if fi, err := os.Stat(filepath.Join(path, ".git")); err == nil && fi.IsDir() {
		dir = filepath.Join(path, ".git")
	}
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

// branchHead is the commit of branch ref. A missing branch is an error,
// never another branch or an empty head: verify would otherwise report
// "OK, 0 events" for a mistyped --branch while the evidence sits elsewhere.
// The one exception is a repo with no branch at all (nothing was ever
// recorded, like local mode's repo before its first run or a new forge
// repo): its head is zero whichever branch is asked, as for a remote that
// answers "empty repository", since there is no evidence to miss.
func branchHead(r *git.Repository, ref plumbing.ReferenceName) (plumbing.Hash, error) {
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
