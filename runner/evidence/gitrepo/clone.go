package gitrepo

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/format/packfile"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/capability"
	"github.com/go-git/go-git/v5/plumbing/protocol/packp/sideband"
	"github.com/go-git/go-git/v5/plumbing/storer"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/plumbing/transport/client"
)

const remoteName = "origin"

// maxClonePacks bounds the packs a long-lived clone accumulates (one per
// fetch) before it is repacked: go-git searches every pack index on each
// object lookup.
const maxClonePacks = 64

// cloneTarget reaches the evidence repo through a git transport (https,
// ssh, file://) from a bare clone in the store's state dir. The clone only
// ever receives fetched packs; the objects of new commits live in memory
// until a fetch brings them back, so writing an event costs no file per
// object. The remote URL must carry no credentials: they go with each
// request (auth) and so never reach the clone's config or any other file.
type cloneTarget struct {
	repo   *git.Repository
	close  func() error
	dir    string
	url    string
	branch plumbing.ReferenceName
	auth   transport.AuthMethod
	objs   *overlay

	// mu guards tracking, which fetch reads without the store's lock.
	mu sync.Mutex
	// tracking is the last fetched head: every object it reaches is on
	// disk, so it is what a fetch tells the remote it has.
	tracking plumbing.Hash
}

// OpenClone opens (or initialises) the bare clone in dir of branch at
// remoteURL. Its config is a local file other processes may share: hold a
// file lock.
func OpenClone(dir, remoteURL string, branch plumbing.ReferenceName, auth transport.AuthMethod) (Remote, error) {
	if err := InitBare(dir, branch); err != nil {
		return nil, fmt.Errorf("creating local clone: %w", err)
	}
	repo, closeFn, err := OpenLocal(dir)
	if err != nil {
		return nil, fmt.Errorf("opening local clone %s: %w", dir, err)
	}
	// Rewritten on every open: an older Nova stored the URL as given,
	// token included.
	cfg, err := repo.Config()
	if err == nil {
		cfg.Remotes[remoteName] = &config.RemoteConfig{
			Name:  remoteName,
			URLs:  []string{remoteURL},
			Fetch: []config.RefSpec{config.RefSpec("+" + branch.String() + ":" + trackingRef(branch).String())},
		}
		err = repo.SetConfig(cfg)
	}
	if err != nil {
		closeFn()
		return nil, fmt.Errorf("writing local clone config: %w", err)
	}
	c := &cloneTarget{repo: repo, close: closeFn, dir: dir, url: remoteURL, branch: branch, auth: auth, objs: newOverlay(repo.Storer)}
	if ref, err := repo.Reference(trackingRef(branch), true); err == nil {
		c.tracking = ref.Hash()
	}
	return c, nil
}

func trackingRef(branch plumbing.ReferenceName) plumbing.ReferenceName {
	return plumbing.NewRemoteReferenceName(remoteName, branch.Short())
}

func (c *cloneTarget) Objects() storer.EncodedObjectStorer { return c.objs }

func (c *cloneTarget) Close() error { return c.close() }

func (c *cloneTarget) connect() (*transport.Endpoint, transport.Transport, error) {
	ep, err := transport.NewEndpoint(c.url)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing evidence repo URL %s: %w", c.url, err)
	}
	cl, err := client.NewClient(ep)
	if err != nil {
		return nil, nil, fmt.Errorf("connecting to %s: %w", c.url, err)
	}
	return ep, cl, nil
}

