package chain

import (
	"context"
	"errors"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// DefaultBranch is the evidence repo's branch unless WithBranch says
// otherwise.
const DefaultBranch = "main"

// Repo is an evidence repo opened for reading; Close releases the pack
// files it keeps open.
type Repo struct {
	head  plumbing.Hash
	st    storer.EncodedObjectStorer
	close func() error
	// fork opens another independent read handle, so Verify can read with
	// several goroutines.
	fork func() (storer.EncodedObjectStorer, func() error, error)
}

// Head is the commit of the branch that was opened, "" for a repo in which
// nothing was recorded yet.
func (r *Repo) Head() string {
	if r.head.IsZero() {
		return ""
	}
	return r.head.String()
}

// HeadHash is the commit of the branch that was opened, zero for a repo
// in which nothing was recorded yet.
func (r *Repo) HeadHash() plumbing.Hash { return r.head }

// NewReader reads the repo's objects; one goroutine at a time.
func (r *Repo) NewReader() *gitrepo.Reader { return gitrepo.NewReader(r.st) }

// Close releases the repo's open files.
func (r *Repo) Close() error {
	if r.close == nil {
		return nil
	}
	return r.close()
}

// OpenRepo opens an evidence repo for reading: a local path in place, a
// URL by cloning it into memory with creds (or the credentials in the URL).
func OpenRepo(ctx context.Context, repo, branch string, creds Credentials) (*Repo, error) {
	if branch == "" {
		branch = DefaultBranch
	}
	ref := plumbing.NewBranchReferenceName(branch)
	if IsLocalPath(repo) {
		path := TrimFileScheme(repo)
		r, closeRepo, err := gitrepo.OpenLocal(path)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "opening evidence repo %s: %w", repo, err)
		}
		head, err := gitrepo.BranchHead(r, ref)
		closeRepo()
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "evidence repo %s: %w", RedactURL(repo), err)
		}
		fork := func() (storer.EncodedObjectStorer, func() error, error) { return gitrepo.OpenObjects(path) }
		st, closeFn, err := fork()
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "opening evidence repo %s: %w", repo, err)
		}
		return &Repo{head: head, st: st, close: closeFn, fork: fork}, nil
	}
	url, creds := SplitCredentials(repo, creds)
	r, err := git.CloneContext(ctx, memory.NewStorage(), nil, &git.CloneOptions{
		URL: url, Auth: creds.Auth(), ReferenceName: ref, SingleBranch: true, NoCheckout: true, Tags: git.NoTags,
	})
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		r, err = git.Init(memory.NewStorage(), nil)
	}
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "cloning evidence repo %s: %w", RedactURL(repo), err)
	}
	head, err := gitrepo.BranchHead(r, ref)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "evidence repo %s: %w", RedactURL(repo), err)
	}
	// Reads of an in-memory repo are safe from several goroutines.
	shared := func() (storer.EncodedObjectStorer, func() error, error) {
		return r.Storer, func() error { return nil }, nil
	}
	return &Repo{head: head, st: r.Storer, fork: shared}, nil
}

// IsLocalPath reports whether repo names a directory rather than a URL.
func IsLocalPath(repo string) bool {
	if strings.HasPrefix(repo, "file://") {
		return true
	}
	if strings.Contains(repo, "://") {
		return false
	}
	// scp-like git@host:path is remote; an absolute or ./relative path is not.
	if i := strings.Index(repo, ":"); i > 0 && !strings.ContainsAny(repo[:i], "/\\") {
		return false
	}
	return true
}

func TrimFileScheme(p string) string { return strings.TrimPrefix(p, "file://") }

// readers opens n read handles (the repo's own first), so the verifier's
// workers read in parallel; closeAll releases the extra ones. A repo that
// cannot be opened again gets one.
func (r *Repo) readers(n int) (rs []*gitrepo.Reader, closeAll func(), err error) {
	var closers []func() error
	closeAll = func() {
		for _, c := range closers {
			c()
		}
	}
	rs = []*gitrepo.Reader{gitrepo.NewReader(r.st)}
	for i := 1; i < n && r.fork != nil; i++ {
		st, closeFn, err := r.fork()
		if err != nil {
			closeAll()
			return nil, nil, runner.Errorf(runner.EvidenceRepoUnavailable, "opening the evidence repo again: %w", err)
		}
		closers = append(closers, closeFn)
		rs = append(rs, gitrepo.NewReader(st))
	}
	return rs, closeAll, nil
}
