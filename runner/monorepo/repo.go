package monorepo

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// openRepo opens the repository holding root and returns root's path in
// it ("" for the worktree's top).
func openRepo(root string) (*git.Repository, string, error) {
	repo, err := git.PlainOpenWithOptions(root, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, "", runner.Errorf(runner.ChangeRangeInvalid, "opening the git repository of %s: %w", root, err)
	}
	prefix, err := repoPath(repo, root)
	if err != nil {
		return nil, "", err
	}
	return repo, prefix, nil
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

// treeContracts lists the contracts of a commit's tree below prefix. A
// contract that is a link in the tree is listed without an identity: it
// cannot be followed without a checkout.
func treeContracts(t *object.Tree, prefix string) ([]Contract, error) {
	var out []Contract
	err := t.Files().ForEach(func(f *object.File) error {
		rel, ok := under(prefix, f.Name)
		if !ok || !IsContractFile(rel) || inRuns(rel) {
			return nil
		}
		switch {
		case f.Mode == filemode.Symlink:
			out = append(out, identify(rel, nil, fmt.Errorf("%s is a symbolic link in the base tree", rel)))
		case f.Size > maxContractBytes:
			out = append(out, identify(rel, nil, fmt.Errorf("%s is larger than %d bytes", rel, maxContractBytes)))
		default:
			data, err := f.Contents()
			out = append(out, identify(rel, []byte(data), err))
		}
		return nil
	})
	if err != nil {
		return nil, runner.Errorf(runner.ChangeRangeInvalid, "listing the contracts of the base: %w", err)
	}
	return out, nil
}

func short(h plumbing.Hash) string { return h.String()[:12] }
