package evidence

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// errUnreachable marks a failure of the repo itself (a fetch or push that
// kept failing) rather than of one contract: every other contract would
// fail the same way, so a drain stops trying them.
var errUnreachable = errors.New("evidence repo unreachable")

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

// Record implements runner.Recorder. The event is appended to its
// contract's outbox and fsynced: that is the point it is durable, and
// only then is it acknowledged. It is pushed later, together with the
// contract's other pending events, at the points where it must be in the
// repo: Flush, Drain, and before Record returns for an event that must be
// visible to others before the run goes on.
//
// nova.apply.authorized is such an event: apply must not start on an
// authorization nobody else can see, so Record pushes the outbox through
// it and a failed push is an error (EVIDENCE_PUSH_FAILED); the run stops
// and the outbox keeps the events for the next run. Every other event
// only waits in the outbox, and Record returns nil.
func (s *Store) Record(ctx context.Context, e runner.Event) error {
	return s.RecordCanonical(ctx, e, nil)
}

// RecordCanonical implements runner.CanonicalRecorder: Record, with the
// event's canonical form already computed (nil: compute it).
func (s *Store) RecordCanonical(ctx context.Context, e runner.Event, canonical []byte) error {
	if err := chain.CheckEventNames(e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording event: %w", err)
	}
	dir := chain.Dir(e.ContractID)
	if err := s.outbox.add(dir, e, canonical); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording %s event: %w", e.Type, err)
	}
	if e.Type != runner.EventApplyAuthorized {
		return nil
	}
	if err := s.SyncOutbox(); err != nil {
		return err
	}
	return pushFailed(s.drainContract(ctx, dir), "pushing %s event %s", e.Type, e.ID)
}

// Flush implements runner.Flusher: it pushes the contract's pending
// events, as a run must before it lets go of its run lock, so the next
// run (perhaps on another machine) sees this one's outcome. A failed push
// leaves them in the outbox and is an error; Drain tries them again.
func (s *Store) Flush(ctx context.Context, contractID string) error {
	return pushFailed(s.drainContract(ctx, chain.Dir(contractID)), "pushing the events of contract %s", contractID)
}

// pushFailed gives a failed push EVIDENCE_PUSH_FAILED, unless the head
// was refused, an authorization was, or the transparency log did not take
// a signature: their own reasons say more.
func pushFailed(err error, format string, args ...any) error {
	if err == nil || untrustedHead(err) || runner.ReasonOf(err) == runner.ApplyIndeterminate || runner.ReasonOf(err) == runner.RekorUploadFailed {
		return err
	}
	return runner.Errorf(runner.EvidencePushFailed, format+": %w", append(args, err)...)
}

// maxBatchEvents bounds the events one push of Drain carries. Pushing a
// whole outbox at once was the point: one push per contract (a pack
// written and synced, the branch swapped, the head witnessed, packs
// merged) was most of `nova validate --all`'s time on a monorepo. But a
// push that loses the race to another writer is built again from the new
// head, every event re-signed, so a batch stays small enough to redo.
// (A variable so a test can make batches of a few events.)
var maxBatchEvents = 2048

// pendingContract is a contract's outbox as one delivery found it, and
// what became of it.
type pendingContract struct {
	dir     string
	pending []runner.Event
	lines   [][]byte // pending's outbox lines (canonicalAt)
	// err is why the contract's events (or some) were not delivered.
	err error
}

