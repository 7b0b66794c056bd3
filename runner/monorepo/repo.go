package monorepo

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/storage/filesystem"

	"github.com/nova-platform/nova/runner"
)

// openRepo opens the repository holding root and returns root's path in
// it ("" for the worktree's top), and what closes it.
//
// The storage keeps its packfiles open: a diff and a listing of the base
// read tens of thousands of objects from the same packs, and go-git
// otherwise opens and parses the pack again for each one (most of the
// selection's time in a repository of 10 000 contracts).
func openRepo(root string) (*git.Repository, string, func(), error) {
	repo, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, "", nil, runner.Errorf(runner.ChangeRangeInvalid, "opening the git repository of %s: %w", root, err)
	}
	closeRepo := func() {}
	if st, ok := repo.Storer.(*filesystem.Storage); ok {
		wt, err := repo.Worktree()
		if err != nil {
			return nil, "", nil, runner.Errorf(runner.ChangeRangeInvalid, "reading the worktree of %s: %w", root, err)
		}
		kept := filesystem.NewStorageWithOptions(st.Filesystem(), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
		if repo, err = git.Open(kept, wt.Filesystem); err != nil {
			return nil, "", nil, runner.Errorf(runner.ChangeRangeInvalid, "opening the git repository of %s: %w", root, err)
		}
		closeRepo = func() { _ = kept.Close() }
	}
	prefix, err := repoPath(repo, root)
	if err != nil {
		closeRepo()
		return nil, "", nil, err
	}
	return repo, prefix, closeRepo, nil
}

// repoPath is dir's slash-separated path inside repo's worktree, "" for
// its top, with links resolved on both sides (a temporary dir reached
// through a link must still match).
func repoPath(repo *git.Repository, dir string) (string, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return "", runner.Errorf(runner.ChangeRangeInvalid, "reading the worktree of %s: %w", dir, err)
	}
	top, err := filepath.EvalSymlinks(wt.Filesystem.Root())
	if err != nil {
		return "", runner.Errorf(runner.ChangeRangeInvalid, "locating the worktree: %w", err)
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return "", runner.Errorf(runner.ChangeRangeInvalid, "locating %s: %w", dir, err)
	}
	rel, err := filepath.Rel(top, abs)
	if err != nil || !filepath.IsLocal(rel) && rel != "." {
		return "", runner.Errorf(runner.ChangeRangeInvalid, "%s is not inside the git worktree %s", dir, top)
	}
	if rel == "." {
		return "", nil
	}
	return filepath.ToSlash(rel), nil
}

// registryPrefix is the registry's path in the repository, "" when it has
// none or lives elsewhere (the registry built into nova).
func registryPrefix(repo *git.Repository, dir string) (string, error) {
	if dir == "" {
		return "", nil
	}
	p, err := repoPath(repo, dir)
	if runner.ReasonOf(err) == runner.ChangeRangeInvalid {
		// A registry outside the repository cannot be changed by it.
		return "", nil
	}
	if p == "" {
		// The repository is the registry: every path is below it.
		return ".", nil
	}
	return p, err
}

// commitOf resolves a revision the user or the forge named.
func commitOf(repo *git.Repository, what, rev string) (*object.Commit, error) {
	if rev == "" {
		return nil, runner.Errorf(runner.ChangeRangeInvalid, "no %s to compare: pass --%s, or run on a pull request event", what, what)
	}
	h, err := repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil {
		return nil, runner.Errorf(runner.ChangeRangeInvalid, "%s %s is not in the repository (a shallow clone needs the history: fetch with depth 0): %w", what, rev, err)
	}
	c, err := repo.CommitObject(*h)
	if err != nil {
		return nil, runner.Errorf(runner.ChangeRangeInvalid, "reading %s commit %s: %w", what, rev, err)
	}
	return c, nil
}

