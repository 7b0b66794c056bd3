package evidence

import (
	"context"
	"errors"
	"hash/fnv"
	"os"
	"slices"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// The gate reads a contract's runner.GateSummary, not its chain: the
// summary is folded from the verified events, so it is as trustworthy as
// the chain it was folded from, and it is a few facts per environment,
// so a process that has just started reads it without decoding every
// past event. The store keeps it in the chain cache beside each chain
// (<key>.gate), under the same protection: keyed by the contract
// directory's tree, sealed with a sha256 and the event keys' fingerprint.
// A summary of another tree, or none at all, is a miss: the chain is read
// (from its own cache, or the repo) and the summary folded from it.
//
// Events still in the outbox are folded on top, except those the chain
// holds already (delivered, but not yet marked so: a crash between push
// and mark, or another process draining the same outbox). Which those are
// only the chain knows, so the store also keeps a hash of each of its
// event ids (<key>.ids), read only when events are pending: none of them
// hashing to a chain event's id proves none was delivered; a match, which
// may be a collision, is settled by reading the chain.

const gateSummaryMagic = "nova-gate-summary 1\n"

// gateHead is what a question about a contract's present needs: its
// length, last hash and gate summary at tree. chain is set when it was
// read from the chain, which also tells which events it holds; otherwise
// those are the events whose id hashes are stored for idsTree (ids, opened
// when first needed) and added, the ids of the events this store
// delivered on top of idsTree. unsaved says it is not in the state dir.
type gateHead struct {
	tree    plumbing.Hash
	seq     int64
	hash    string
	summary *runner.GateSummary
	chain   *chainState
	idsTree plumbing.Hash
	ids     *idsFile
	added   []string
	unsaved bool
}

// storedGate is a gateHead as its cache file holds it.
type storedGate struct {
	Keys string
	// Version is the runner.GateSummaryVersion that folded Summary.
	Version int
	Dir     string
	Tree    plumbing.Hash
	Seq     int64
	Hash    string
	Summary *runner.GateSummary
}

// GateSummary implements runner.GateSummaryReader: the summary of the
// contract's whole verified chain at the head as syncOrStale finds it,
// with the contract's events still waiting in the outbox folded on top,
// numbered as they will be written — the chain Chain returns, folded.
func (s *Store) GateSummary(ctx context.Context, contractID string) (*runner.GateSummary, error) {
	dir := chain.Dir(contractID)
	pending, lines, head, err := s.pendingAtHead(ctx, dir)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.gateHeadWith(head, dir, pending)
	if err != nil {
		return nil, err
	}
	sum := g.summary.Clone()
	if _, _, err := onTop(pending, lines, g.seq, g.hash, g.holds, sum.Fold); err != nil {
		return nil, err
	}
	return sum, nil
}

// holds reports whether the chain holds the event with id, of the events
// gateHeadWith was given: a stored head was used only when none of them
// is among its stored ids.
func (g *gateHead) holds(id string) bool {
	if g.chain != nil {
		return g.chain.ids[id]
	}
	return slices.Contains(g.added, id)
}

// extend carries g forward over a batch this store delivered on top of it.
func (g *gateHead) extend(b *contractCommits) *gateHead {
	next := &gateHead{tree: b.tree, seq: g.seq + int64(len(b.events)), hash: b.sum, summary: g.summary.Clone(),
		idsTree: g.idsTree, ids: g.ids, added: slices.Clone(g.added), unsaved: true}
	for _, e := range b.events {
		next.summary.Fold(e)
		next.added = append(next.added, e.ID)
	}
	return next
}

// gateHeadWith returns contract directory dir's gate head at head, to
// which pending, its outbox, is added. The stored summary answers when it
// is of the directory's tree at head, or of an older tree the directory
// only gained files since (growGateHead), and the stored id hashes show
// that the chain holds none of pending; otherwise the chain is read, as
// chainAt does. The caller holds s.mu.
func (s *Store) gateHeadWith(head plumbing.Hash, dir string, pending []runner.Event) (*gateHead, error) {
	tree, err := chain.ContractTree(s.objects, head, dir)
	if err != nil {
		return nil, err
	}
	if c, ok := s.chains[dir]; ok && c.tree == tree {
		return c.gateHead(), nil
	}
	g := s.loadGateHead(dir)
	if g != nil && g.tree == tree && s.lacksAll(dir, g, pending) {
		return g, nil
	}
	if g != nil && g.tree != tree {
		if grown := s.growGateHead(dir, g, tree); grown != nil && s.lacksAll(dir, grown, pending) {
			s.gates[dir] = grown
			return grown, nil
		}
	}
	c, err := s.chainAt(head, dir)
	if err != nil {
		return nil, err
	}
	return c.gateHead(), nil
}

// gateHead is the chain's gate head, its summary folded once.
func (c *chainState) gateHead() *gateHead {
	if c.summary == nil {
		c.summary = runner.SummarizeGate(c.events)
	}
	return &gateHead{tree: c.tree, seq: int64(len(c.events)), hash: c.hash, summary: c.summary, chain: c}
}

// extendSummary gives c, read from the repo on top of old, old's summary
// with only the events old does not hold folded in, when old's chain is a
// prefix of c's: its last event's hash is that of c's event at the same
// seq, which pins every event before it.
func (c *chainState) extendSummary(old *chainState) {
	n := len(old.events)
	if old.summary == nil || n == 0 || n > len(c.events) || c.files[n-1].Sum != old.hash {
		return
	}
	c.summary = old.summary.Clone()
	for _, e := range c.events[n:] {
		c.summary.Fold(e)
	}
}

func (s *Store) gateCachePath(dir string) string { return s.chainCachePath(dir) + ".gate" }

func (s *Store) gateIDsPath(dir string) string { return s.chainCachePath(dir) + ".ids" }

// idHash is what the stored ids keep of an event id: enough to tell ids
// apart but for rare collisions, which only cost a read of the chain.
func idHash(id string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(id))
	return h.Sum64()
}

