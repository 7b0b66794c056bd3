package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
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
	if err := chain.CheckEventNames(e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording event: %w", err)
	}
	dir := chain.Dir(e.ContractID)
	if err := s.outbox.add(dir, e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording %s event: %w", e.Type, err)
	}
	if e.Type != runner.EventApplyAuthorized {
		return nil
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
// was refused or an authorization was: their own reasons say more.
func pushFailed(err error, format string, args ...any) error {
	if err == nil || untrustedHead(err) || runner.ReasonOf(err) == runner.ApplyIndeterminate {
		return err
	}
	return runner.Errorf(runner.EvidencePushFailed, format+": %w", append(args, err)...)
}

// Drain pushes every event waiting in the outbox: each contract's in
// order, contracts independently, so one contract that cannot be
// delivered holds none of the others back. Call it at the end of a run
// (and at the start of the next) so nothing waits in the outbox. The
// error names every contract left undelivered.
func (s *Store) Drain(ctx context.Context) error {
	contracts, err := s.outbox.contracts()
	if err != nil {
		return runner.Errorf(runner.EvidencePushFailed, "draining the evidence outbox: %w", err)
	}
	var errs []error
	reason := runner.EvidencePushFailed
	for i, dir := range contracts {
		err := s.drainContract(ctx, dir)
		if err == nil {
			continue
		}
		errs = append(errs, fmt.Errorf("contract %s: %w", dir, err))
		if untrustedHead(err) || errors.Is(err, errUnreachable) || ctx.Err() != nil {
			// The repo itself failed: every other contract would wait
			// through the same retries and fail alike.
			if rest := contracts[i+1:]; len(rest) > 0 {
				errs = append(errs, fmt.Errorf("not tried: contract %s", strings.Join(rest, ", ")))
			}
			if untrustedHead(err) {
				reason = runner.ReasonOf(err)
			}
			break
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return runner.Errorf(reason, "draining the evidence outbox: %w", errors.Join(errs...))
}

// drainContract delivers a contract's outbox in order, as one batch.
func (s *Store) drainContract(ctx context.Context, dir string) error {
	s.mu.Lock()
	mu, ok := s.delivering[dir]
	if !ok {
		mu = &sync.Mutex{}
		s.delivering[dir] = mu
	}
	s.mu.Unlock()
	mu.Lock()
	defer mu.Unlock()
	pending, err := s.outbox.load(dir)
	if err != nil || len(pending) == 0 {
		return err
	}
	return s.deliver(ctx, dir, pending)
}

// deliver pushes pending, a contract's outbox in order, as one chain of
// commits (one per event) with one compare-and-swap of the branch. On
// every attempt it re-derives each event's place in its chain from the
// head it builds on, re-signs, and pushes; losing the race means fetch
// and again. An event whose id is already in its contract's directory was
// delivered before (a crash between push and outbox update, or another
// process draining the same outbox) and is dropped. The batch stops short
// of an authorization the head forbids: what comes before it is
// delivered, the authorization is dropped (it never took effect; kept, it
// would block every later event behind it), and the error says why.
func (s *Store) deliver(ctx context.Context, dir string, pending []runner.Event) error {
	conflicts, failures := 0, 0
	failed := func(err error) error {
		failures++
		if failures >= s.retry.Unreachable || ctx.Err() != nil {
			return fmt.Errorf("%w: %w", errUnreachable, err)
		}
		return sleep(ctx, s.retry.delay(failures))
	}
	for {
		head, err := s.freshHead(ctx)
		if untrustedHead(err) {
			return err
		}
		if err != nil {
			if err := failed(err); err != nil {
				return err
			}
			continue
		}
		b, done, refused, err := s.prepare(head, dir, pending)
		if err != nil {
			return err
		}
		if len(b.commits) > 0 {
			err = s.target.Push(ctx, head, b.head, b.objs)
			if err != nil {
				s.unsynced(head)
				if !errors.Is(err, gitrepo.ErrConflict) {
					err = failed(err)
				} else if conflicts++; conflicts > s.retry.Conflicts {
					err = fmt.Errorf("pushing %d event(s) of contract %s: gave up after %d conflicts: %w", len(b.commits), dir, conflicts, err)
				} else {
					err = sleep(ctx, s.retry.delay(conflicts))
				}
				if err != nil {
					return err
				}
				continue
			}
			if err := s.delivered(b); err != nil {
				return err
			}
		}
		if err := s.outbox.remove(dir, done...); err != nil {
			return err
		}
		return refused
	}
}

// prepare builds the commits that put pending on top of its contract's
// chain at head, skipping events the chain already holds. done are the
// ids of the events the batch delivers (or found delivered), refused the
// reason an authorization in pending was not written; the batch ends
// before it.
func (s *Store) prepare(head plumbing.Hash, dir string, pending []runner.Event) (b *eventCommits, done []string, refused error, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.gateHeadWith(head, dir, pending)
	if err != nil {
		return nil, nil, nil, err
	}
	b, err = newEventCommits(s.objects, head, dir)
	if err != nil {
		return nil, nil, nil, err
	}
	var added []runner.Event
	sum := g.hash
	for _, e := range pending {
		if g.holds(e.ID) {
			done = append(done, e.ID)
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
				done = append(done, e.ID)
				refused = runner.Errorf(runner.ApplyIndeterminate, "contract %s has an apply of unknown outcome (event %s); not authorizing another", e.ContractID, open.ID)
				break
			}
		}
		e.Seq, e.PrevEventHash = g.seq+int64(len(added))+1, sum
		canon, err := e.Canonical()
		if err != nil {
			return nil, nil, nil, fmt.Errorf("encoding event %s: %w", e.ID, err)
		}
		sig, err := s.cfg.Keys.SignEvent(canon)
		if err != nil {
			return nil, nil, nil, err
		}
		if err := b.add(e.Seq, e.Type, canon, sig, chain.CommitMessage(e), s.cfg.Keys.Commit, s.now()); err != nil {
			return nil, nil, nil, err
		}
		h := sha256.Sum256(canon)
		sum = hex.EncodeToString(h[:])
		added = append(added, e)
		done = append(done, e.ID)
	}
	b.events, b.sum = added, sum
	return b, done, refused, nil
}

// delivered records a pushed batch: in the witness first (this machine
// vouches for the head from now on), then as the store's head, with the
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
	if c, ok := s.chains[b.dir]; ok && c.tree == b.parentTree {
		c.tree, c.hash = b.tree, b.sum
		c.events = append(c.events, b.events...)
		if c.summary != nil {
			c.summary = c.summary.Clone()
		}
		for _, e := range b.events {
			c.ids[e.ID] = true
			if c.summary != nil {
				c.summary.Fold(e)
			}
		}
	}
	if g := s.gates[b.dir]; g != nil && g.tree == b.parentTree {
		s.gates[b.dir] = g.extend(b)
	}
	return nil
}