// under reports whether the repository path p lies below prefix ("" is
// the whole repository, "." too), and returns it relative to prefix.
func under(prefix, p string) (string, bool) {
	if prefix == "" || prefix == "." {
		return p, true
	}
	rel, ok := strings.CutPrefix(p, prefix+"/")
	return rel, ok
}

// treeContracts lists the contracts of the base tree below prefix, in
// the order go-git's tree walker visits them. A contract that is a link
// in the tree is listed without an identity: it cannot be followed
// without a checkout. The walker yields each entry's blob id without
// reading the blob, so a contract whose blob is the very file the
// checkout holds at its path (head, from Discover) takes the identity
// read there, unread and unparsed; the others are read from git and
// parsed on every CPU (identifyAll), as in Discover.
func treeContracts(s storer.EncodedObjectStorer, base *object.Tree, prefix string, head []Contract) ([]Contract, error) {
	// go-git's walker ends the walk, with no error, at a tree it cannot
	// read: the storage it reads through remembers why, so a base missing
	// objects is refused rather than listed in part.
	trees := &treeReads{EncodedObjectStorer: s}
	t, err := object.GetTree(trees, base.Hash)
	if err != nil {
		return nil, runner.Errorf(runner.ChangeRangeInvalid, "listing the contracts of the base: %w", err)
	}
	checkedOut := make(map[string]Contract, len(head))
	for _, c := range head {
		if !c.blob.IsZero() {
			checkedOut[c.Path()] = c
		}
	}
	type toParse struct {
		at   int
		rel  string
		data []byte
		err  error
	}
	var (
		out   []Contract
		parse []toParse
	)
	w := object.NewTreeWalker(t, true, nil)
	defer w.Close()
	for {
		name, entry, err := w.Next()
		if errors.Is(err, io.EOF) && trees.err != nil {
			err = trees.err
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, runner.Errorf(runner.ChangeRangeInvalid, "listing the contracts of the base: %w", err)
		}
		if entry.Mode == filemode.Dir || entry.Mode == filemode.Submodule {
			continue
		}
		rel, ok := under(prefix, name)
		if !ok || !IsContractFile(rel) || inRuns(rel) {
			continue
		}
		if c, ok := checkedOut[rel]; ok && c.blob == entry.Hash && entry.Mode != filemode.Symlink {
			// The same bytes at the same path: the same identity.
			out = append(out, c)
			continue
		}
		b, err := object.GetBlob(s, entry.Hash)
		if err != nil {
			return nil, runner.Errorf(runner.ChangeRangeInvalid, "reading %s in the base: %w", rel, err)
		}
		p := toParse{at: len(out), rel: rel}
		switch {
		case entry.Mode == filemode.Symlink:
			p.err = fmt.Errorf("%s is a symbolic link in the base tree", rel)
		case b.Size > maxContractBytes:
			p.err = fmt.Errorf("%s is larger than %d bytes", rel, maxContractBytes)
		default:
			p.data, p.err = blobBytes(b)
		}
		out = append(out, Contract{})
		parse = append(parse, p)
	}
	parsed := identifyAll(len(parse), func(i int) Contract { return identify(parse[i].rel, parse[i].data, parse[i].err) })
	for i, p := range parse {
		out[p.at] = parsed[i]
	}
	return out, nil
}

// treeReads is the storage as the tree walker reads it, keeping the
// first tree it could not read.
type treeReads struct {
	storer.EncodedObjectStorer
	err error
}

func (s *treeReads) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	o, err := s.EncodedObjectStorer.EncodedObject(t, h)
	if err != nil && t == plumbing.TreeObject && s.err == nil {
		s.err = fmt.Errorf("reading tree %s: %w", h, err)
	}
	return o, err
}

func blobBytes(b *object.Blob) ([]byte, error) {
	rd, err := b.Reader()
	if err != nil {
		return nil, err
	}
	defer rd.Close()
	return io.ReadAll(rd)
}

func short(h plumbing.Hash) string { return h.String()[:12] }
