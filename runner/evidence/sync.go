package evidence

import (
	"context"
	"runtime"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// sync fetches the branch head and checks it before anything reads or
// builds on it: it still contains the last head this state dir witnessed,
// and every commit new to this store is signed by an allowed commit key.
// It returns the head it checked; a head newer than the store's becomes
// the store's. The network I/O runs without s.mu.
func (s *Store) sync(ctx context.Context) (plumbing.Hash, error) {
	// Read before the fetch: a head witnessed later may have been pushed
	// after the fetch looked, and missing it would prove nothing.
	witnessed, err := s.lastWitnessed()
	if err != nil {
		return plumbing.ZeroHash, err
	}
	s.mu.Lock()
	s.ticket++
	ticket := s.ticket
	s.mu.Unlock()

	f, err := s.target.Fetch(ctx, s.readable)
	if err != nil {
		s.unsynced(plumbing.ZeroHash)
		return plumbing.ZeroHash, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	err = s.outbox.locked(func() error { return s.target.Install(f) })
	if err == nil {
		s.objects.Use(s.target.Objects())
		err = s.checkHead(f.Head, witnessed)
	}
	if err != nil {
		// The last good head is no longer known to be current: the next
		// write must fetch (and check) again, not build on it.
		s.synced = false
		return plumbing.ZeroHash, err
	}
	if ticket > s.headTicket {
		s.head, s.synced, s.headTicket = f.Head, true, ticket
	}
	return f.Head, nil
}

// readable reports whether the store can read commit h already, so a
// fetch need not download it.
func (s *Store) readable(h plumbing.Hash) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.objects.Has(h)
}

// unsynced records that the remote is no longer known to be at head (any
// head when zero): a push from it failed, or a fetch did.
func (s *Store) unsynced(head plumbing.Hash) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if head.IsZero() || s.head == head {
		s.synced = false
	}
}

// freshHead is the head to build on: the store's own while it is known to
// be current, else a fetched one.
func (s *Store) freshHead(ctx context.Context) (plumbing.Hash, error) {
	s.mu.Lock()
	head, synced := s.head, s.synced
	s.mu.Unlock()
	if synced {
		return head, nil
	}
	return s.sync(ctx)
}

// syncOrStale fetches the head for a gate question, falling back to the
// last known head when the repo cannot be reached (what is being decided
// must itself be pushed later, and deliver checks again on the fresh head,
// so a stale answer cannot let it through). A head refused as rewritten or
// carrying a commit no allowed key signed is not "unreachable": answering
// from the older head would hide exactly what the refusal is about.
func (s *Store) syncOrStale(ctx context.Context, what string) (plumbing.Hash, error) {
	head, err := s.sync(ctx)
	if err == nil {
		return head, nil
	}
	if untrustedHead(err) {
		return plumbing.ZeroHash, err
	}
	s.logf("evidence: %v; %s against the last known head", err, what)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.head, nil
}

// Sync fetches the evidence repo and checks its head as every write does.
// Commands that must not act on a stale copy (resolving an indeterminate
// apply) call it first; an unreachable repo is EVIDENCE_REPO_UNAVAILABLE.
func (s *Store) Sync(ctx context.Context) error {
	_, err := s.sync(ctx)
	if err != nil && !untrustedHead(err) {
		return runner.Errorf(runner.EvidenceRepoUnavailable, "reading the evidence repo: %w", err)
	}
	return err
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

// checkHead walks head's first-parent history back to the last witnessed
// head. A head that does not contain it was rewritten: the store refuses
// to paper over a force-push with fresh signed commits. Every commit on
// the way up to one already checked must be signed by an allowed key:
// event signatures alone do not protect the gate, since anyone who can
// push could delete a contract's last event (an indeterminate apply) or
// copy another contract's signed events, and the store would then sign an
// authorization on top. The walk is a few commits normally, the whole
// history on a store's first sync without a witness, as a hosted CI job
// starts: the commits are read in order and their signatures checked on
// every core (BenchmarkFirstSync). The caller holds s.mu.
func (s *Store) checkHead(head, witnessed plumbing.Hash) error {
	checking := true
	var unsigned error
	var batch []*gitrepo.Commit
	// check finds the first commit of the batch, newest first, that no
	// allowed key signed; from there on the walk only looks for the
	// witness: a rewrite is the graver news.
	check := func() {
		errs := make([]error, len(batch))
		_ = chain.ForEachChunk(runtime.GOMAXPROCS(0), len(batch), func(_, lo, hi int) error {
			for i := lo; i < hi; i++ {
				if reason, err := s.commitKeys.CheckCommit(batch[i].Signed, batch[i].PGPSignature); err != nil {
					errs[i] = runner.Errorf(reason, "evidence commit %s: %w; not reading or extending a history that holds it", short(batch[i].Hash), err)
				}
			}
			return nil
		})
		for _, err := range errs {
			if err != nil {
				unsigned, checking = err, false
				break
			}
		}
		batch = batch[:0]
	}
	for h := head; h != witnessed; {
		if h.IsZero() {
			return runner.Errorf(runner.EvidenceHistoryRewritten,
				"evidence repo head %s does not contain %s, which this machine pushed: the history was rewritten (see %s)",
				shortOrNone(head), short(witnessed), WitnessFile(s.cfg.StateDir))
		}
		checking = checking && !s.checked[h]
		if !checking && witnessed.IsZero() {
			break
		}
		c, err := s.objects.Commit(h)
		if err != nil {
			return err
		}
		if checking {
			if batch = append(batch, c); len(batch) == checkBatch {
				check()
			}
		}
		h = c.FirstParent()
	}
	if len(batch) > 0 {
		check()
	}
	if unsigned != nil {
		return unsigned
	}
	if !head.IsZero() {
		s.checked[head] = true
	}
	return nil
}

func shortOrNone(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return short(h)
}

// lastWitnessed is the newest head this state dir witnessed (zero: none).
func (s *Store) lastWitnessed() (last plumbing.Hash, err error) {
	err = s.outbox.locked(func() (err error) {
		last, err = lastWitness(WitnessFile(s.cfg.StateDir))
		return err
	})
	return last, err
}

// witness records a pushed head, so a later rewrite that drops it shows.
func (s *Store) witness(head plumbing.Hash) error {
	return s.outbox.locked(func() error { return appendWitness(WitnessFile(s.cfg.StateDir), head) })
}
