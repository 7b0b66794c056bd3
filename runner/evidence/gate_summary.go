package evidence

import (
	"context"
	"errors"
	"os"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
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

const gateSummaryMagic = "nova-gate-summary 1\n"

// gateHead is what a question about a contract's present needs: its
// length, last hash and gate summary at tree. chain is set when it was
// read from the chain, which also tells which events it holds.
type gateHead struct {
	tree    plumbing.Hash
	seq     int64
	hash    string
	summary *runner.GateSummary
	chain   *chainState
}

// storedGate is a gateHead as its cache file holds it.
type storedGate struct {
	Keys    string
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
	dir := contractDir(contractID)
	// Read before the head, as Chain does.
	pending, err := s.outbox.load(dir)
	if err != nil {
		return nil, err
	}
	head, err := s.syncOrStale(ctx, "reading the chain")
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	g, err := s.gateHeadAt(head, dir, len(pending) > 0)
	if err != nil {
		return nil, err
	}
	sum, seq, hash := g.summary.Clone(), g.seq, g.hash
	for _, e := range pending {
		if g.holds(e.ID) {
			continue
		}
		seq++
		e.Seq, e.PrevEventHash = seq, hash
		if hash, err = e.Hash(); err != nil {
			return nil, runner.Errorf(runner.EventWriteFailed, "hashing pending event %s: %w", e.ID, err)
		}
		sum.Fold(e)
	}
	return sum, nil
}

// holds reports whether the chain holds the event with id. Only a head
// read from the chain knows; gateHeadAt reads the chain when it is asked.
func (g *gateHead) holds(id string) bool { return g.chain != nil && g.chain.ids[id] }

// gateHeadAt returns contract directory dir's gate head at head. The
// stored summary answers when it is of the directory's tree at head and
// the caller need not know which events the chain holds (withIDs: events
// in the outbox may have been delivered already); otherwise the chain is
// read, as chainAt does. The caller holds s.mu.
func (s *Store) gateHeadAt(head plumbing.Hash, dir string, withIDs bool) (*gateHead, error) {
	tree, err := contractTree(s.objects, head, dir)
	if err != nil {
		return nil, err
	}
	if c, ok := s.chains[dir]; ok && c.tree == tree {
		return c.gateHead(), nil
	}
	if !withIDs {
		if g := s.loadGateHead(dir); g != nil && g.tree == tree {
			return g, nil
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
	if old.summary == nil || n == 0 || n > len(c.events) || c.files[n-1].sum != old.hash {
		return
	}
	c.summary = old.summary.Clone()
	for _, e := range c.events[n:] {
		c.summary.Fold(e)
	}
}

func (s *Store) gateCachePath(dir string) string { return s.chainCachePath(dir) + ".gate" }

// loadGateHead returns the stored gate head of dir, or nil when there is
// none that can be used. The caller holds s.mu.
func (s *Store) loadGateHead(dir string) *gateHead {
	if g, ok := s.gates[dir]; ok {
		return g
	}
	var sg storedGate
	err := readSealed(s.gateCachePath(dir), gateSummaryMagic, &sg)
	if err == nil && (sg.Keys != s.eventKeys.Fingerprint() || sg.Dir != dir || sg.Summary == nil) {
		err = errors.New("written for other keys or another contract")
	}
	if err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			s.logf("evidence: gate summary of %s: %v; reading its chain", dir, err)
		}
		s.gates[dir] = nil
		return nil
	}
	g := &gateHead{tree: sg.Tree, seq: sg.Seq, hash: sg.Hash, summary: sg.Summary}
	s.gates[dir] = g
	return g
}

// saveGateHead stores c's gate head unless the stored one is of its tree
// already. The caller holds s.mu, and c's events are those of its files.
func (s *Store) saveGateHead(dir string, c *chainState) error {
	if g := s.loadGateHead(dir); g != nil && g.tree == c.filesTree {
		return nil
	}
	g := c.gateHead()
	err := writeSealed(s.gateCachePath(dir), gateSummaryMagic, storedGate{
		Keys: s.eventKeys.Fingerprint(), Dir: dir, Tree: c.filesTree, Seq: g.seq, Hash: g.hash, Summary: g.summary})
	if err != nil {
		return err
	}
	s.gates[dir] = &gateHead{tree: c.filesTree, seq: g.seq, hash: g.hash, summary: g.summary}
	return nil
}
