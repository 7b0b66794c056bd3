package evidence

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
	"github.com/go-git/go-git/v5/storage/memory"
)

const remoteName = "origin"

// maxClonePacks bounds the packs a long-lived clone accumulates (one per
// fetch) before it is repacked: go-git searches every pack index on each
// object lookup.
const maxClonePacks = 64

// cloneTarget reaches the evidence repo through a git transport (https,
// ssh, file://) from a bare clone in the store's state dir. The clone only
// ever receives fetched packs; the objects of new commits live in memory
// until pushed and come back with the next fetch, so writing an event costs
// no file per object.
type cloneTarget struct {
	repo    *git.Repository
	close   func() error
	dir     string
	url     string
	branch  plumbing.ReferenceName
	auth    transport.AuthMethod
	overlay *overlay
}

var _ target = (*cloneTarget)(nil)

// openClone opens (or initialises) the clone in dir and points its origin
// at remoteURL.
func openClone(dir, remoteURL string, branch plumbing.ReferenceName, auth transport.AuthMethod) (*cloneTarget, error) {
	if !isBareRepo(dir) {
		if _, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{Bare: true, InitOptions: git.InitOptions{DefaultBranch: branch}}); err != nil {
			return nil, fmt.Errorf("creating local clone %s: %w", dir, err)
		}
	}
	repo, closeFn, err := openLocal(dir)
	if err != nil {
		return nil, fmt.Errorf("opening local clone %s: %w", dir, err)
	}
	cfg, err := repo.Config()
	if err != nil {
		closeFn()
		return nil, fmt.Errorf("reading local clone config: %w", err)
	}
	cfg.Remotes[remoteName] = &config.RemoteConfig{
		Name:  remoteName,
		URLs:  []string{remoteURL},
		Fetch: []config.RefSpec{config.RefSpec("+" + branch.String() + ":" + trackingRef(branch).String())},
	}
	if err := repo.SetConfig(cfg); err != nil {
		closeFn()
		return nil, fmt.Errorf("writing local clone config: %w", err)
	}
	return &cloneTarget{repo: repo, close: closeFn, dir: dir, url: remoteURL, branch: branch, auth: auth, overlay: newOverlay(repo.Storer)}, nil
}

func trackingRef(branch plumbing.ReferenceName) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch.Short())
}

func (c *cloneTarget) objects() storer.EncodedObjectStorer { return c.overlay }

func (c *cloneTarget) release() error { return c.close() }

// head fetches the remote branch into the clone and returns its head; the
// zero hash means the remote has no such branch yet (an empty repo).
func (c *cloneTarget) head(ctx context.Context) (plumbing.Hash, error) {
	err := c.repo.FetchContext(ctx, &git.FetchOptions{RemoteName: remoteName, Auth: c.auth, Tags: git.NoTags, Force: true})
	var noMatch git.NoMatchingRefSpecError
	switch {
	case err == nil, errors.Is(err, git.NoErrAlreadyUpToDate):
	case errors.Is(err, transport.ErrEmptyRemoteRepository), errors.As(err, &noMatch):
		return plumbing.ZeroHash, nil
	default:
		return plumbing.ZeroHash, fmt.Errorf("fetching %s: %w", redactURL(c.url), err)
	}
	ref, err := c.repo.Reference(trackingRef(c.branch), true)
	if errors.Is(err, plumbing.ErrReferenceNotFound) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, err
	}
	if packs, _ := filepath.Glob(filepath.Join(c.dir, "objects", "pack", "*.pack")); len(packs) > maxClonePacks {
		if err := c.repo.RepackObjects(&git.RepackConfig{}); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("repacking local clone: %w", err)
		}
		// The storer caches the pack list it opened with; start afresh.
		_ = c.close()
		if c.repo, c.close, err = openLocal(c.dir); err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reopening local clone: %w", err)
		}
	}
	// Everything pushed so far is now on disk; drop the memory copies.
	c.overlay = newOverlay(c.repo.Storer)
	return ref.Hash(), nil
}

// push sends objects and moves the remote branch from old to new, only if
// it still points at old: the receiving side's ref lock makes this a
// compare-and-swap, so concurrent writers can never overwrite each other.
// go-git's Remote.Push is not used because it walks every object reachable
// from the remote head to decide what to send; we already know: the few
// objects of one event.
func (c *cloneTarget) push(ctx context.Context, old, new plumbing.Hash, objs []plumbing.Hash) error {
	ep, err := transport.NewEndpoint(c.url)
	if err != nil {
		return fmt.Errorf("parsing evidence repo URL %s: %w", redactURL(c.url), err)
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redactURL(c.url), err)
	}
	sess, err := cl.NewReceivePackSession(ep, c.auth)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", redactURL(c.url), err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return fmt.Errorf("reading refs of %s: %w", redactURL(c.url), err)
	}
	current := plumbing.ZeroHash
	if h, ok := ar.References[c.branch.String()]; ok {
		current = h
	}
	if current != old {
		return errConflict
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: c.branch, Old: old, New: new}}
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		_, err := packfile.NewEncoder(wr, c.overlay, false).Encode(objs, 0)
		done <- wr.CloseWithError(err)
	}()
	rs, err := sess.ReceivePack(ctx, req)
	_ = rd.Close()
	encErr := <-done
	if rs != nil && rs.UnpackStatus == "ok" {
		for _, cs := range rs.CommandStatuses {
			if cs.Status != "ok" {
				// "fetch first", "failed to lock", "stale info": another
				// writer got there first.
				return fmt.Errorf("%w: %s", errConflict, cs.Status)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", redactURL(c.url), err)
	}
	if encErr != nil {
		return fmt.Errorf("packing objects: %w", encErr)
	}
	return nil
}

// overlay reads objects from memory first, then from the clone on disk,
// and writes only to memory.
type overlay struct {
	storer.EncodedObjectStorer
	mem *memory.ObjectStorage
}

func newOverlay(base storer.EncodedObjectStorer) *overlay {
	return &overlay{EncodedObjectStorer: base, mem: &memory.NewStorage().ObjectStorage}
}

func (o *overlay) NewEncodedObject() plumbing.EncodedObject { return &plumbing.MemoryObject{} }

func (o *overlay) SetEncodedObject(obj plumbing.EncodedObject) (plumbing.Hash, error) {
	return o.mem.SetEncodedObject(obj)
}

func (o *overlay) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, err := o.mem.EncodedObject(t, h); err == nil {
		return obj, nil
	}
	return o.EncodedObjectStorer.EncodedObject(t, h)
}

func (o *overlay) HasEncodedObject(h plumbing.Hash) error {
	if o.mem.HasEncodedObject(h) == nil {
		return nil
	}
	return o.EncodedObjectStorer.HasEncodedObject(h)
}

func (o *overlay) EncodedObjectSize(h plumbing.Hash) (int64, error) {
	if sz, err := o.mem.EncodedObjectSize(h); err == nil {
		return sz, nil
	}
	return o.EncodedObjectStorer.EncodedObjectSize(h)
}
