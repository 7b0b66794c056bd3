package local

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// HeadCommit returns the commit checked out in the repository containing
// dir, or "" when dir is not inside a git repository (a tarball checkout).
func HeadCommit(dir string) (string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	head, err := repo.Head()
	if err != nil {
		// A repository without commits has no HEAD to bind a plan to.
		return "", nil
	}
	return head.Hash().String(), nil
}

// HeadAuthors names who wrote the checked-out commit, as a local approver
// might be called: the author's name and the local part of their email.
// Outside a git checkout there is nobody to name.
func HeadAuthors(dir string) ([]string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	head, err := repo.Head()
	if err != nil {
		return nil, nil
	}
	c, err := repo.CommitObject(head.Hash())
	if err != nil {
		return nil, err
	}
	user, _, _ := strings.Cut(c.Author.Email, "@")
	return []string{c.Author.Name, user}, nil
}

// IsAncestor reports whether commit is HEAD of the repository containing
// dir or one of HEAD's ancestors.
func IsAncestor(dir, commit string) (bool, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return false, err
	}
	head, err := repo.Head()
	if err != nil {
		return false, err
	}
	if !plumbing.IsHash(commit) {
		return false, nil
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	h, err := repo.CommitObject(head.Hash())
	if err != nil {
		return false, err
	}
	if h.Hash == c.Hash {
		return true, nil
	}
	return c.IsAncestor(h)
}

// CommitVerifier checks commit signatures with git's own data: no forge.
type CommitVerifier struct {
	// TrustedKeys is an armored OpenPGP public key ring; without it a
	// signed commit can only be reported as signed-unverified.
	TrustedKeys string
}

var _ runner.CommitVerifier = CommitVerifier{}

// VerifyCommit reports what is known about commit's signature.
func (v CommitVerifier) VerifyCommit(_ context.Context, dir, commit string) (runner.CommitSignature, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return runner.CommitUnknown, nil
	}
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		// Not a commit of this checkout (a --commit from elsewhere).
		return runner.CommitUnknown, nil
	}
	if c.PGPSignature == "" {
		return runner.CommitUnsigned, nil
	}
	if v.TrustedKeys == "" || !strings.Contains(c.PGPSignature, "BEGIN PGP SIGNATURE") {
		return runner.CommitUnverified, nil
	}
	if _, err := c.Verify(v.TrustedKeys); err != nil {
		return runner.CommitInvalid, nil
	}
	return runner.CommitVerified, nil
}

// History answers runner.CommitHistory from the git repository containing
// Dir: what a merged run checked out, and the history fetched with it.
type History struct{ Dir string }

var _ runner.CommitHistory = History{}

// Precedes implements runner.CommitHistory. A commit the repository does
// not hold, or a history cut short before the answer (a shallow clone), is
// runner.ErrCommitUnknown: an unknown order is never taken for "after".
func (h History) Precedes(a, b string) (bool, error) {
	repo, err := git.PlainOpenWithOptions(h.Dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return false, err
	}
	commit := func(id string) (*object.Commit, error) {
		if !plumbing.IsHash(id) {
			return nil, fmt.Errorf("%w: %q is not a commit id", runner.ErrCommitUnknown, id)
		}
		c, err := repo.CommitObject(plumbing.NewHash(id))
		if errors.Is(err, plumbing.ErrObjectNotFound) {
			return nil, fmt.Errorf("%w: %s", runner.ErrCommitUnknown, id)
		}
		return c, err
	}
	ca, err := commit(a)
	if err != nil {
		return false, err
	}
	cb, err := commit(b)
	if err != nil {
		return false, err
	}
	if ca.Hash == cb.Hash {
		return false, nil
	}
	ok, err := ca.IsAncestor(cb)
	if errors.Is(err, plumbing.ErrObjectNotFound) {
		return false, fmt.Errorf("%w: the history of %s is not all in the checkout", runner.ErrCommitUnknown, b)
	}
	return ok, err
}
