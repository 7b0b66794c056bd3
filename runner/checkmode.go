package runner

import (
	"context"
	"slices"
	"sync"
)

// CheckEvidence is the evidence of a check-mode run (`--check`): it reads
// the real evidence and keeps what the run records in memory, in front of
// it. The stages run as they would — the approvals stage records what it
// imports, the gate reads it back and decides — so the verdict a check
// prints is the one the real command would reach, while the evidence repo,
// its outbox and every other reader see nothing of it. One mechanism for
// every mutating command: whatever records through a CheckEvidence records
// nothing.
type CheckEvidence struct {
	// Real is the evidence as it is. It is only read.
	Real EvidenceReader

	mu      sync.Mutex
	pending map[string][]Event
}

var (
	_ Recorder          = (*CheckEvidence)(nil)
	_ EvidenceReader    = (*CheckEvidence)(nil)
	_ GateSummaryReader = (*CheckEvidence)(nil)
	_ ChainHeader       = (*CheckEvidence)(nil)
	_ Flusher           = (*CheckEvidence)(nil)
)

// Record implements Recorder: the event is kept for this process only.
func (c *CheckEvidence) Record(_ context.Context, e Event) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.pending == nil {
		c.pending = map[string][]Event{}
	}
	c.pending[e.ContractID] = append(c.pending[e.ContractID], e)
	return nil
}

// Would returns what the run would have recorded for the contract, in
// order.
func (c *CheckEvidence) Would(contractID string) []Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.pending[contractID])
}

// Chain implements EvidenceReader: the real chain, then what this run
// recorded.
func (c *CheckEvidence) Chain(ctx context.Context, contractID string) ([]Event, error) {
	events, err := c.Real.Chain(ctx, contractID)
	if err != nil {
		return nil, err
	}
	return append(slices.Clip(events), c.Would(contractID)...), nil
}

// GateSummary implements GateSummaryReader: the real summary, copied, with
// this run's events folded on top, as the real store folds its outbox.
func (c *CheckEvidence) GateSummary(ctx context.Context, contractID string) (*GateSummary, error) {
	sum, err := ReadGateSummary(ctx, c.Real, contractID)
	if err != nil {
		return nil, err
	}
	sum = sum.Clone()
	for _, e := range c.Would(contractID) {
		sum.Fold(e)
	}
	return sum, nil
}

// ChainHead implements ChainHeader, so the run's events chain on from the
// real head as the real run's would.
func (c *CheckEvidence) ChainHead(ctx context.Context, contractID string) (int64, string, error) {
	if pending := c.Would(contractID); len(pending) > 0 {
		last := pending[len(pending)-1]
		h, err := last.Hash()
		if err != nil {
			return 0, "", Errorf(InternalError, "hashing event %s: %w", last.ID, err)
		}
		return last.Seq, h, nil
	}
	if h, ok := c.Real.(ChainHeader); ok {
		return h.ChainHead(ctx, contractID)
	}
	return 0, "", nil
}

// Flush implements Flusher: nothing is ever made visible.
func (c *CheckEvidence) Flush(context.Context, string) error { return nil }
