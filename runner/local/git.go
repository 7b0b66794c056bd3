package local

import (
	"errors"

	"github.com/go-git/go-git/v5"
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