// Fetch asks the remote for the branch and downloads the pack leading to
// it into memory: Install stores it under the caller's lock, the download
// needs none. go-git's Remote.Fetch is not used because it writes into the
// clone while it downloads.
func (c *cloneTarget) Fetch(ctx context.Context, readable func(plumbing.Hash) bool) (Fetched, error) {
	ep, cl, err := c.connect()
	if err != nil {
		return Fetched{}, err
	}
	sess, err := cl.NewUploadPackSession(ep, c.auth)
	if err != nil {
		return Fetched{}, fmt.Errorf("connecting to %s: %w", c.url, err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if errors.Is(err, transport.ErrEmptyRemoteRepository) {
		return Fetched{}, nil
	}
	if err != nil {
		return Fetched{}, fmt.Errorf("fetching %s: %w", c.url, err)
	}
	head := ar.References[c.branch.String()]
	if head.IsZero() || readable(head) {
		return Fetched{Head: head}, nil
	}
	req := packp.NewUploadPackRequestFromCapabilities(ar.Capabilities)
	req.Wants = []plumbing.Hash{head}
	c.mu.Lock()
	if !c.tracking.IsZero() {
		req.Haves = []plumbing.Hash{c.tracking}
	}
	c.mu.Unlock()
	if ar.Capabilities.Supports(capability.NoProgress) {
		_ = req.Capabilities.Set(capability.NoProgress)
	}
	resp, err := sess.UploadPack(ctx, req)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetching %s: %w", c.url, err)
	}
	defer resp.Close()
	var r io.Reader = resp
	switch {
	case req.Capabilities.Supports(capability.Sideband64k):
		r = sideband.NewDemuxer(sideband.Sideband64k, resp)
	case req.Capabilities.Supports(capability.Sideband):
		r = sideband.NewDemuxer(sideband.Sideband, resp)
	}
	pack, err := io.ReadAll(r)
	if err != nil {
		return Fetched{}, fmt.Errorf("fetching %s: %w", c.url, err)
	}
	return Fetched{Head: head, Pack: pack}, nil
}

func (c *cloneTarget) Install(f Fetched) error {
	if f.Pack == nil {
		return nil
	}
	if err := c.store(f.Pack); err != nil {
		return fmt.Errorf("storing fetched objects: %w", err)
	}
	if err := c.repo.Storer.SetReference(plumbing.NewHashReference(trackingRef(c.branch), f.Head)); err != nil {
		return fmt.Errorf("updating local clone: %w", err)
	}
	c.mu.Lock()
	c.tracking = f.Head
	c.mu.Unlock()
	if packs, _ := filepath.Glob(filepath.Join(c.dir, "objects", "pack", "*.pack")); len(packs) > maxClonePacks {
		if err := c.repo.RepackObjects(&git.RepackConfig{}); err != nil {
			return fmt.Errorf("repacking local clone: %w", err)
		}
		// The storer caches the pack list it opened with; start afresh.
		_ = c.close()
		var err error
		if c.repo, c.close, err = OpenLocal(c.dir); err != nil {
			return fmt.Errorf("reopening local clone: %w", err)
		}
		c.objs.EncodedObjectStorer = c.repo.Storer
	}
	c.objs.dropStored()
	return nil
}

// store stores a fetched pack in the clone as it came, with the index
// go-git's parser makes of it (which also checks the pack's checksum). A
// thin pack, whose deltas name bases the clone has, is left to go-git's
// object storage. Like go-git's writer, it does not sync: the clone is a
// copy of the remote, not the record.
func (c *cloneTarget) store(pack []byte) error {
	if err := checkPackCount(pack); err != nil {
		return err
	}
	var w idxfile.Writer
	p, err := packfile.NewParser(packfile.NewScanner(bytes.NewReader(pack)), &w)
	if err != nil {
		return err
	}
	sum, err := p.Parse()
	if errors.Is(err, packfile.ErrReferenceDeltaNotFound) {
		return packfile.UpdateObjectStorage(c.repo.Storer, bytes.NewReader(pack))
	}
	if err != nil {
		return err
	}
	index, err := w.Index()
	if err != nil {
		return err
	}
	if _, err := storePack(filepath.Join(c.dir, "objects", "pack"), pack, sum, index, func(...string) error { return nil }); err != nil {
		return err
	}
	// go-git's storage lists packs once; it must see the new one.
	if r, ok := c.repo.Storer.(interface{ Reindex() }); ok {
		r.Reindex()
	}
	return nil
}

// minPackEntry is the size of the smallest pack entry: a header byte and
// an empty zlib stream.
const minPackEntry = 9

// checkPackCount refuses a pack whose header counts more objects than its
// bytes can hold. go-git's index writer allocates room for the count the
// header states before it reads an entry (32 bytes each: 128 GiB for the
// largest), which a fetched pack must not get to ask for.
func checkPackCount(pack []byte) error {
	if len(pack) < 12+20 || string(pack[:4]) != "PACK" {
		return errors.New("the fetched data is not a pack")
	}
	if count := binary.BigEndian.Uint32(pack[8:12]); uint64(count) > uint64(len(pack)-12-20)/minPackEntry {
		return fmt.Errorf("a pack of %d bytes cannot hold the %d objects it counts", len(pack), count)
	}
	return nil
}

func (c *cloneTarget) Keep(objs *Objects) {
	for _, h := range objs.order {
		c.objs.mem[h] = objs.get(h)
	}
}

// Push sends objects and moves the remote branch from old to new, only if
// it still points at old: the receiving side's ref lock makes this a
// compare-and-swap, so concurrent writers can never overwrite each other.
// go-git's Remote.Push is not used because it walks every object reachable
// from the remote head to decide what to send; we already know: the
// objects of the batch, sent as the in-place store packs them.
func (c *cloneTarget) Push(ctx context.Context, old, new plumbing.Hash, objs *Objects) error {
	ep, cl, err := c.connect()
	if err != nil {
		return err
	}
	sess, err := cl.NewReceivePackSession(ep, c.auth)
	if err != nil {
		return fmt.Errorf("connecting to %s: %w", c.url, err)
	}
	defer sess.Close()
	ar, err := sess.AdvertisedReferencesContext(ctx)
	if err != nil {
		return fmt.Errorf("reading refs of %s: %w", c.url, err)
	}
	if current := ar.References[c.branch.String()]; current != old {
		return ErrConflict
	}
	req := packp.NewReferenceUpdateRequestFromCapabilities(ar.Capabilities)
	req.Commands = []*packp.Command{{Name: c.branch, Old: old, New: new}}
	rd, wr := io.Pipe()
	req.Packfile = rd
	done := make(chan error, 1)
	go func() {
		done <- wr.CloseWithError(streamObjectsPack(wr, objs, ar.Capabilities.Supports(capability.OFSDelta)))
	}()
	rs, err := sess.ReceivePack(ctx, req)
	_ = rd.Close()
	encErr := <-done
	if rs != nil && rs.UnpackStatus == "ok" {
		for _, cs := range rs.CommandStatuses {
			if cs.Status != "ok" {
				// "fetch first", "failed to lock", "stale info": another
				// writer got there first.
				return fmt.Errorf("%w: %s", ErrConflict, cs.Status)
			}
		}
	}
	if err != nil {
		return fmt.Errorf("pushing to %s: %w", c.url, err)
	}
	if encErr != nil {
		return fmt.Errorf("packing objects: %w", encErr)
	}
	return nil
}

// overlay reads the objects of pushed commits from memory, then the clone
// on disk.
type overlay struct {
	storer.EncodedObjectStorer
	mem map[plumbing.Hash]plumbing.EncodedObject
	// gitDir, when set, is a repo whose packs may be merged under the
	// reader: re-listing them waits for a merge to finish.
	gitDir string
}

func newOverlay(base storer.EncodedObjectStorer) *overlay {
	return &overlay{EncodedObjectStorer: base, mem: map[plumbing.Hash]plumbing.EncodedObject{}}
}

func (o *overlay) EncodedObject(t plumbing.ObjectType, h plumbing.Hash) (plumbing.EncodedObject, error) {
	if obj, ok := o.mem[h]; ok && (t == plumbing.AnyObject || obj.Type() == t) {
		return obj, nil
	}
	return o.EncodedObjectStorer.EncodedObject(t, h)
}

func (o *overlay) HasEncodedObject(h plumbing.Hash) error {
	if _, ok := o.mem[h]; ok {
		return nil
	}
	return o.EncodedObjectStorer.HasEncodedObject(h)
}

// reindex makes the storage list the repo's packs again, and forgets the
// memory copies it can now read.
func (o *overlay) reindex() {
	if r, ok := o.EncodedObjectStorer.(interface{ Reindex() }); ok {
		if o.gitDir != "" {
			defer settle(o.gitDir)()
		}
		r.Reindex()
	}
	o.dropStored()
}

// dropStored forgets the memory copies a fetch has since brought to disk.
func (o *overlay) dropStored() {
	for h := range o.mem {
		if o.EncodedObjectStorer.HasEncodedObject(h) == nil {
			delete(o.mem, h)
		}
	}
}
