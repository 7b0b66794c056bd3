package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"path/filepath"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// Retry is the push retry policy: capped exponential backoff with full
// jitter, so writers that collided spread out instead of colliding again.
type Retry struct {
	// Conflicts is how many times one event is re-chained and pushed again
	// after losing a race to another writer.
	Conflicts int
	// Unreachable is how many transport failures in a row are retried.
	Unreachable int
	Base        time.Duration
	Max         time.Duration
}

// DefaultRetry suits a handful of concurrent runs against one forge.
var DefaultRetry = Retry{Conflicts: 100, Unreachable: 3, Base: 20 * time.Millisecond, Max: 2 * time.Second}

func (r Retry) delay(attempt int) time.Duration {
	d := r.Base << min(attempt, 20)
	if d <= 0 || d > r.Max {
		d = r.Max
	}
	if d <= 0 {
		return 0
	}
	return rand.N(d) + 1
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// chainState is a contract's chain at one version of its directory.
type chainState struct {
	tree plumbing.Hash // the contract directory's tree it was computed from
	seq  int64
	hash string
	ids  map[string]bool
}

// blobInfo caches what an event file holds; blobs are immutable, so the
// cache never goes stale however the head moves.
type blobInfo struct {
	id  string
	sum string
}

// sync fetches the remote head and checks it still contains every head
// this store pushed before and that every commit new to this store is
// signed by an allowed commit key. Only then does the head become the one
// the store reads and builds on.
func (s *Store) sync(ctx context.Context) (err error) {
	defer func() {
		if err != nil {
			// The last good head is no longer known to be current: the
			// next write must fetch (and check) again, not build on it.
			s.synced = false
		}
	}()
	head, err := s.target.head(ctx)
	if err != nil {
		return err
	}
	if err := s.checkWitness(head); err != nil {
		return err
	}
	if err := s.checkCommitKeys(head); err != nil {
		return err
	}
	s.head, s.synced = head, true
	return nil
}

// untrustedHead reports whether err is sync refusing the head itself (a
// rewrite, a commit no allowed key signed) rather than failing to reach
// it: retrying cannot help, and the reason must reach the caller as it is.
func untrustedHead(err error) bool {
	switch runner.ReasonOf(err) {
	case runner.EvidenceHistoryRewritten, runner.EvidenceCommitUnsigned,
		runner.EvidenceCommitKeyUnknown, runner.EvidenceCommitSignatureInvalid:
		return true
	}
	return false
}

// checkCommitKeys refuses a head whose first-parent history holds a commit
// not signed by an allowed key. Event signatures alone do not protect the
// gate: anyone who can push could delete a contract's last event (an
// indeterminate apply) or copy another contract's signed events, and the
// store would then sign an authorization on top. The walk stops at a head
// already checked, or at the last witnessed head (this machine pushed it,
// so its history was checked before): a few commits normally, the whole
// history on a store's first sync without a witness.
func (s *Store) checkCommitKeys(head plumbing.Hash) error {
	if head.IsZero() || s.checked[head] {
		return nil
	}
	heads, err := readWitness(filepath.Join(s.cfg.StateDir, witnessFile))
	if err != nil {
		return err
	}
	last := plumbing.ZeroHash
	if len(heads) > 0 {
		last = heads[len(heads)-1]
	}
	for h := head; !h.IsZero() && h != last && !s.checked[h]; {
		c, err := object.GetCommit(s.target.objects(), h)
		if err != nil {
			return fmt.Errorf("reading commit %s: %w", h, err)
		}
		if reason, err := s.commitKeys.CheckCommit(c); err != nil {
			return runner.Errorf(reason, "evidence commit %s: %v; not reading or extending a history that holds it", short(h), err)
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	s.checked[head] = true
	return nil
}

// checkWitness refuses to extend a history that lost a head we pushed: the
// writer would otherwise paper over a force-push with fresh signed commits.
// The walk is first-parent from the new head back to the last witnessed
// head: a few commits normally, the whole history only when it is missing.
func (s *Store) checkWitness(head plumbing.Hash) error {
	heads, err := readWitness(filepath.Join(s.cfg.StateDir, witnessFile))
	if err != nil || len(heads) == 0 {
		return err
	}
	last := heads[len(heads)-1]
	for h := head; !h.IsZero(); {
		if h == last {
			return nil
		}
		c, err := object.GetCommit(s.target.objects(), h)
		if err != nil {
			return fmt.Errorf("reading commit %s: %w", h, err)
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return runner.Errorf(runner.EvidenceHistoryRewritten,
		"evidence repo head %s does not contain %s, which this machine pushed: the history was rewritten (see %s)",
		short(head), short(last), filepath.Join(s.cfg.StateDir, witnessFile))
}

// chainAt returns the chain of the contract directory dir at head.
func (s *Store) chainAt(head plumbing.Hash, dir string) (*chainState, error) {
	tree, err := s.contractTree(head, dir)
	if err != nil {
		return nil, err
	}
	if st, ok := s.chains[dir]; ok && st.tree == tree {
		return st, nil
	}
	st := &chainState{tree: tree, ids: map[string]bool{}}
	if tree.IsZero() {
		s.chains[dir] = st
		return st, nil
	}
	t, err := object.GetTree(s.target.objects(), tree)
	if err != nil {
		return nil, fmt.Errorf("reading contract tree %s: %w", dir, err)
	}
	var last plumbing.Hash
	for _, e := range t.Entries {
		f, ok := parseEventFileName(e.Name)
		if !ok || f.Sig {
			continue
		}
		info, err := s.blob(e.Hash)
		if err != nil {
			return nil, err
		}
		st.ids[info.id] = true
		if f.Seq > st.seq {
			st.seq, last = f.Seq, e.Hash
		}
	}
	if !last.IsZero() {
		st.hash = s.blobs[last].sum
	}
	s.chains[dir] = st
	return st, nil
}

// contractTree is the tree hash of contracts/<dir> at head (zero if none).
func (s *Store) contractTree(head plumbing.Hash, dir string) (plumbing.Hash, error) {
	if head.IsZero() {
		return plumbing.ZeroHash, nil
	}
	c, err := object.GetCommit(s.target.objects(), head)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading commit %s: %w", head, err)
	}
	h := c.TreeHash
	for _, name := range []string{contractsDir, dir} {
		t, err := object.GetTree(s.target.objects(), h)
		if err != nil {
			return plumbing.ZeroHash, fmt.Errorf("reading tree %s: %w", h, err)
		}
		found := false
		for _, e := range t.Entries {
			if e.Name == name && e.Mode == filemode.Dir {
				h, found = e.Hash, true
				break
			}
		}
		if !found {
			return plumbing.ZeroHash, nil
		}
	}
	return h, nil
}

func (s *Store) blob(h plumbing.Hash) (blobInfo, error) {
	if info, ok := s.blobs[h]; ok {
		return info, nil
	}
	b, err := readBlob(s.target.objects(), h)
	if err != nil {
		return blobInfo{}, err
	}
	var ev struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(b, &ev) // a file that is no event has no id to collide with
	sum := sha256.Sum256(b)
	info := blobInfo{id: ev.ID, sum: hex.EncodeToString(sum[:])}
	s.blobs[h] = info
	return info, nil
}

func readBlob(st interface {
	EncodedObject(plumbing.ObjectType, plumbing.Hash) (plumbing.EncodedObject, error)
}, h plumbing.Hash) ([]byte, error) {
	o, err := st.EncodedObject(plumbing.BlobObject, h)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("reading blob %s: %w", h, err)
	}
	return b, nil
}

// drain delivers the outbox in order; it stops at the first event that
// cannot be delivered so that chains keep the order events happened in.
func (s *Store) drain(ctx context.Context) error {
	pending, err := s.outbox.load()
	if err != nil {
		return err
	}
	for _, e := range pending {
		if err := s.deliver(ctx, e); err != nil {
			if runner.ReasonOf(err) == runner.ApplyIndeterminate {
				// A refused authorization never took effect; kept, it
				// would block every later event behind it.
				if rmErr := s.outbox.remove(e.ID); rmErr != nil {
					return rmErr
				}
			}
			return err
		}
		if err := s.outbox.remove(e.ID); err != nil {
			return err
		}
	}
	return nil
}

// deliver pushes one event as one commit. On every attempt it re-derives
// the event's place in its chain from the head it builds on, re-signs it,
// and pushes with compare-and-swap; losing the race means fetch and again.
// An event whose id is already in its contract's directory was delivered
// before (a crash between push and outbox rewrite, or a redelivery) and is
// dropped.
func (s *Store) deliver(ctx context.Context, e runner.Event) error {
	dir := contractDir(e.ContractID)
	conflicts, failures := 0, 0
	for {
		if !s.synced {
			if err := s.sync(ctx); err != nil {
				if untrustedHead(err) {
					return err
				}
				failures++
				if failures >= s.retry.Unreachable || ctx.Err() != nil {
					return err
				}
				if err := sleep(ctx, s.retry.delay(failures)); err != nil {
					return err
				}
				continue
			}
		}
		st, err := s.chainAt(s.head, dir)
		if err != nil {
			return err
		}
		if st.ids[e.ID] {
			return nil
		}
		if e.Type == runner.EventApplyAuthorized {
			// The gate may have decided on a stale copy; on the head this
			// authorization would extend, an apply of unknown outcome
			// still forbids it.
			id, err := s.unresolvedAt(s.head, e.ContractID, runner.Environment(e.Environment))
			if err != nil {
				return err
			}
			if id != "" {
				return runner.Errorf(runner.ApplyIndeterminate, "contract %s has an apply of unknown outcome (event %s); not authorizing another", e.ContractID, id)
			}
		}
		e.Seq, e.PrevEventHash = st.seq+1, st.hash
		canon, err := e.Canonical()
		if err != nil {
			return fmt.Errorf("encoding event %s: %w", e.ID, err)
		}
		sig, err := s.cfg.Keys.Events.Sign(canon)
		if err != nil {
			return err
		}
		name := eventFileName(e.Seq, e.Type, "json")
		commit, objs, err := writeEventCommit(s.target.objects(), s.head, dir, name, canon, sig, CommitMessage(e), s.cfg.Keys.Commit, s.now())
		if err != nil {
			return err
		}
		err = s.target.push(ctx, s.head, commit, objs)
		if err == nil {
			if err := appendWitness(filepath.Join(s.cfg.StateDir, witnessFile), commit); err != nil {
				return err
			}
			s.head = commit
			s.checked[commit] = true // signed just now with our own key
			// Carry the chain forward rather than re-reading the directory
			// for the next event of the same contract.
			if tree, err := s.contractTree(commit, dir); err == nil {
				sum := sha256.Sum256(canon)
				st.ids[e.ID] = true
				s.chains[dir] = &chainState{tree: tree, seq: e.Seq, hash: hex.EncodeToString(sum[:]), ids: st.ids}
			} else {
				delete(s.chains, dir)
			}
			return nil
		}
		s.synced = false
		if errors.Is(err, errConflict) {
			conflicts++
			if conflicts > s.retry.Conflicts {
				return fmt.Errorf("pushing event %s: gave up after %d conflicts: %w", e.ID, conflicts, err)
			}
			if err := sleep(ctx, s.retry.delay(conflicts)); err != nil {
				return err
			}
			continue
		}
		failures++
		if failures >= s.retry.Unreachable || ctx.Err() != nil {
			return err
		}
		if err := sleep(ctx, s.retry.delay(failures)); err != nil {
			return err
		}
	}
}

func short(h plumbing.Hash) string { return h.String()[:12] }

// repoKey names a repo's state dir: a digest of its credential-free
// address, so a token never lands in a path.
func repoKey(repo string) string {
	addr := redactURL(repo)
	if isLocalPath(repo) {
		if p, err := filepath.Abs(trimFileScheme(repo)); err == nil {
			addr = p
		}
	}
	sum := sha256.Sum256([]byte(addr))
	return hex.EncodeToString(sum[:8])
}
