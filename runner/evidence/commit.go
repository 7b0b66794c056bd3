package evidence

import (
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// eventCommit is one event written as a signed commit on top of a head,
// with what the store learns once it is pushed.
type eventCommit struct {
	hash       plumbing.Hash
	objs       *gitrepo.Objects
	tree       plumbing.Hash // contracts/<dir> in the commit
	parentTree plumbing.Hash // contracts/<dir> in its parent
	event      runner.Event  // as written: with the seq and link of its place
	sum        string        // sha256 of the event file
}

// writeEventCommit writes the event's file and signature on top of parent
// as one signed commit, reading the parent through r. Only the three trees
// on the event's path are rewritten, so the cost does not grow with the
// repo.
func writeEventCommit(r *gitrepo.Reader, parent plumbing.Hash, dir, name string, event, sig []byte, msg string, cs *signing.CommitSigner, when time.Time) (*eventCommit, error) {
	ec := &eventCommit{objs: gitrepo.NewObjects()}
	var root, contracts, contract []gitrepo.Entry
	if !parent.IsZero() {
		c, err := r.Commit(parent)
		if err == nil {
			root, err = subtree(r, c.TreeHash)
		}
		if err == nil {
			contracts, err = subtree(r, dirHash(root, contractsDir))
		}
		if err == nil {
			contract, err = subtree(r, dirHash(contracts, dir))
		}
		if err != nil {
			return nil, err
		}
	}
	file := func(name string, b []byte) gitrepo.Entry {
		return gitrepo.Entry{Name: name, Mode: filemode.Regular, Hash: ec.objs.Put(plumbing.BlobObject, b)}
	}
	tree := func(name string, entries []gitrepo.Entry) gitrepo.Entry {
		return gitrepo.Entry{Name: name, Mode: filemode.Dir, Hash: ec.objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(entries))}
	}
	contract = gitrepo.Upsert(gitrepo.Upsert(contract, file(name, event)), file(sigPath(name), sig))
	dirEntry := tree(dir, contract)
	ec.tree = dirEntry.Hash
	root = gitrepo.Upsert(root, tree(contractsDir, gitrepo.Upsert(contracts, dirEntry)))

	who := cs.Identity(when)
	c := &object.Commit{Author: who, Committer: who, Message: msg, TreeHash: ec.objs.Put(plumbing.TreeObject, gitrepo.EncodeTree(root))}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if err := cs.SignCommit(c); err != nil {
		return nil, err
	}
	var err error
	ec.hash, err = ec.objs.PutCommit(c)
	return ec, err
}

// subtree returns a copy of tree h's entries: the reader's are shared.
func subtree(r *gitrepo.Reader, h plumbing.Hash) ([]gitrepo.Entry, error) {
	t, err := r.Tree(h)
	return slices.Clone(t), err
}

// dirHash is the tree of directory name in entries, zero when there is
// none.
func dirHash(entries []gitrepo.Entry, name string) plumbing.Hash {
	if i := gitrepo.Find(entries, name); i >= 0 && entries[i].Mode == filemode.Dir {
		return entries[i].Hash
	}
	return plumbing.ZeroHash
}
