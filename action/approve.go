package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/schema"
)

// approveCommand runs `nova approve` and `nova reject`: the local approval
// source, for local mode and forges without reviews or environments. The
// approver signs a claim with their own key (made on first use), and the
// claim goes through the same approvals stage a forge's claims do: only a
// member of the environment's group, who did not write the change, can
// have it recorded, and a claim is accepted once.
func approveCommand(ctx context.Context, cfg Config, env Env) error {
	data, err := checkout.ReadFile(cfg.Dir, cfg.ContractPath, schema.MaxContractBytes)
	if errors.Is(err, fs.ErrNotExist) {
		// A deleted contract's destroy is approved like any plan of it,
		// on the contract as the base's git history holds it.
		if base, berr := baseContract(ctx, cfg, nil); berr == nil {
			data, err = base, nil
		}
	}
	if err != nil {
		return failed(env, cfg, runner.Errorf(runner.ReasonOf(err), "reading the contract: %w", err))
	}
	contract, findings := schema.Parse(data, cfg.ContractPath, cfg.EnvOverride)
	if len(findings) > 0 || contract == nil {
		return failed(env, cfg, runner.Errorf(runner.ContractSchemaViolation, "the contract does not validate; run `nova validate`"))
	}
	if err := guardEvidence(ctx, cfg, env.Stderr); err != nil {
		return failed(env, cfg, err)
	}
	store, done, err := openEvidenceToDecide(ctx, cfg, env)
	if err != nil {
		return failed(env, cfg, err)
	}
	defer done()
	events, err := store.Chain(ctx, contract.ID)
	if err != nil {
		return failed(env, cfg, err)
	}
	digest, err := planToApprove(events, contract.Environment, cfg.Approve.Digest)
	if err != nil {
		return failed(env, cfg, err)
	}
	forge, err := connectForge(ctx, cfg)
	if err != nil {
		return failed(env, cfg, err)
	}
	approvers := forge.approvers
	if cfg.Forge != NoForge {
		// A forge's job has no approver's machine behind it: a key made
		// there on first use would prove only that someone ran the job.
		if err := registeredKey(ctx, approvers, cfg.Actor); err != nil {
			if runner.ReasonOf(err) != runner.ApproverKeyNotRegistered {
				return failed(env, cfg, err)
			}
			fmt.Fprintf(env.Stderr, "nova %s: %s: %v\n", cfg.Command, runner.ReasonOf(err), err)
			return verdict(runner.Fail, runner.ApproverKeyNotRegistered)
		}
	}
	decision := runner.Approve
	if cfg.Command == "reject" {
		decision = runner.Reject
	}
	// The claim's time is the command's clock, as its events' are: the
	// gate compares it with when the plan was on show.
	now := env.now()
	claim := runner.LocalClaim{
		ID: uuid.NewString(), ContractID: contract.ID, Environment: contract.Environment, PlanDigest: digest,
		Approver: cfg.Actor, Decision: decision, Reason: cfg.Approve.Reason, At: now.UTC().Truncate(time.Second),
	}
	signed, err := local.SignClaim(approverKeyDir(cfg), claim)
	if err != nil {
		return failed(env, cfg, err)
	}
	st := &runner.State{RunID: local.NewRunID(now), Dir: cfg.Dir, Commit: cfg.Commit, Contract: contract, Plan: &runner.Plan{Digest: digest}}
	var change runner.ChangeReader = localChange{dir: cfg.Dir}
	if who := runner.RollbackRequester(events, contract.Environment, digest); who != "" {
		// A rollback's requester stands where an author does.
		change = withRequester{inner: change, requester: who}
	}
	rec := recordInto(cfg, store)
	importer := &runner.ImportApprovals{
		Sources:   []runner.ApprovalSource{signedClaim{claim: signed}},
		Approvers: approvers, Claims: claimKeys(cfg, approvers),
		Change: change, Evidence: rec,
	}
	p := runner.Pipeline{Stages: []runner.Stage{importer}, Events: runner.NewEmitter(rec, cfg.Source, st.RunID, env.Now)}
	out := p.Run(ctx, st)
	drain := func() {
		if !cfg.Check {
			drainAfter(ctx, store, env)
		}
	}
	if out.Verdict != runner.Pass {
		// The refusal is evidence too, and events wait in the outbox
		// until pushed.
		drain()
		res := out.Results[len(out.Results)-1]
		fmt.Fprintf(env.Stderr, "nova %s: %s: %s\n", cfg.Command, out.Reason, res.Summary)
		return verdict(out.Verdict, out.Reason)
	}
	check, _ := out.Results[0].Data.(runner.ApprovalCheck)
	if check.Imported == 0 {
		drain()
		reason, why := runner.ApproverNotEligible, "the claim was not imported"
		if len(check.Ignored) > 0 {
			reason, why = check.Ignored[0].Reason, check.Ignored[0].Why
		}
		fmt.Fprintf(env.Stderr, "nova %s: %s: %s\n", cfg.Command, reason, why)
		return verdict(runner.Fail, reason)
	}
	// A rejection settles the decisions that led to the plan.
	backfillOutcomes(ctx, rec, p.Events, contract.ID, env)
	verb := "approval"
	if decision == runner.Reject {
		verb = "rejection"
	}
	if cfg.Check {
		fmt.Fprintf(env.Stdout, "would record the %s of plan %s for %s by %s; %s\n  %s\n", verb, runner.ShortDigest(digest), contract.Environment, signed.Claim.Approver,
			gateWouldSay(ctx, rec, forge, contract, events, digest), checkNote(cfg, wouldRecord(rec, contract.ID)))
		return nil
	}
	// An approval unblocks an apply: it must be in the repo, not only in
	// the outbox, before we say it is recorded.
	if err := store.Drain(ctx); err != nil {
		return failed(env, cfg, err)
	}
	fmt.Fprintf(env.Stdout, "recorded the %s of plan %s for %s by %s (claim %s)\n", verb, runner.ShortDigest(digest), contract.Environment, signed.Claim.Approver, claim.ID)
	return nil
}

