package local

import (
	"context"
	"errors"
	"io/fs"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// TrustedContract reads a contract the checkout at Dir no longer has from
// the trusted base (Base, else the default branch), as TrustedApprovers
// reads the approver config: a pull request that deletes a contract asks
// for the destroy of what the base declared, and the base's copy is the
// one nobody under review wrote.
type TrustedContract struct {
	Dir  string
	Base string
	// Path is the contract relative to Dir.
	Path string
	// Limit bounds the file's size.
	Limit int64
}

// Read returns the contract's content at the trusted base; an error
// wrapping fs.ErrNotExist when the base has none either.
func (t TrustedContract) Read(context.Context) ([]byte, error) {
	repo, err := git.PlainOpenWithOptions(t.Dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return nil, runner.Errorf(runner.ContractNotFound, "no contract at %s, and no git checkout to read it from the trusted base: %w", t.Path, errors.Join(err, fs.ErrNotExist))
	}
	path, err := repoPath(repo, t.Dir, t.Path)
	if err != nil {
		return nil, runner.Errorf(runner.ContractUnreadable, "%w", err)
	}
	commit, name, err := TrustedApprovers{Dir: t.Dir, Base: t.Base}.base(repo)
	if err != nil {
		return nil, runner.Errorf(runner.ContractNotFound, "no contract at %s, and no trusted base to read it from: %w", t.Path, err)
	}
	f, err := commit.File(path)
	if errors.Is(err, object.ErrFileNotFound) {
		return nil, runner.Errorf(runner.ContractNotFound, "no contract at %s, in the checkout or the trusted base %s (%s): %w", path, name, commit.Hash.String()[:12], fs.ErrNotExist)
	}
	if err != nil {
		return nil, runner.Errorf(runner.ContractUnreadable, "reading %s at %s: %w", path, name, err)
	}
	if f.Size > t.Limit {
		return nil, runner.Errorf(runner.ContractTooLarge, "%s at %s is larger than %d bytes", path, name, t.Limit)
	}
	data, err := f.Contents()
	if err != nil {
		return nil, runner.Errorf(runner.ContractUnreadable, "reading %s at %s: %w", path, name, err)
	}
	return []byte(data), nil
}