// Drain pushes every event waiting in the outbox: each contract's in
// order, many contracts' together in one push (one pack, one
// compare-and-swap of the branch), up to maxBatchEvents. A contract whose
// chain cannot be extended is left out of its batch, so it holds none of
// the others back; a push that fails delivers none of its batch, whose
// events all stay in the outbox. Call it at the end of a run (and at the
// start of the next) so nothing waits in the outbox. The error names
// every contract left undelivered.
func (s *Store) Drain(ctx context.Context) error {
	contracts, err := s.outbox.contracts()
	if err != nil {
		return runner.Errorf(runner.EvidencePushFailed, "draining the evidence outbox: %w", err)
	}
	var errs []error
	reason := runner.EvidencePushFailed
	for next := 0; next < len(contracts); {
		batch, unlock, unread := s.takeBatch(contracts, &next)
		errs = append(errs, unread...)
		if len(batch) > 0 {
			s.deliver(ctx, batch)
		}
		unlock()
		stop := false
		for _, p := range batch {
			if p.err == nil {
				continue
			}
			errs = append(errs, fmt.Errorf("contract %s: %w", p.dir, p.err))
			if runner.ReasonOf(p.err) == runner.RekorUploadFailed && reason == runner.EvidencePushFailed {
				// The repo was fine; the log did not take a signature.
				reason = runner.RekorUploadFailed
			}
			if untrustedHead(p.err) || errors.Is(p.err, errUnreachable) || ctx.Err() != nil {
				// The repo itself failed: every other contract would
				// wait through the same retries and fail alike.
				stop = true
				if untrustedHead(p.err) {
					reason = runner.ReasonOf(p.err)
				}
			}
		}
		if stop {
			if rest := contracts[next:]; len(rest) > 0 {
				errs = append(errs, fmt.Errorf("not tried: contract %s", strings.Join(rest, ", ")))
			}
			break
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return runner.Errorf(reason, "draining the evidence outbox: %w", errors.Join(errs...))
}

// takeBatch takes the contracts from contracts[*next] on whose outboxes
// hold up to maxBatchEvents events (at least one contract's), holding
// each one's delivery lock; unlock releases them. The locks are taken in
// the order of contracts (sorted), one batch at a time, so two drains
// cannot deadlock, and a Flush of one of them waits for the batch. unread
// are the outboxes that could not be read, left for the next drain.
func (s *Store) takeBatch(contracts []string, next *int) (batch []*pendingContract, unlock func(), unread []error) {
	var held []*sync.Mutex
	unlock = func() {
		for _, mu := range held {
			mu.Unlock()
		}
	}
	events := 0
	for ; *next < len(contracts) && events < maxBatchEvents; *next++ {
		dir := contracts[*next]
		mu := s.deliveryLock(dir)
		mu.Lock()
		pending, lines, err := s.outbox.load(dir)
		if err != nil {
			mu.Unlock()
			unread = append(unread, fmt.Errorf("contract %s: %w", dir, err))
			continue
		}
		if len(pending) == 0 {
			mu.Unlock()
			continue
		}
		if events > 0 && events+len(pending) > maxBatchEvents {
			mu.Unlock() // the next batch's first
			break
		}
		held = append(held, mu)
		batch = append(batch, &pendingContract{dir: dir, pending: pending, lines: lines})
		events += len(pending)
	}
	return batch, unlock, unread
}

// deliveryLock is the lock that serialises the delivery of one
// contract's outbox.
func (s *Store) deliveryLock(dir string) *sync.Mutex {
	s.mu.Lock()
	defer s.mu.Unlock()
	mu, ok := s.delivering[dir]
	if !ok {
		mu = &sync.Mutex{}
		s.delivering[dir] = mu
	}
	return mu
}

// drainContract delivers a contract's outbox in order, as one batch.
func (s *Store) drainContract(ctx context.Context, dir string) error {
	mu := s.deliveryLock(dir)
	mu.Lock()
	defer mu.Unlock()
	pending, lines, err := s.outbox.load(dir)
	if err != nil || len(pending) == 0 {
		return err
	}
	p := &pendingContract{dir: dir, pending: pending, lines: lines}
	s.deliver(ctx, []*pendingContract{p})
	return p.err
}

// deliver pushes each contract's outbox in order, as one chain of commits
// (one per event, the contracts' one after another) with one
// compare-and-swap of the branch, and sets the err of each contract that
// was not (wholly) delivered. The caller holds every contract's delivery
// lock. On every attempt it re-derives each event's place in its chain
// from the head it builds on, re-signs, and pushes; losing the race means
// fetch and again, for the whole batch: the swap is of one branch, so
// either every commit of the batch is in the repo or none is, and only
// once it is does any outbox let go of its events. An event whose id is
// already in its contract's directory was delivered before (a crash
// between push and outbox update, or another process draining the same
// outbox) and is dropped, so a retry never doubles one. A contract's part
// stops short of an authorization the head forbids: what comes before it
// is delivered, the authorization is dropped (it never took effect; kept,
// it would block every later event behind it), and its err says why.
func (s *Store) deliver(ctx context.Context, batch []*pendingContract) {
	fail := func(err error) {
		for _, p := range batch {
			if p.err == nil {
				p.err = err
			}
		}
	}
	conflicts, failures := 0, 0
	failed := func(err error) error {
		failures++
		if failures >= s.retry.Unreachable || ctx.Err() != nil {
			return fmt.Errorf("%w: %w", errUnreachable, err)
		}
		return sleep(ctx, s.retry.delay(failures))
	}
	for {
		for _, p := range batch {
			p.err = nil
		}
		head, err := s.freshHead(ctx)
		if untrustedHead(err) {
			fail(err)
			return
		}
		if err != nil {
			if err := failed(err); err != nil {
				fail(err)
				return
			}
			continue
		}
		b, err := s.prepare(head, batch)
		if err != nil {
			fail(err)
			return
		}
		if len(b.commits) > 0 {
			err = s.target.Push(ctx, head, b.head, b.objs)
			if err != nil {
				s.unsynced(head)
				if !errors.Is(err, gitrepo.ErrConflict) {
					err = failed(err)
				} else if conflicts++; conflicts > s.retry.Conflicts {
					err = fmt.Errorf("pushing %d event(s): gave up after %d conflicts: %w", len(b.commits), conflicts, err)
				} else {
					err = sleep(ctx, s.retry.delay(conflicts))
				}
				if err != nil {
					fail(err)
					return
				}
				continue
			}
			if err := s.delivered(b); err != nil {
				fail(err)
				return
			}
		}
		for _, part := range b.parts {
			p := part.of
			if err := s.outbox.remove(p.dir, part.done...); err != nil {
				p.err = err
				continue
			}
			p.err = part.refused
		}
		return
	}
}

// prepare builds the commits that put each contract's pending events on
// top of its chain at head, skipping events the chain already holds. A
// contract whose chain cannot be read is left out of the batch with its
// err set; an error writing the batch itself is returned.
func (s *Store) prepare(head plumbing.Hash, batch []*pendingContract) (*eventCommits, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	b, err := newEventCommits(s.objects, head)
	if err != nil {
		return nil, err
	}
	// In shard order, so each shard directory is read once per batch.
	order := slices.Clone(batch)
	slices.SortStableFunc(order, func(x, y *pendingContract) int {
		return cmp.Or(cmp.Compare(chain.ShardOf(x.dir), chain.ShardOf(y.dir)), cmp.Compare(x.dir, y.dir))
	})
	for _, p := range order {
		// The contract's directory at head is what it is where its
		// events go: no other part of the batch touches it.
		g, err := s.gateHeadWith(head, p.dir, p.pending)
		if err != nil {
			p.err = err
			continue
		}
		part, err := b.start(p.dir)
		if err != nil {
			return nil, err
		}
		part.of = p
		if err := s.prepareContract(b, part, g, p.pending, p.lines); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// prepareContract writes pending, one contract's outbox, onto b at the
// contract's gate head g. The caller holds s.mu.
func (s *Store) prepareContract(b *eventCommits, part *contractCommits, g *gateHead, pending []runner.Event, lines [][]byte) error {
	var added []runner.Event
	sum := g.hash
	for i, e := range pending {
		if g.holds(e.ID) {
			part.done = append(part.done, e.ID)
			continue
		}
		if e.Type == runner.EventApplyAuthorized {
			// The gate may have decided on a stale copy; on the chain
			// this authorization would extend, an apply of unknown
			// outcome still forbids it.
			chain := g.summary.Clone()
			for _, a := range added {
				chain.Fold(a)
			}
			if open := chain.Env(runner.Environment(e.Environment)).Open; open != nil {
				part.done = append(part.done, e.ID)
				part.refused = runner.Errorf(runner.ApplyIndeterminate, "contract %s has an apply of unknown outcome (event %s); not authorizing another", e.ContractID, open.ID)
				break
			}
		}
		e, canon, err := canonicalAt(e, lines[i], g.seq+int64(len(added))+1, sum)
		if err != nil {
			return fmt.Errorf("encoding event %s: %w", e.ID, err)
		}
		sig, err := s.cfg.Keys.SignEvent(canon)
		if err != nil {
			return err
		}
		key, err := b.add(e.Seq, e.Type, canon, sig, chain.CommitMessage(e), s.cfg.Keys.Commit, s.now())
		if err != nil {
			return err
		}
		h := sha256.Sum256(canon)
		sum = hex.EncodeToString(h[:])
		if s.cfg.Keys.Keyless == nil {
			// What checking the file would find: these bytes, signed just
			// now with the event key the store verifies with. A keyless
			// signature's identity is the certificate's, and is checked.
			part.checks = append(part.checks, ownCheck{key: key, check: chain.Check{Sum: sum, Event: e, Signed: signing.Signed{Kind: signing.KindKey}}})
		}
		added = append(added, e)
		part.done = append(part.done, e.ID)
	}
	part.events, part.sum = added, sum
	return nil
}

// delivered records a pushed batch: in the witness first (this machine
// vouches for the head from now on), then as the store's head, with each
// contract's chain carried forward rather than read again.
func (s *Store) delivered(b *eventCommits) error {
	if err := s.witness(b.head); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target.Keep(b.objs)
	for _, h := range b.commits {
		s.checked[h] = true // signed just now with our own key
	}
	s.ticket++
	s.head, s.synced, s.headTicket = b.head, true, s.ticket
	for _, p := range b.parts {
		if len(p.events) == 0 {
			continue
		}
		if c, ok := s.chains[p.dir]; ok && c.tree == p.parentTree {
			c.tree, c.hash = p.tree, p.sum
			// Reading the chain at its new tree (saveChains does, for the
			// cache) then verifies none of this store's own files again:
			// a signature check each was a tenth of validating 10 000
			// contracts.
			for _, o := range p.checks {
				c.checks[o.key] = o.check
			}
			c.events = append(c.events, p.events...)
			if c.summary != nil {
				c.summary = c.summary.Clone()
			}
			for _, e := range p.events {
				c.ids[e.ID] = true
				if c.summary != nil {
					c.summary.Fold(e)
				}
			}
		}
		if g := s.gates[p.dir]; g != nil && g.tree == p.parentTree {
			s.gates[p.dir] = g.extend(p)
		}
	}
	return nil
}
