package evidence

import (
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// eventCommits is a chain of signed commits, one per event, built on a
// head and pushed together with one ref update: the layout stays one
// commit per event, while the objects are packed and synced, the branch
// swapped and the head witnessed once per batch. A batch may carry many
// contracts' events (Drain delivers a whole outbox so): each contract's
// commits follow the previous contract's, and since a batch writes each
// contract directory once and touches no other, a contract's directory
// at the batch's parent is its directory at the commit its events build
// on.
type eventCommits struct {
	objs *gitrepo.Objects
	// head is the last commit (parent while the batch is empty), parent
	// the commit the batch was built on.
	head, parent plumbing.Hash
	// commits are the batch's commits, oldest first.
	commits []plumbing.Hash
	r       *gitrepo.Reader
	// The trees on the event's path at head, carried from one commit to
	// the next rather than read back: root the root's entries, contracts
	// lists the shards, shard the contract directories in the current
	// contract's, contract its buckets, bucket the files of the one named
	// bucketName (read when an event first needs it).
	root, contracts, shard, contract, bucket []gitrepo.Entry
	shardName, bucketName                    string
	rootTree                                 plumbing.Hash // the root at head, once the batch wrote one
	// cur is the contract being written, parts every contract of the
	// batch in the order they were written.
	cur   *contractCommits
	parts []*contractCommits
}

// contractCommits is one contract's part of a batch.
type contractCommits struct {
	dir        string
	tree       plumbing.Hash  // contracts/<shard>/<dir> at the batch's head
	parentTree plumbing.Hash  // contracts/<shard>/<dir> at its parent
	events     []runner.Event // as written: with the seq and link of their place
	sum        string         // sha256 of the last event file
	// done are the ids of the pending events the batch delivers (or found
	// delivered); refused is why an authorization was not written.
	done    []string
	refused error
	// of is the outbox the part delivers.
	of *pendingContract
	// checks are the checks of the event files the part wrote, known
	// without reading them back (prepareContract).
	checks []ownCheck
}

// ownCheck is the check of an event file the store wrote, by its key in
// chainState.checks.
type ownCheck struct {
	key   [2]plumbing.Hash
	check chain.Check
}

// newEventCommits starts a batch on parent, reading parent's trees
// through r.
func newEventCommits(r *gitrepo.Reader, parent plumbing.Hash) (*eventCommits, error) {
	b := &eventCommits{objs: gitrepo.NewObjects(), parent: parent, head: parent, r: r}
	if parent.IsZero() {
		return b, nil
	}
	c, err := r.Commit(parent)
	if err == nil {
		b.root, err = b.subtree(c.TreeHash)
	}
	if err == nil {
		b.contracts, err = b.subtree(gitrepo.FindDir(b.root, chain.ContractsDir))
	}
	return b, err
}

// start makes contract directory dir the one the next events go to.
func (b *eventCommits) start(dir string) (*contractCommits, error) {
	if name := chain.ShardOf(dir); b.cur == nil || name != b.shardName {
		shard, err := b.subtree(gitrepo.FindDir(b.contracts, name))
		if err != nil {
			return nil, err
		}
		b.shard, b.shardName = shard, name
	}
	p := &contractCommits{dir: dir, parentTree: gitrepo.FindDir(b.shard, dir)}
	p.tree = p.parentTree
	contract, err := b.subtree(p.parentTree)
	if err != nil {
		return nil, err
	}
	b.contract, b.bucket, b.bucketName = contract, nil, ""
	b.cur = p
	b.parts = append(b.parts, p)
	return p, nil
}

// add writes event seq of type typ and its signature on top of the
// batch's head as one signed commit. Only the five trees on the event's
// path are rewritten, none of which holds more than a hundred of the
// contract's events or a 256th of the repo's contracts, so the cost does
// not grow with the contract's history and barely with the repo.
//
// It returns the key of the event's check: its file's blob and its
// signature's.
func (b *eventCommits) add(seq int64, typ string, event, sig []byte, msg string, cs *signing.CommitSigner, when time.Time) ([2]plumbing.Hash, error) {
	file := func(name string, content []byte) gitrepo.Entry {
		return gitrepo.Entry{Name: name, Mode: filemode.Regular, Hash: b.objs.Put(plumbing.BlobObject, content)}
	}
	// Each tree as the next version of the one the head has: the pack
	// keeps a batch's versions of a directory as deltas of each other.
	tree := func(name string, entries []gitrepo.Entry, prev plumbing.Hash) gitrepo.Entry {
		return gitrepo.Entry{Name: name, Mode: filemode.Dir, Hash: b.objs.PutNext(plumbing.TreeObject, gitrepo.EncodeTree(entries), prev)}
	}
	if name := chain.BucketName(seq); name != b.bucketName {
		b.bucket, b.bucketName = nil, name
		if h := gitrepo.FindDir(b.contract, name); !h.IsZero() {
			var err error
			if b.bucket, err = b.subtree(h); err != nil {
				return [2]plumbing.Hash{}, err
			}
		}
	}
	name := chain.EventFileName(seq, typ, "json")
	eventFile, sigFile := file(name, event), file(chain.SigPath(name), sig)
	key := [2]plumbing.Hash{eventFile.Hash, sigFile.Hash}
	b.bucket = gitrepo.Upsert(gitrepo.Upsert(b.bucket, eventFile), sigFile)
	b.contract = gitrepo.Upsert(b.contract, tree(b.bucketName, b.bucket, gitrepo.FindDir(b.contract, b.bucketName)))
	dirEntry := tree(b.cur.dir, b.contract, b.cur.tree)
	b.shard = gitrepo.Upsert(b.shard, dirEntry)
	b.contracts = gitrepo.Upsert(b.contracts, tree(b.shardName, b.shard, gitrepo.FindDir(b.contracts, b.shardName)))
	b.root = gitrepo.Upsert(b.root, tree(chain.ContractsDir, b.contracts, gitrepo.FindDir(b.root, chain.ContractsDir)))
	b.rootTree = b.objs.PutNext(plumbing.TreeObject, gitrepo.EncodeTree(b.root), b.rootTree)

	who := cs.Identity(when)
	c := &object.Commit{Author: who, Committer: who, Message: msg, TreeHash: b.rootTree}
	if !b.head.IsZero() {
		c.ParentHashes = []plumbing.Hash{b.head}
	}
	if err := cs.SignCommit(c); err != nil {
		return key, err
	}
	h, err := b.objs.PutCommit(c)
	if err != nil {
		return key, err
	}
	b.head, b.cur.tree = h, dirEntry.Hash
	b.commits = append(b.commits, h)
	return key, nil
}

// subtree returns a copy of tree h's entries: the reader's are shared. A
// tree the batch wrote itself (a shard directory an earlier contract of
// the batch changed) is not in the repo yet, and is read from the batch.
func (b *eventCommits) subtree(h plumbing.Hash) ([]gitrepo.Entry, error) {
	if raw, ok := b.objs.Raw(h); ok {
		return gitrepo.ParseTree(raw)
	}
	t, err := b.r.Tree(h)
	return slices.Clone(t), err
}
