package gitrepo

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// staleLockAge is how old a ref lock must be before it is reported as
// left behind by a crash rather than held by a live writer.
const staleLockAge = 10 * time.Minute

// bareTarget writes a bare repo on this machine in place: objects straight
// into its object directory, the branch moved with git's own lock protocol
// (create <ref>.lock exclusively, check the old value, rename), so it is
// safe against other nova writers and against git itself. Local mode's
// repo is written this way: spawning git-receive-pack and a local clone
// for every event would cost more than everything else together.
type bareTarget struct {
	path   string
	branch plumbing.ReferenceName
	sync   func(paths ...string) error
	logf   func(format string, args ...any)
	objs   *overlay
	close  func() error
	// merging lets one push at a time of this process merge packs.
	merging sync.Mutex
}

// OpenBare opens the bare repo at path for writing branch in place. sync
// makes files and directories durable, all at once so the file system can
// commit them together; every path a push writes goes through it before
// the push returns. logf hears of packs that could not be merged: the push
// that wrote them succeeded, and a later one merges them.
func OpenBare(path string, branch plumbing.ReferenceName, sync func(paths ...string) error, logf func(format string, args ...any)) (Remote, error) {
	objs, closeFn, err := openObjects(path)
	if err != nil {
		return nil, fmt.Errorf("opening evidence repo %s: %w", path, err)
	}
	return &bareTarget{path: path, branch: branch, sync: sync, logf: logf, objs: objs, close: closeFn}, nil
}

func (b *bareTarget) packDir() string { return filepath.Join(b.path, "objects", "pack") }

func (b *bareTarget) Close() error { return b.close() }

func (b *bareTarget) Objects() storer.EncodedObjectStorer { return b.objs }

func (b *bareTarget) Fetch(context.Context, func(plumbing.Hash) bool) (Fetched, error) {
	head, err := readRef(b.path, b.branch)
	return Fetched{Head: head}, err
}

// Install catches up with other writers: the packs they added are
// opened and those merged away (or removed by a `git gc`) let go of.
func (b *bareTarget) Install(Fetched) error {
	b.objs.reindex()
	return nil
}

// Keep makes a batch this process pushed readable: its pack is opened.
func (b *bareTarget) Keep(*Objects) { b.objs.reindex() }

// Push writes the objects and moves the branch.
//
// Both are made durable before Push returns, because the caller then
// forgets its own copy (Nova marks the event delivered in its outbox):
// after a power cut the commit could otherwise be missing from the repo
// with no copy left, or the branch could point at objects that never
// reached the disk. The objects are synced before the branch moves, so
// the branch never names a commit that might be lost.
func (b *bareTarget) Push(_ context.Context, old, new plumbing.Hash, objs *Objects) error {
	if err := b.writeObjects(objs); err != nil {
		return err
	}
	refPath := filepath.Join(b.path, filepath.FromSlash(b.branch.String()))
	lockPath := refPath + ".lock"
	if err := os.MkdirAll(filepath.Dir(refPath), 0o755); err != nil {
		return fmt.Errorf("creating ref dir: %w", err)
	}
	f, err := os.OpenFile(lockPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, os.ErrExist) {
		if fi, serr := os.Stat(lockPath); serr == nil && time.Since(fi.ModTime()) > staleLockAge {
			return fmt.Errorf("%s is older than %s: a writer crashed holding it; remove it once no nova or git process uses the repo", lockPath, staleLockAge)
		}
		return fmt.Errorf("%w: %s is held by another writer", ErrConflict, filepath.Base(lockPath))
	}
	if err != nil {
		return fmt.Errorf("locking %s: %w", b.branch, err)
	}
	locked := true
	defer func() {
		if locked {
			f.Close()
			os.Remove(lockPath)
		}
	}()
	current, err := readRef(b.path, b.branch)
	if err != nil {
		return err
	}
	if current != old {
		return ErrConflict
	}
	if _, err := f.WriteString(new.String() + "\n"); err != nil {
		return fmt.Errorf("writing %s: %w", lockPath, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", lockPath, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", lockPath, err)
	}
	if err := os.Rename(lockPath, refPath); err != nil {
		return fmt.Errorf("updating %s: %w", b.branch, err)
	}
	locked = false
	// The rename is durable only once its directory is.
	if err := b.sync(filepath.Dir(refPath)); err != nil {
		return fmt.Errorf("syncing %s: %w", b.branch, err)
	}
	b.merge()
	return nil
}

// merge merges small packs once there are many, after the push they would
// slow down has completed: failing to merge fails no push.
func (b *bareTarget) merge() {
	if !b.merging.TryLock() {
		return // another push of this process is merging
	}
	defer b.merging.Unlock()
	if err := consolidate(b.path, b.sync); err != nil {
		b.logf("evidence: merging packs of %s: %v; a later push merges them", b.path, err)
	}
}

// writeObjects writes objs into the repo as one pack, durable with its
// directory before the ref moves.
func (b *bareTarget) writeObjects(objs *Objects) error {
	if _, err := writeObjectsPack(b.packDir(), objs, b.sync); err != nil {
		return fmt.Errorf("writing objects: %w", err)
	}
	if err := b.sync(b.packDir()); err != nil {
		return fmt.Errorf("syncing objects: %w", err)
	}
	return nil
}

// readRef reads a branch as git does: the loose ref file, else its line in
// packed-refs, else none (zero).
func readRef(gitDir string, ref plumbing.ReferenceName) (plumbing.Hash, error) {
	b, err := os.ReadFile(filepath.Join(gitDir, filepath.FromSlash(ref.String())))
	if err == nil {
		line := strings.TrimSpace(string(b))
		if !plumbing.IsHash(line) {
			return plumbing.ZeroHash, fmt.Errorf("ref %s holds %q, not a commit", ref, line)
		}
		return plumbing.NewHash(line), nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, fmt.Errorf("reading ref %s: %w", ref, err)
	}
	f, err := os.Open(filepath.Join(gitDir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading packed-refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		hash, name, ok := strings.Cut(sc.Text(), " ")
		if ok && name == ref.String() && plumbing.IsHash(hash) {
			return plumbing.NewHash(hash), nil
		}
	}
	return plumbing.ZeroHash, sc.Err()
}
