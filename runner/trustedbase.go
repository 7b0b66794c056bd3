package runner

import (
	"context"
	"fmt"
	"sync"
)

// TrustedBase reads files of the trusted base as the forge holds it: the
// repository's default branch, or the pull request's base branch when the
// forge reports that branch protected, each at the commit the forge says
// the branch is at now. A pull request may be opened against any branch,
// one its author controls included; reading the approver config from
// whatever the pull request names as its base would let that author pick
// who approves.
type TrustedBase interface {
	// TrustedFile returns the file at path (relative to the repository's
	// root) and where it was read.
	TrustedFile(ctx context.Context, path string) (data []byte, where BaseCommit, err error)
}

// BaseCommit is where a file of the trusted base was read: the branch and
// the commit it was at. The branch matters beyond messages: the keyless
// signers' identities default to its ref.
type BaseCommit struct {
	// Branch is the branch's name (main), not its ref.
	Branch string
	Commit string
}

// String names it for messages: "main at 1a2b3c4d5e6f".
func (b BaseCommit) String() string {
	return b.Branch + " at " + ShortDigest(b.Commit)
}

// ForgeApprovers reads the approver config from the forge's trusted base,
// once per process.
type ForgeApprovers struct {
	Base TrustedBase
	// Path is the config's path from the repository's root.
	Path string

	once sync.Once
	cfg  *ApproverConfig
	err  error
}

var _ ApproversReader = (*ForgeApprovers)(nil)

// Approvers implements ApproversReader.
func (f *ForgeApprovers) Approvers(ctx context.Context) (*ApproverConfig, error) {
	f.once.Do(func() {
		data, where, err := f.Base.TrustedFile(ctx, f.Path)
		if err != nil {
			f.err = Errorf(ApproversInvalid, "reading %s from the trusted base: %w", f.Path, err)
			return
		}
		if f.cfg, err = ParseApprovers(data); err != nil {
			f.err = fmt.Errorf("%s (read from %s): %w", f.Path, where, err)
		}
	})
	return f.cfg, f.err
}

// BranchGuard tells whether the forge refuses force-pushes to a branch,
// and when it does not, why; a branch that does not exist yet holds
// nothing to roll back (refused, with why saying so).
type BranchGuard interface {
	ForcePushRefused(ctx context.Context, owner, repo, branch string) (refused bool, why string, err error)
}
