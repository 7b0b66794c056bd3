package evidence

import (
	"context"

	"github.com/nova-platform/nova/runner"
)

// PlanCleared reports whether the evidence shows that a plan passed the
// whole evaluation of the run that made it: a nova.plan.created event for
// digest, followed in the same run by a post-plan nova.confidence.computed
// in band pass. The apply job asks this before it trusts a bundle: a bundle
// is written before plan-level policy runs, so its existence proves
// nothing, and only signed evidence cannot be edited on the way.
//
// A stale copy is good enough (and used when the repo cannot be reached):
// evidence is append-only, so a plan cleared on an older head stays
// cleared, and the authorization that follows must be pushed anyway.
func (s *Store) PlanCleared(ctx context.Context, contractID string, env runner.Environment, digest string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.syncOrStale(ctx, "looking for the plan's evaluation"); err != nil {
		return false, err
	}
	r, err := s.readerAt(s.head)
	if err != nil {
		return false, err
	}
	events, err := r.Events(contractID)
	if err != nil {
		return false, err
	}
	run := ""
	for _, e := range events {
		if e.Environment != string(env) {
			continue
		}
		switch e.Type {
		case runner.EventPlanCreated:
			var p struct {
				Digest string `json:"digest"`
			}
			if decodeData(e.Data, &p) == nil && p.Digest == digest {
				run = e.RunID
			}
		case runner.EventConfidenceComputed:
			var c runner.Confidence
			if run != "" && e.RunID == run && decodeData(e.Data, &c) == nil && c.Phase == runner.PostPlan && c.Band == runner.BandPass {
				return true, nil
			}
		}
	}
	return false, nil
}
