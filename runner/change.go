package runner

import (
	"context"
	"fmt"
)

// A change is what is promoted from dev to dr: the contract's content, what the registry deploys for it (the stack's and
// each module's files, by digest) and the engine that applies it, at its
// exact version. A plan is
// one environment's rendering of a change at one commit; many plans, in
// many environments and at many commits (a README edit moves the commit,
// not the change), are of one change. Promotion order and receipts are
// decided per change, so a re-plan never resets them.

// ChangeRecord is the data of nova.change.identified: the change a run
// deploys and what identifies it.
type ChangeRecord struct {
	ID string `json:"id"`
	// Contract digests the contract's content as written, whatever
	// --env runs it in (State.ContractContent); layout and comments are
	// not content.
	Contract string `json:"contract"`
	// Content digests the stack and the modules (registry.ContentDigests).
	Content map[string]string `json:"content"`
	// Engine is the engine and its exact version ("terraform 1.11.4",
	// "opentofu 1.12.6").
	Engine string `json:"engine"`
}

// ReceiptRecord is the data of nova.change.receipt: the environment
// applied this change before, and nothing since, so the run ends there.
type ReceiptRecord struct {
	Change string `json:"change"`
	// Receipt is the nova.apply.completed that applied it.
	Receipt string `json:"receipt"`
}

// ContentDigester names what a target stack deploys by content.
type ContentDigester interface {
	ContentDigests(target *TargetStack) (map[string]string, error)
}

// EngineVersioner names the engine a contract runs with and its exact
// version ("opentofu 1.12.6").
type EngineVersioner interface {
	EngineVersion(ctx context.Context, c *Contract) (string, error)
}

// IdentifyChange is the stage after schema: it names the run's change and,
// when the environment's latest apply was this very change and no drift
// check found since that what runs differs, ends the run with that
// receipt. A re-run (a review, a comment, a commit that does not
// touch the contract) then neither plans again nor asks anybody for
// anything, in dev as in dr.
type IdentifyChange struct {
	Content ContentDigester
	Engine  EngineVersioner
	// Evidence is the contract's chain; without it every run plans.
	Evidence EvidenceReader
}

var _ Stage = (*IdentifyChange)(nil)

// Name implements Stage.
func (*IdentifyChange) Name() string { return "change" }

// Run implements Stage.
func (s *IdentifyChange) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil || st.Target == nil || st.ContractContent == "" {
		return Result{}, Errorf(InternalError, "change reached without a validated contract")
	}
	if st.Operation.IsDestroy() {
		return identifyDestroy(ctx, s.Evidence, st)
	}
	if st.DeletedContract != nil {
		// The trusted base's copy of a deleted contract says what to take
		// away, never what to deploy.
		msg := fmt.Sprintf("contract %s is gone from the checkout: only its destroy runs, from the trusted base's copy (nova plan --destroy)", st.Contract.ID)
		return Result{Verdict: Fail, Summary: msg, Findings: []Finding{{Reason: ContractNotFound, Message: msg}}}, nil
	}
	content, err := s.Content.ContentDigests(st.Target)
	if err != nil {
		return Result{}, err
	}
	engine, err := s.Engine.EngineVersion(ctx, st.Contract)
	if err != nil {
		return Result{}, err
	}
	rec := ChangeRecord{Contract: st.ContractContent, Content: content, Engine: engine}
	if rec.ID, err = Digest(struct {
		Contract string            `json:"contract"`
		Content  map[string]string `json:"content"`
		Engine   string            `json:"engine"`
	}{rec.Contract, rec.Content, rec.Engine}); err != nil {
		return Result{}, Errorf(InternalError, "hashing the change: %w", err)
	}
	st.Change = &rec
	env := st.Contract.Environment
	if s.Evidence != nil {
		sum, err := ReadGateSummary(ctx, s.Evidence, st.Contract.ID)
		if err != nil {
			return Result{}, err
		}
		if es := sum.Env(env); es.Open == nil && !es.Drifted && es.LastApplied != nil && es.LastApplied.Change == rec.ID {
			return Result{Verdict: Pass, Done: true, Event: EventChangeReceipt,
				Summary: fmt.Sprintf("%s applied change %s before (%s) and nothing since: nothing to do", env, ShortDigest(rec.ID), es.LastApplied.Event),
				Data:    ReceiptRecord{Change: rec.ID, Receipt: es.LastApplied.Event}}, nil
		}
	}
	return Result{Verdict: Pass, Event: EventChangeIdentified,
		Summary: fmt.Sprintf("change %s (%s)", ShortDigest(rec.ID), engine), Data: rec}, nil
}
