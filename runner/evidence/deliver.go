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
// contract's outbox and fsynced first; only then is that outbox drained to
// the repo.
//
// For nova.apply.authorized a failed push is an error (EVIDENCE_PUSH_FAILED):
// apply must not start on an authorization nobody else can see, so the run
// stops and the outbox keeps the events for the next run. For every other
// event type a failed push is not an error: the event is durable in the
// outbox, Record returns nil, and the next Record of the contract or Drain
// delivers it. After a failed push, later ordinary events of the contract
// are only appended until an authorizing event or Drain tries again, so a
// run with the repo down is not slowed by a retry per event.
func (s *Store) Record(ctx context.Context, e runner.Event) error {
	if err := checkEventNames(e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording event: %w", err)
	}
	dir := contractDir(e.ContractID)
	if err := s.outbox.add(dir, e); err != nil {
		return runner.Errorf(runner.EventWriteFailed, "recording %s event: %w", e.Type, err)
	}
	critical := e.Type == runner.EventApplyAuthorized
	s.mu.Lock()
	degraded := s.degraded[dir]
	s.mu.Unlock()
	if degraded && !critical {
		// The push failed moments ago; retrying for every event would
		// stall the run without changing the outcome.
		return nil
	}
	err := s.drainContract(ctx, dir)
	if runner.ReasonOf(err) == runner.ApplyIndeterminate {
		return err
	}
	s.setDegraded(dir, err != nil)
	switch {
	case err == nil:
		return nil
	case critical && untrustedHead(err):
		return err
	case critical:
		return runner.Errorf(runner.EvidencePushFailed, "pushing %s event %s: %w", e.Type, e.ID, err)
	}
	s.logf("evidence: %v; the event is kept in the outbox", err)
	return nil
}

// Drain pushes every event waiting in the outbox: each contract's in
// order, contracts independently, so one contract that cannot be
// delivered holds none of the others back. Call it at the end of a run
// (and at the start of the next) so nothing waits for the next
// authorizing event. The error names every contract left undelivered.
func (s *Store) Drain(ctx context.Context) error {
	contracts, err := s.outbox.contracts()
	if err != nil {
		return runner.Errorf(runner.EvidencePushFailed, "draining the evidence outbox: %w", err)
	}
	var errs []error
	reason := runner.EvidencePushFailed
	for i, dir := range contracts {
		err := s.drainContract(ctx, dir)
		s.setDegraded(dir, err != nil)
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

func (s *Store) setDegraded(dir string, failed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if failed {
		s.degraded[dir] = true
	} else {
		delete(s.degraded, dir)
	}
}

// drainContract delivers a contract's outbox in order; it stops at the
// first event that cannot be delivered so that the chain keeps the order
// events happened in.
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
	if err != nil {
		return err
	}
	for _, e := range pending {
		if err := s.deliver(ctx, dir, e); err != nil {
			if runner.ReasonOf(err) == runner.ApplyIndeterminate {
				// A refused authorization never took effect; kept, it
				// would block every later event behind it.
				if rmErr := s.outbox.remove(dir, e.ID); rmErr != nil {
					return rmErr
				}
			}
			return err
		}
		if err := s.outbox.remove(dir, e.ID); err != nil {
			return err
		}
	}
	return nil
}

// deliver pushes one event as one commit. On every attempt it re-derives
// the event's place in its chain from the head it builds on, re-signs it,
// and pushes with compare-and-swap; losing the race means fetch and again.
// An event whose id is already in its contract's directory was delivered
// before (a crash between push and outbox update, or a redelivery) and is
// dropped.
func (s *Store) deliver(ctx context.Context, dir string, e runner.Event) error {
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
		ec, err := s.prepare(head, dir, e)
		if err != nil || ec == nil {
			return err
		}
		err = s.target.Push(ctx, head, ec.hash, ec.objs)
		if err == nil {
			return s.delivered(dir, ec)
		}
		s.unsynced(head)
		if !errors.Is(err, gitrepo.ErrConflict) {
			err = failed(err)
		} else if conflicts++; conflicts > s.retry.Conflicts {
			err = fmt.Errorf("pushing event %s: gave up after %d conflicts: %w", e.ID, conflicts, err)
		} else {
			err = sleep(ctx, s.retry.delay(conflicts))
		}
		if err != nil {
			return err
		}
	}
}

// prepare builds the commit that puts e on top of its contract's chain at
// head, or returns nil when the chain already holds e.
func (s *Store) prepare(head plumbing.Hash, dir string, e runner.Event) (*eventCommit, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.chainAt(head, dir)
	if err != nil || c.ids[e.ID] {
		return nil, err
	}
	if e.Type == runner.EventApplyAuthorized {
		// The gate may have decided on a stale copy; on the head this
		// authorization would extend, an apply of unknown outcome still
		// forbids it.
		if open := runner.UnresolvedApply(c.events, runner.Environment(e.Environment)); open != nil {
			return nil, runner.Errorf(runner.ApplyIndeterminate, "contract %s has an apply of unknown outcome (event %s); not authorizing another", e.ContractID, open.ID)
		}
	}
	e.Seq, e.PrevEventHash = int64(len(c.events))+1, c.hash
	canon, err := e.Canonical()
	if err != nil {
		return nil, fmt.Errorf("encoding event %s: %w", e.ID, err)
	}
	sig, err := s.cfg.Keys.Events.Sign(canon)
	if err != nil {
		return nil, err
	}
	ec, err := writeEventCommit(s.objects, head, dir, eventFileName(e.Seq, e.Type, "json"), canon, sig, CommitMessage(e), s.cfg.Keys.Commit, s.now())
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(canon)
	ec.event, ec.sum, ec.parentTree = e, hex.EncodeToString(sum[:]), c.tree
	return ec, nil
}

// delivered records a pushed commit: in the witness first (this machine
// vouches for the head from now on), then as the store's head, with the
// contract's chain carried forward rather than read again.
func (s *Store) delivered(dir string, ec *eventCommit) error {
	if err := s.witness(ec.hash); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.target.Keep(ec.objs)
	s.checked[ec.hash] = true // signed just now with our own key
	s.ticket++
	s.head, s.synced, s.headTicket = ec.hash, true, s.ticket
	if c, ok := s.chains[dir]; ok && c.tree == ec.parentTree {
		c.tree, c.hash = ec.tree, ec.sum
		c.events = append(c.events, ec.event)
		c.ids[ec.event.ID] = true
	}
	return nil
}
