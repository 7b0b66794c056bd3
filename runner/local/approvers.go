package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
)

// maxApproversBytes bounds the approver config: a list of names.
const maxApproversBytes = 256 << 10

// TrustedApprovers reads .nova/approvers.yml of the checkout at Dir from the
// trusted base: the commit Base names (a pull request's base commit),
// else the repository's default branch. The working tree's copy is never
// read when Dir is a git checkout, because that copy belongs to the change
// under review. Outside a git checkout (a plain directory in local mode)
// there is no change under review, and the file on disk is the config.
type TrustedApprovers struct {
	Dir  string
	Base string
	// Path is the config relative to Dir (default runner.ApproversFile).
	Path string
}

var _ runner.ApproversReader = TrustedApprovers{}

// Approvers implements runner.ApproversReader.
func (t TrustedApprovers) Approvers(ctx context.Context) (*runner.ApproverConfig, error) {
	file := t.Path
	if file == "" {
		file = runner.ApproversFile
	}
	data, _, err := t.trustedFile(file, maxApproversBytes, runner.ApproversInvalid, "approvals are only read from a config already merged there")
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return CheckoutApprovers{Dir: t.Dir, Path: t.Path}.Approvers(ctx)
	}
	if err != nil {
		return nil, err
	}
	return runner.ParseApprovers(data)
}

// TrustedFile reads file (relative to Dir) from the trusted base, as
// Approvers reads the approver config, failing with reason; outside a git
// checkout (local mode, no change under review) the file on disk is read.
// It also names the trusted base's branch ref when it is one
// (refs/heads/main), "" when it is a commit.
func (t TrustedApprovers) TrustedFile(file string, limit int64, reason runner.Reason) (data []byte, branch string, err error) {
	data, branch, err = t.trustedFile(file, limit, reason, "it is only read from a copy already merged there")
	if errors.Is(err, git.ErrRepositoryNotExists) {
		data, err = checkout.ReadFile(t.Dir, file, limit)
		if err != nil {
			return nil, "", runner.Errorf(reason, "reading %s: %w", file, err)
		}
		return data, "", nil
	}
	return data, branch, err
}

// trustedFile reads file from the trusted base commit; an error wrapping
// git.ErrRepositoryNotExists when Dir is not a git checkout.
func (t TrustedApprovers) trustedFile(file string, limit int64, reason runner.Reason, why string) ([]byte, string, error) {
	repo, err := git.PlainOpenWithOptions(t.Dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if errors.Is(err, git.ErrRepositoryNotExists) {
		return nil, "", err
	}
	if err != nil {
		return nil, "", runner.Errorf(reason, "opening the git checkout of %s: %w", t.Dir, err)
	}
	path, err := repoPath(repo, t.Dir, file)
	if err != nil {
		return nil, "", runner.Errorf(reason, "%w", err)
	}
	commit, name, err := t.base(repo)
	if err != nil {
		return nil, "", runner.Errorf(reason, "%w", err)
	}
	f, err := commit.File(path)
	if errors.Is(err, object.ErrFileNotFound) {
		return nil, "", runner.Errorf(reason, "%s is not in the trusted base %s (%s): %s (%w)", path, name, commit.Hash.String()[:12], why, fs.ErrNotExist)
	}
	if err != nil {
		return nil, "", runner.Errorf(reason, "reading %s at %s: %w", path, name, err)
	}
	if f.Size > limit {
		return nil, "", runner.Errorf(reason, "%s at %s is larger than %d bytes", path, name, limit)
	}
	data, err := f.Contents()
	if err != nil {
		return nil, "", runner.Errorf(reason, "reading %s at %s: %w", path, name, err)
	}
	branch := ""
	if strings.HasPrefix(name, "refs/heads/") {
		branch = name
	}
	return []byte(data), branch, nil
}

// CheckoutApprovers reads the approver config as the checkout at Dir holds
// it: the change's own copy, which nothing trusts, read only to check it
// before it is merged (runner.CheckApprovers). A checkout without one
// answers an error wrapping fs.ErrNotExist.
type CheckoutApprovers struct {
	Dir string
	// Path is the config relative to Dir (default runner.ApproversFile).
	Path string
}

var _ runner.ApproversReader = CheckoutApprovers{}

// Approvers implements runner.ApproversReader.
func (c CheckoutApprovers) Approvers(context.Context) (*runner.ApproverConfig, error) {
	file := c.Path
	if file == "" {
		file = runner.ApproversFile
	}
	data, err := checkout.ReadFile(c.Dir, file, maxApproversBytes)
	if err != nil {
		return nil, runner.Errorf(runner.ApproversInvalid, "reading %s: %w", file, err)
	}
	return runner.ParseApprovers(data)
}

// RepoPath is file, relative to dir, as a path from the root of the git
// repository dir is in: how the forge names it.
func RepoPath(dir, file string) (string, error) {
	repo, err := git.PlainOpenWithOptions(dir, &git.PlainOpenOptions{DetectDotGit: true, EnableDotGitCommonDir: true})
	if err != nil {
		return "", fmt.Errorf("opening the git checkout of %s: %w", dir, err)
	}
	return repoPath(repo, dir, file)
}

func repoPath(repo *git.Repository, dir, file string) (string, error) {
	wt, err := repo.Worktree()
	if err != nil {
		return "", fmt.Errorf("reading the worktree of %s: %w", dir, err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(wt.Filesystem.Root(), abs)
	if err != nil {
		return "", err
	}
	return filepath.ToSlash(filepath.Join(rel, file)), nil
}

// base resolves the trusted base commit: Base when given, else the default
// branch as the clone knows it (origin's HEAD, then main, then master).
func (t TrustedApprovers) base(repo *git.Repository) (*object.Commit, string, error) {
	candidates := []string{t.Base}
	if t.Base == "" {
		candidates = []string{"refs/remotes/origin/HEAD", "refs/heads/main", "refs/heads/master"}
	}
	for _, rev := range candidates {
		h, err := repo.ResolveRevision(plumbing.Revision(rev))
		if err != nil {
			continue
		}
		c, err := repo.CommitObject(*h)
		if err != nil {
			return nil, "", runner.Errorf(runner.ApproversInvalid, "reading the trusted base %s: %w", rev, err)
		}
		return c, rev, nil
	}
	if t.Base != "" {
		return nil, "", runner.Errorf(runner.ApproversInvalid, "the trusted base %q is not a commit of this checkout (fetch it first)", t.Base)
	}
	return nil, "", runner.Errorf(runner.ApproversInvalid, "no default branch (origin/HEAD, main, master) to read %s from; pass the base commit (%w)", runner.ApproversFile, fs.ErrNotExist)
}