// registeredKey refuses an approver who has no key under keys: in the
// trusted approver config.
func registeredKey(ctx context.Context, approvers runner.ApproversReader, actor string) error {
	name, err := runner.ParseLogin(actor)
	if err != nil {
		return runner.Errorf(runner.ConfigInvalid, "--as: %w", err)
	}
	cfg, err := approvers.Approvers(ctx)
	if err != nil {
		return err
	}
	if cfg.Keys[name] == "" {
		return runner.Errorf(runner.ApproverKeyNotRegistered, "%s has no key registered under keys: in %s of the trusted base; on a forge a local approval counts only when signed with the approver's registered key (or approve on the forge: a review, or a /nova approve comment)", name, runner.ApproversFile)
	}
	return nil
}

// planToApprove is the newest plan recorded for env, or the one whose
// digest starts with prefix.
func planToApprove(events []runner.Event, env runner.Environment, prefix string) (string, error) {
	for i := len(events) - 1; i >= 0; i-- {
		e := events[i]
		if e.Type != runner.EventPlanCreated || e.Environment != string(env) {
			continue
		}
		var p runner.PlanRecord
		if runner.DecodeEventData(e, &p) != nil || p.Digest == "" {
			continue
		}
		if strings.HasPrefix(p.Digest, prefix) {
			return p.Digest, nil
		}
	}
	if prefix != "" {
		return "", runner.Errorf(runner.ConfigInvalid, "no plan for %s starts with %s; run `nova plan --env %s` first", env, prefix, env)
	}
	return "", runner.Errorf(runner.ConfigInvalid, "no plan for %s is recorded yet; run `nova plan --env %s` (or `nova run`) first", env, env)
}

// signedClaim is the approval source of one local claim.
type signedClaim struct{ claim runner.SignedClaim }

func (signedClaim) Name() string { return runner.SourceLocal }

func (s signedClaim) Claims(context.Context, runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	c := s.claim.Claim
	return []runner.ApprovalClaim{{
		Approver: c.Approver, Environment: c.Environment, PlanDigest: c.PlanDigest, Decision: c.Decision, Reason: c.Reason,
		Source: runner.SourceLocal, SourceRef: c.ID, At: c.At, Signed: &s.claim,
	}}, nil
}

// localChange names the change's author from the checkout's HEAD commit:
// on one machine that is who wrote what is about to be applied.
type localChange struct{ dir string }

func (l localChange) Change(context.Context) (runner.Change, error) {
	names, err := local.HeadAuthors(l.dir)
	if err != nil {
		return runner.Change{}, err
	}
	ch := runner.Change{}
	for _, n := range names {
		ch.Authors = append(ch.Authors, runner.LoginOf(n))
	}
	return ch, nil
}
