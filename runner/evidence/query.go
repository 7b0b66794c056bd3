package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"runtime"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// chainState is a contract's verified chain at one version of its
// directory.
type chainState struct {
	tree   plumbing.Hash // the contract directory's tree it was read from
	events []runner.Event
	hash   string // sha256 of the last event file
	ids    map[string]bool
	// checks are its files' checks by (blob, signature): blobs are
	// immutable, so when the chain grows its older events are not read
	// and verified again.
	checks map[[2]plumbing.Hash]chain.Check
	// files are the chain's files in seq order at filesTree, as the chain
	// cache keeps them. A delivery carries tree, events and hash forward
	// without them, so the cache stores the state at filesTree, which the
	// files describe exactly; stored says it holds that state already.
	files     []*chain.File
	filesTree plumbing.Hash
	stored    bool
	// summary is the gate summary of events, folded once (gateHead); it
	// is shared, so it is replaced, never folded further in place.
	summary *runner.GateSummary
}

// Chain implements runner.EvidenceReader: the contract's whole verified
// chain at the head as syncOrStale finds it, followed by the contract's
// events still waiting in the outbox. A stale head only answers questions
// about an authorization that must itself be pushed, and deliver checks
// again on the fresh head before it pushes one.
//
// Events are pushed in batches, so a run's own events (the approvals it
// imported, say) are mostly still in the outbox when its gate reads the
// chain; they are part of the answer because a contract's outbox is
// delivered in order: nothing recorded after them, the authorization
// included, reaches the repo before they do. They are numbered as they
// will be written on this head.
func (s *Store) Chain(ctx context.Context, contractID string) ([]runner.Event, error) {
	dir := chain.Dir(contractID)
	pending, lines, head, err := s.pendingAtHead(ctx, dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, err := s.chainAt(head, dir)
	if err != nil {
		return nil, err
	}
	events := slices.Clone(c.events)
	_, _, err = onTop(pending, lines, int64(len(events)), c.hash, func(id string) bool { return c.ids[id] }, func(e runner.Event) { events = append(events, e) })
	if err != nil {
		return nil, err
	}
	return events, nil
}

// onTop numbers the events of pending that the chain at seq and hash does
// not hold as they will be written on top of it, gives each to add (when
// set), and returns the head they make.
//
// lines, when not nil, are the events' outbox lines (canonicalAt).
func onTop(pending []runner.Event, lines [][]byte, seq int64, hash string, holds func(string) bool, add func(runner.Event)) (int64, string, error) {
	for i, e := range pending {
		if holds(e.ID) {
			continue
		}
		seq++
		var line []byte
		if lines != nil {
			line = lines[i]
		}
		e, canon, err := canonicalAt(e, line, seq, hash)
		if err != nil {
			return 0, "", runner.Errorf(runner.EventWriteFailed, "hashing pending event %s: %w", e.ID, err)
		}
		sum := sha256.Sum256(canon)
		hash = hex.EncodeToString(sum[:])
		if add != nil {
			add(e)
		}
	}
	return seq, hash, nil
}

// ChainHead implements runner.ChainHeader. It is advisory: the store
// re-derives seq and preveventhash when it writes, so a head that moved
// meanwhile costs nothing but a renumbering, and a chain that cannot be
// read is numbered from the outbox alone rather than stop the event from
// reaching the outbox. Pending outbox events of the contract count as part
// of the chain, so numbering within a run stays continuous while the
// remote is down.
func (s *Store) ChainHead(ctx context.Context, contractID string) (int64, string, error) {
	dir := chain.Dir(contractID)
	pending, lines, err := s.outbox.load(dir)
	if err != nil {
		return 0, "", err
	}
	head, err := s.freshHead(ctx)
	if err != nil {
		s.logf("evidence: %v; numbering from the last known head", err)
		s.mu.Lock()
		head = s.head
		s.mu.Unlock()
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.gateHeadWith(head, dir, pending)
	if err != nil {
		s.logf("evidence: %v; numbering contract %s from its outbox", err, dir)
		g = &gateHead{}
	}
	return onTop(pending, lines, g.seq, g.hash, g.holds, nil)
}

// chainAt reads the chain of contract directory dir at head, or the first
// problem with it as an error carrying verify's reason code. The caller
// holds s.mu.
func (s *Store) chainAt(head plumbing.Hash, dir string) (*chainState, error) {
	tree, err := chain.ContractTree(s.objects, head, dir)
	if err != nil {
		return nil, err
	}
	old, ok := s.chains[dir]
	if !ok {
		// What an earlier process verified: when the directory has not
		// changed since, nothing of it is read again; when it grew, only
		// the new files are.
		old = s.loadChain(dir)
		if g := s.loadGateHead(dir); g != nil && g.tree == old.tree && g.hash == old.hash {
			// Its stored summary is of the same chain: a grown chain
			// folds only its new events onto it.
			old.summary = g.summary
		}
	}
	if old.tree == tree {
		s.chains[dir] = old
		return old, nil
	}
	c, err := s.readChain(dir, tree, old)
	if err != nil {
		return nil, err
	}
	s.chains[dir] = c
	return c, nil
}

// readChain reads contract directory dir's chain at its tree, reading and
// verifying only the files old has not checked. The caller holds s.mu.
func (s *Store) readChain(dir string, tree plumbing.Hash, old *chainState) (*chainState, error) {
	entries, err := chain.ContractFiles(s.objects, tree)
	if err != nil {
		return nil, err
	}
	files, findings := chain.ListChain(dir, entries)
	checks, err := s.checkFiles(files, old.checks)
	if err != nil {
		return nil, err
	}
	events, more := chain.LinkChain(dir, files)
	if findings = append(findings, more...); len(findings) > 0 {
		return nil, chain.ChainError(findings)
	}
	c := &chainState{tree: tree, events: events, ids: make(map[string]bool, len(events)), checks: checks, files: files, filesTree: tree}
	for _, e := range events {
		c.ids[e.ID] = true
	}
	if len(files) > 0 {
		c.hash = files[len(files)-1].Sum
	}
	c.extendSummary(old)
	return c, nil
}

// checkBatch is how many event files checkFiles holds in memory at once
// (a variable for a test to cut).
var checkBatch = 1024

// checkFiles checks each of files that known has no check for, and
// applies each file's check to it; it returns every file's check. The
// blobs are read on this goroutine (the store's reader is not shared),
// and the checks, a signature verification each, run on every core: they
// are most of what a chain read from nothing costs, and a hosted CI job
// starts with no state dir (BenchmarkGateFresh). The caller holds s.mu.
func (s *Store) checkFiles(files []*chain.File, known map[[2]plumbing.Hash]chain.Check) (map[[2]plumbing.Hash]chain.Check, error) {
	type job struct {
		key       [2]plumbing.Hash
		hasSig    bool
		body, sig []byte
		check     chain.Check
	}
	checks := make(map[[2]plumbing.Hash]chain.Check, len(files))
	var todo []job
	run := func() {
		_ = chain.ForEachChunk(runtime.GOMAXPROCS(0), len(todo), func(_, lo, hi int) error {
			for i := lo; i < hi; i++ {
				todo[i].check = chain.CheckFile(todo[i].body, todo[i].sig, todo[i].hasSig, s.eventKeys)
			}
			return nil
		})
		for _, j := range todo {
			checks[j.key] = j.check
		}
		todo = todo[:0]
	}
	for _, f := range files {
		key := [2]plumbing.Hash{f.Blob, f.Sig}
		if c, ok := known[key]; ok {
			checks[key] = c
			continue
		}
		body, err := s.objects.Blob(f.Blob)
		if err != nil {
			return nil, err
		}
		var sig []byte
		if f.HasSig {
			if sig, err = s.objects.Blob(f.Sig); err != nil {
				return nil, err
			}
		}
		if todo = append(todo, job{key: key, hasSig: f.HasSig, body: body, sig: sig}); len(todo) == checkBatch {
			run()
		}
	}
	run()
	for _, f := range files {
		f.Apply(checks[[2]plumbing.Hash{f.Blob, f.Sig}])
	}
	return checks, nil
}

// pendingAtHead reads the contract's outbox, then the head its chain is
// read at. The outbox comes first: an event delivered after that read is
// then in the head, and one delivered before is not pending any more.
func (s *Store) pendingAtHead(ctx context.Context, dir string) ([]runner.Event, [][]byte, plumbing.Hash, error) {
	pending, lines, err := s.outbox.load(dir)
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	head, err := s.syncOrStale(ctx, "reading the chain")
	if err != nil {
		return nil, nil, plumbing.ZeroHash, err
	}
	return pending, lines, head, nil
}