// lacksAll reports whether g shows which of events its chain holds: those
// it delivered itself, and none of the rest, as the stored id hashes
// prove. The caller holds s.mu.
func (s *Store) lacksAll(dir string, g *gateHead, events []runner.Event) bool {
	var ask []uint64
	for _, e := range events {
		if !slices.Contains(g.added, e.ID) {
			ask = append(ask, idHash(e.ID))
		}
	}
	if len(ask) == 0 {
		return true
	}
	if !s.loadIDs(dir, g) {
		return false
	}
	held, err := g.ids.hasAny(ask)
	return err == nil && !held
}

// loadIDs opens the stored id hashes of g's idsTree for g, and reports
// whether there are any of that tree. The caller holds s.mu.
func (s *Store) loadIDs(dir string, g *gateHead) bool {
	if g.ids != nil {
		return true
	}
	f, err := openIDs(s.gateIDsPath(dir), s.eventKeys.Fingerprint(), dir, g.idsTree)
	if err != nil {
		return false
	}
	g.ids = f
	return true
}

// loadGateHead returns the stored gate head of dir, or nil when there is
// none that can be used. The caller holds s.mu.
func (s *Store) loadGateHead(dir string) *gateHead {
	if g, ok := s.gates[dir]; ok {
		return g
	}
	var sg storedGate
	err := readSealed(s.gateCachePath(dir), gateSummaryMagic, &sg)
	if err == nil && (sg.Keys != s.eventKeys.Fingerprint() || sg.Dir != dir || sg.Summary == nil || sg.Version != runner.GateSummaryVersion) {
		err = errors.New("written for other keys, another contract or by other rules")
	}
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.logf("evidence: gate summary of %s: %v; reading its chain", dir, err)
		}
		s.gates[dir] = nil
		return nil
	}
	g := &gateHead{tree: sg.Tree, seq: sg.Seq, hash: sg.Hash, summary: sg.Summary, idsTree: sg.Tree}
	s.gates[dir] = g
	return g
}

// saveCarriedGates stores the gate heads that deliveries carried forward
// and no chain read stored since. The caller holds s.mu.
func (s *Store) saveCarriedGates() {
	for dir, g := range s.gates {
		if g == nil || !g.unsaved {
			continue
		}
		var hashes []uint64
		if s.loadIDs(dir, g) {
			if stored, err := g.ids.all(); err == nil {
				hashes = stored
				for _, id := range g.added {
					hashes = append(hashes, idHash(id))
				}
			}
		}
		if err := s.writeGateHead(dir, g, hashes); err != nil {
			s.logf("evidence: storing the gate summary of %s: %v", dir, err)
		}
	}
}

// writeGateHead writes g and, unless hashes is nil, the hashes of its
// chain's event ids. The caller holds s.mu.
func (s *Store) writeGateHead(dir string, g *gateHead, hashes []uint64) error {
	w := s.writeGateFiles(dir, s.eventKeys.Fingerprint(), g, hashes)
	s.savedGateHead(dir, g, w)
	return w.err
}

// gateWrite is what writeGateFiles wrote: the summary (or not), and the
// ids when they were written too.
type gateWrite struct {
	summary bool
	ids     *idsFile
	err     error
}

// writeGateFiles writes g's summary and, unless hashes is nil, the
// hashes of its chain's event ids, under event keys keys. It touches
// nothing of the store's, so many are written at once (saveChains).
func (s *Store) writeGateFiles(dir, keys string, g *gateHead, hashes []uint64) gateWrite {
	err := writeSealed(s.gateCachePath(dir), gateSummaryMagic, storedGate{
		Keys: keys, Version: runner.GateSummaryVersion, Dir: dir, Tree: g.tree, Seq: g.seq, Hash: g.hash, Summary: g.summary})
	if err != nil {
		return gateWrite{err: err}
	}
	if hashes == nil {
		// Ids of another tree are a miss: pending events then read the
		// chain once.
		return gateWrite{summary: true}
	}
	// Written after the summary: ids of another tree are a miss, so a
	// crash in between costs a read of the chain, nothing else.
	ids, err := writeIDs(s.gateIDsPath(dir), idsHeader{Keys: keys, Dir: dir, Tree: g.tree}, hashes)
	return gateWrite{summary: true, ids: ids, err: err}
}

// savedGateHead records what writeGateFiles wrote of g: the stored gate
// head from now on, with its ids when they were written. The caller
// holds s.mu.
func (s *Store) savedGateHead(dir string, g *gateHead, w gateWrite) {
	if !w.summary {
		return
	}
	saved := &gateHead{tree: g.tree, seq: g.seq, hash: g.hash, summary: g.summary}
	if w.ids != nil {
		saved.idsTree, saved.ids = g.tree, w.ids
	}
	s.gates[dir] = saved
}
