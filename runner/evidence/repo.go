package evidence

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/nova-platform/nova/runner/evidence/signing"
)

// errConflict means the remote branch moved since we last read it: the
// caller re-reads the head, re-chains and tries again.
var errConflict = errors.New("evidence repo head moved (non-fast-forward)")

// target is where a Store writes: a remote reached through a git transport
// from a local clone (cloneTarget), or a bare repo on this machine written
// in place (bareTarget). Both offer compare-and-swap on the branch, which
// is all the chain needs to stay linear under concurrent writers.
type target interface {
	// objects is where commits are built and trees and blobs read.
	objects() storer.EncodedObjectStorer
	// head returns the branch's current commit (zero when it has none),
	// making its objects readable through objects().
	head(ctx context.Context) (plumbing.Hash, error)
	// push moves the branch from old to new, sending objs if needed, and
	// returns errConflict (wrapped) when the branch is no longer at old.
	push(ctx context.Context, old, new plumbing.Hash, objs []plumbing.Hash) error
	// release closes the files the target keeps open.
	release() error
}

// writeEventCommit writes the event's file and signature on top of parent
// as one signed commit and returns it with every object it created (what a
// push must send). Only the three trees on the event's path are rewritten,
// so the cost does not grow with the repo.
func writeEventCommit(st storer.EncodedObjectStorer, parent plumbing.Hash, dir, name string, event, sig []byte, msg string, cs *signing.CommitSigner, when time.Time) (plumbing.Hash, []plumbing.Hash, error) {
	var objs []plumbing.Hash
	put := func(o interface {
		Encode(plumbing.EncodedObject) error
	}) (plumbing.Hash, error) {
		eo := st.NewEncodedObject()
		if err := o.Encode(eo); err != nil {
			return plumbing.ZeroHash, err
		}
		h, err := st.SetEncodedObject(eo)
		objs = append(objs, h)
		return h, err
	}
	jsonBlob, err := writeBlob(st, event)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	sigBlob, err := writeBlob(st, sig)
	if err != nil {
		return plumbing.ZeroHash, nil, err
	}
	objs = append(objs, jsonBlob, sigBlob)

	var root, contracts, contract []object.TreeEntry
	if !parent.IsZero() {
		pc, err := object.GetCommit(st, parent)
		if err != nil {
			return plumbing.ZeroHash, nil, fmt.Errorf("reading head commit %s: %w", parent, err)
		}
		if root, err = treeEntries(st, pc.TreeHash); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if contracts, err = subtree(st, root, contractsDir); err != nil {
			return plumbing.ZeroHash, nil, err
		}
		if contract, err = subtree(st, contracts, dir); err != nil {
			return plumbing.ZeroHash, nil, err
		}
	}
	contract = upsert(contract, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: jsonBlob})
	contract = upsert(contract, object.TreeEntry{Name: sigPath(name), Mode: filemode.Regular, Hash: sigBlob})
	h, err := put(&object.Tree{Entries: contract})
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("writing tree: %w", err)
	}
	contracts = upsert(contracts, object.TreeEntry{Name: dir, Mode: filemode.Dir, Hash: h})
	if h, err = put(&object.Tree{Entries: contracts}); err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("writing tree: %w", err)
	}
	root = upsert(root, object.TreeEntry{Name: contractsDir, Mode: filemode.Dir, Hash: h})
	rootHash, err := put(&object.Tree{Entries: root})
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("writing tree: %w", err)
	}

	who := cs.Identity(when)
	c := &object.Commit{Author: who, Committer: who, Message: msg, TreeHash: rootHash}
	if !parent.IsZero() {
		c.ParentHashes = []plumbing.Hash{parent}
	}
	if err := cs.SignCommit(c); err != nil {
		return plumbing.ZeroHash, nil, err
	}
	ch, err := put(c)
	if err != nil {
		return plumbing.ZeroHash, nil, fmt.Errorf("writing commit: %w", err)
	}
	return ch, objs, nil
}

func writeBlob(st storer.EncodedObjectStorer, b []byte) (plumbing.Hash, error) {
	eo := st.NewEncodedObject()
	eo.SetType(plumbing.BlobObject)
	w, err := eo.Writer()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if _, err := w.Write(b); err != nil {
		return plumbing.ZeroHash, err
	}
	if err := w.Close(); err != nil {
		return plumbing.ZeroHash, err
	}
	h, err := st.SetEncodedObject(eo)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("writing blob: %w", err)
	}
	return h, nil
}

func treeEntries(st storer.EncodedObjectStorer, h plumbing.Hash) ([]object.TreeEntry, error) {
	t, err := object.GetTree(st, h)
	if err != nil {
		return nil, fmt.Errorf("reading tree %s: %w", h, err)
	}
	return append([]object.TreeEntry(nil), t.Entries...), nil
}

// subtree returns the entries of the directory name in entries (none when
// it does not exist yet).
func subtree(st storer.EncodedObjectStorer, entries []object.TreeEntry, name string) ([]object.TreeEntry, error) {
	for _, e := range entries {
		if e.Name == name && e.Mode == filemode.Dir {
			return treeEntries(st, e.Hash)
		}
	}
	return nil, nil
}

// upsert puts e into entries in git's tree order (a directory sorts as if
// its name ended in "/"); git rejects trees in any other order.
func upsert(entries []object.TreeEntry, e object.TreeEntry) []object.TreeEntry {
	for i := range entries {
		if entries[i].Name == e.Name {
			entries[i] = e
			return entries
		}
	}
	entries = append(entries, e)
	sort.Slice(entries, func(i, j int) bool { return treeKey(entries[i]) < treeKey(entries[j]) })
	return entries
}

func treeKey(e object.TreeEntry) string {
	if e.Mode == filemode.Dir {
		return e.Name + "/"
	}
	return e.Name
}

// redactURL drops any credentials from a URL before it is shown: tokens
// never appear in errors or logs.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil || u.User == nil {
		if i := strings.LastIndex(raw, "@"); i >= 0 && strings.Contains(raw[:i], "://") {
			return raw[:strings.Index(raw, "://")+3] + "***@" + raw[i+1:]
		}
		return raw
	}
	u.User = url.User("***")
	return u.String()
}

// isLocalPath reports whether repo names a directory rather than a URL.
func isLocalPath(repo string) bool {
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

// isBareRepo reports whether path is a bare git repository.
func isBareRepo(path string) bool {
	for _, name := range []string{"HEAD", "objects", "refs"} {
		if _, err := os.Stat(filepath.Join(path, name)); err != nil {
			return false
		}
	}
	return true
}

// initBareIfMissing creates the local-mode evidence repo on first use.
func initBareIfMissing(path string, branch plumbing.ReferenceName) error {
	if isBareRepo(path) {
		return nil
	}
	if err := os.MkdirAll(path, 0o755); err != nil {
		return fmt.Errorf("creating evidence repo %s: %w", path, err)
	}
	_, err := git.PlainInitWithOptions(path, &git.PlainInitOptions{Bare: true, InitOptions: git.InitOptions{DefaultBranch: branch}})
	if err != nil && !errors.Is(err, git.ErrRepositoryAlreadyExists) {
		return fmt.Errorf("creating evidence repo %s: %w", path, err)
	}
	return nil
}
