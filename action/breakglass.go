package main

import (
	"context"
	"flag"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
	"github.com/nova-platform/nova/runner/evidence/index"
	"github.com/nova-platform/nova/runner/local"
	"github.com/nova-platform/nova/stages/schema"
	"github.com/nova-platform/nova/templates"
)

const breakGlassUsage = `nova break-glass — the emergency path around an environment's approvals

Usage:
  nova break-glass request --env E --reason TEXT [--as NAME]
          ask for a grant for E (qa, prod or dr) of the contract in --dir
  nova break-glass approve --env E --request ID --as NAME
          approve a request: two members of the breakglass group, neither
          the requester, make a grant that lasts breakglass.duration (default 4h)
  nova break-glass revoke  --env E [--grant ID] --reason TEXT --as NAME
          end a grant (default: the one that holds for E), or a request
  nova break-glass review  --env E --grant ID --note TEXT --as NAME
          record the post-incident review of a grant's uses

In a forge's workflow (docs/break-glass.md):
  nova break-glass request --env E --reason TEXT --from-event
          the requester is who dispatched the run (the event's sender)
  nova break-glass comment
          act on the /nova break-glass approve|revoke comment the
          issue_comment event delivered, as its poster

While a grant holds, the gate authorizes E's plans without their approvals
and accepts a confidence score below the threshold; never a plan with a
critical policy finding, never a destroy. Each use is recorded
(nova.breakglass.used) and its review stays open (nova evidence query
--open-reviews, nova report) until recorded. See docs/break-glass.md.
`

// BreakGlassFlags are the flags of `nova break-glass`.
type BreakGlassFlags struct {
	// Action is request, approve, revoke or review.
	Action string
	Env    runner.Environment
	// Text is the request's or revocation's reason, or the review's note.
	Text string
	// ID names the request (approve) or the grant (revoke, review).
	ID string
	// FromEvent says the actor is the forge's: who sent the workflow's
	// event, or who posted the comment it delivered. The claim is then
	// the forge's word (Source, SourceRef), as a comment approval is,
	// not a signature: the approver's key is not in a job.
	FromEvent bool
	// Comment is the comment of `nova break-glass comment`, as posted.
	Comment *runner.PostedComment
	// Command is what Comment says.
	Command runner.BreakGlassCommand
}

// breakGlassCommentAction is `nova break-glass comment`: the approve or
// revoke a /nova break-glass comment asks for.
const breakGlassCommentAction = "comment"

var breakGlassActions = []string{runner.BreakGlassRequestAction, runner.BreakGlassApproveAction, runner.BreakGlassRevokeAction, runner.BreakGlassReviewAction, breakGlassCommentAction}

// breakGlassFlags registers the flags of `nova break-glass <action>`;
// --evidence-repo is the evidence commands' own.
func (cfg *Config) breakGlassFlags(fs *flag.FlagSet, f *rawFlags, getenv func(string) string) {
	b := &cfg.BreakGlass
	fs.StringVar(&cfg.Dir, "dir", ".", "the checkout whose contract (.nova/contract.yml) the grant is for")
	fs.StringVar(&cfg.ContractPath, "contract", schema.DefaultContractPath, "contract file, relative to --dir")
	fs.StringVar(&f.env, "env", "", "the environment: qa, prod or dr (required)")
	fs.StringVar(&f.branch, "branch", "", "evidence branch (default: $NOVA_EVIDENCE_BRANCH or main)")
	fs.StringVar(&cfg.Actor, "as", "", "who acts, signing with their approver key (default: $GITHUB_ACTOR or $USER)")
	fs.StringVar(&cfg.Base, "base", getenv("NOVA_BASE"), "trusted base commit or ref the approver config is read from (default: the default branch)")
	fs.StringVar(&cfg.ApproversPath, "approvers", runner.ApproversFile, "approver config, relative to --dir, read from the trusted base")
	switch b.Action {
	case runner.BreakGlassRequestAction:
		fs.StringVar(&b.Text, "reason", "", "why the environment needs break-glass (required)")
		fs.BoolVar(&b.FromEvent, "from-event", false, "in a forge's workflow: the requester is who sent the workflow's event (workflow_dispatch), not --as")
	case runner.BreakGlassApproveAction:
		fs.StringVar(&b.ID, "request", "", "the request's id, as `nova break-glass request` printed it (required)")
	case runner.BreakGlassRevokeAction:
		fs.StringVar(&b.ID, "grant", "", "the grant or request to end (default: the grant that holds for --env)")
		fs.StringVar(&b.Text, "reason", "", "why it ends (required)")
	case runner.BreakGlassReviewAction:
		fs.StringVar(&b.ID, "grant", "", "the grant whose uses were reviewed (required)")
		fs.StringVar(&b.Text, "note", "", "what the review found, or where it is written (required)")
	}
}

// checkBreakGlass refuses what cannot be done before anything is read.
func (cfg *Config) checkBreakGlass() error {
	b := &cfg.BreakGlass
	b.Env, b.Text, b.ID = cfg.EnvOverride, strings.TrimSpace(b.Text), strings.TrimSpace(b.ID)
	if b.Action == breakGlassCommentAction {
		b.FromEvent = true
	}
	if b.FromEvent {
		if err := cfg.breakGlassFromEvent(); err != nil {
			return err
		}
	}
	switch {
	case b.Action == breakGlassCommentAction && b.Env != "" && b.Env.Autonomous():
		return runner.Errorf(runner.ConfigInvalid, "--env %s: dev needs no break-glass", b.Env)
	case b.Action == breakGlassCommentAction:
		// The environment is the request's.
	case b.Env == "" || b.Env.Autonomous():
		return runner.Errorf(runner.ConfigInvalid, "--env is required: the guarded environment (qa, prod or dr); dev needs no break-glass")
	case b.Action == runner.BreakGlassRequestAction && b.Text == "":
		return runner.Errorf(runner.ConfigInvalid, "--reason is required: say what the emergency is")
	case b.Action == runner.BreakGlassApproveAction && b.ID == "":
		return runner.Errorf(runner.ConfigInvalid, "--request is required: the id `nova break-glass request` printed")
	case b.Action == runner.BreakGlassRevokeAction && b.Text == "":
		return runner.Errorf(runner.ConfigInvalid, "--reason is required: say why the grant ends")
	case b.Action == runner.BreakGlassReviewAction && b.ID == "":
		return runner.Errorf(runner.ConfigInvalid, "--grant is required: the grant whose uses were reviewed")
	case b.Action == runner.BreakGlassReviewAction && b.Text == "":
		return runner.Errorf(runner.ConfigInvalid, "--note is required: say what the review found, or where it is written")
	}
	var err error
	if cfg.Dir, err = filepath.Abs(cfg.Dir); err != nil {
		return runner.Errorf(runner.ConfigInvalid, "--dir: %w", err)
	}
	return nil
}

// breakGlassFromEvent takes the actor, and for a comment the command,
// from the workflow's event: who the forge says sent it or posted it. An
// input or flag naming someone else is never asked.
func (cfg *Config) breakGlassFromEvent() error {
	b := &cfg.BreakGlass
	fc := cfg.ForgeAPI
	if cfg.Forge == NoForge {
		return runner.Errorf(runner.ConfigInvalid, "break-glass %s from the workflow's event runs in a forge's workflow (GITHUB_ACTIONS or GITEA_ACTIONS, with GITHUB_EVENT_PATH); elsewhere use --as", b.Action)
	}
	if b.Action != breakGlassCommentAction {
		if fc.Sender == "" {
			return runner.Errorf(runner.ConfigInvalid, "the workflow's event names no sender, so who asks for break-glass is unknown")
		}
		cfg.Actor = fc.Sender
		return nil
	}
	c := fc.Comment
	if c == nil || c.Poster == "" {
		return runner.Errorf(runner.ConfigInvalid, "`nova break-glass comment` acts on the comment of an issue_comment event, and the workflow's event delivered none")
	}
	cmd, ok := runner.ParseBreakGlassCommand(c.Body)
	if !ok && c.Action == "edited" {
		// The text an edit replaced may have been the command.
		cmd, ok = runner.ParseBreakGlassCommand(c.Previous)
	}
	if !ok {
		return runner.Errorf(runner.ConfigInvalid, "comment %d is no /nova break-glass command", c.ID)
	}
	b.Comment = &runner.PostedComment{Poster: c.Poster, Ref: fmt.Sprint(c.ID), Body: c.Body, Created: c.Created,
		Edited: c.Action != "created" || c.Updated.After(c.Created)}
	b.Command, cfg.Actor = cmd, c.Poster
	if cmd.Problem == "" {
		b.ID, b.Text = cmd.ID, cmd.Reason
	}
	return nil
}

// breakGlassCommand runs `nova break-glass <action>`. Every action is a
// claim its actor signs with the key a local approval is signed with (on a
// forge, the one registered under keys: in the trusted approver config),
// judged by the rules of runner.DecideBreakGlassApproval and recorded in
// the contract's chain, in the evidence repo before the command says it
// is done.
func breakGlassCommand(ctx context.Context, cfg Config, env Env) error {
	b := cfg.BreakGlass
	data, err := checkout.ReadFile(cfg.Dir, cfg.ContractPath, schema.MaxContractBytes)
	if err != nil {
		return failed(env, cfg, runner.Errorf(runner.ReasonOf(err), "reading the contract: %w", err))
	}
	contract, findings := schema.Parse(data, cfg.ContractPath, "")
	if len(findings) > 0 || contract == nil || contract.ID == "" {
		return failed(env, cfg, runner.Errorf(runner.ContractSchemaViolation, "the contract does not validate; run `nova validate`"))
	}
	if err := guardEvidence(ctx, cfg, env.Stderr); err != nil {
		return failed(env, cfg, err)
	}
	store, closeStore, err := openEvidenceToDecide(ctx, cfg, env)
	if err != nil {
		return failed(env, cfg, err)
	}
	defer closeStore()
	forge, err := connectForge(ctx, cfg)
	if err != nil {
		return failed(env, cfg, err)
	}
	if cfg.Forge != NoForge && !b.FromEvent {
		// As for `nova approve`: a key made in a forge's job on first use
		// proves only that someone ran the job.
		if err := registeredKey(ctx, forge.approvers, cfg.Actor); err != nil {
			if runner.ReasonOf(err) != runner.ApproverKeyNotRegistered {
				return failed(env, cfg, err)
			}
			return refuseBreakGlass(env, cfg, runner.ApproverKeyNotRegistered, err.Error())
		}
	}
	approvers, err := forge.approvers.Approvers(ctx)
	if err != nil {
		return failed(env, cfg, err)
	}
	if _, ok := approvers.Groups[runner.BreakGlassGroup]; !ok {
		return refuseBreakGlass(env, cfg, runner.BreakGlassNotInGroup, fmt.Sprintf("%s of the trusted base declares no group %s: nobody may approve break-glass", runner.ApproversFile, runner.BreakGlassGroup))
	}
	sum, err := runner.ReadGateSummary(ctx, store, contract.ID)
	if err != nil {
		return failed(env, cfg, err)
	}
	now := env.now().UTC()
	actor, err := runner.ParseLogin(cfg.Actor)
	if err != nil {
		return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "--as: %w", err))
	}
	rec := recordInto(cfg, store)
	a := breakGlassAction{cfg: cfg, env: env, store: store, rec: rec, forge: forge, approvers: approvers, sum: sum, contractID: contract.ID, actor: actor, now: now,
		em: runner.NewEmitter(rec, cfg.Source, local.NewRunID(now), env.Now)}
	switch b.Action {
	case breakGlassCommentAction:
		return a.comment(ctx)
	case runner.BreakGlassRequestAction:
		return a.request(ctx)
	case runner.BreakGlassApproveAction:
		return a.approve(ctx)
	case runner.BreakGlassRevokeAction:
		return a.revoke(ctx)
	}
	return a.review(ctx)
}

// breakGlassAction is one `nova break-glass` command's inputs, read.
type breakGlassAction struct {
	cfg   Config
	env   Env
	store *evidence.Store
	// rec is where the command records: the store, or with --check an
	// overlay that keeps the events in memory.
	rec        evidenceStore
	forge      *forgeAdapters
	approvers  *runner.ApproverConfig
	sum        *runner.GateSummary
	contractID string
	actor      runner.Login
	now        time.Time
	em         *runner.Emitter
}

// Points where Env.Pause holds a break-glass approval: after it read the
// chain and decided, before it records; and after its approval is in the
// chain, before it records the grant that approval made.
const (
	pauseApprovalDecided = "breakglass-approval-decided"
	pauseBeforeGrant     = "breakglass-before-grant"
)

func (e Env) pause(point string) {
	if e.Pause != nil {
		e.Pause(point)
	}
}

// sign makes and verifies the actor's claim: verified with the key the
// trusted config registers (or, in local mode, the one made on first use),
// so a claim nobody could check is never recorded.
func (a breakGlassAction) sign(ctx context.Context, action, request, text string) (runner.SignedBreakGlass, error) {
	claim := runner.BreakGlassClaim{ID: uuid.NewString(), ContractID: a.contractID, Environment: a.cfg.BreakGlass.Env,
		Action: action, Request: request, Actor: string(a.actor), Text: text, At: a.now.Truncate(time.Second)}
	if a.cfg.BreakGlass.FromEvent {
		// The forge says who acted, as it does for a comment approval:
		// the claim names where it says so, and Nova's event signature
		// covers it.
		claim.Source, claim.SourceRef = a.eventSource()
		return runner.SignedBreakGlass{Claim: claim}, nil
	}
	signed, err := local.SignBreakGlass(approverKeyDir(a.cfg), claim)
	if err != nil {
		return signed, err
	}
	if err := claimKeys(a.cfg, a.forge.approvers).VerifyBreakGlass(ctx, signed); err != nil {
		reason := runner.ReasonOf(err)
		if reason == runner.InternalError {
			reason = runner.ApprovalClaimInvalid
		}
		return signed, runner.Errorf(reason, "%s's break-glass claim does not verify: %w", a.actor, err)
	}
	return signed, nil
}

func (a breakGlassAction) emit(ctx context.Context, typ string, data any) (runner.Event, error) {
	return a.em.Emit(ctx, typ, a.contractID, a.cfg.BreakGlass.Env, data)
}

// done makes the recorded events visible before the command says so: a
// grant unblocks an apply, a revocation must stop one.
func (a breakGlassAction) done(ctx context.Context, line string) error {
	if a.cfg.Check {
		fmt.Fprintf(a.env.Stdout, "check, not recorded: %s\n  %s\n", line, checkNote(a.cfg, wouldRecord(a.rec, a.contractID)))
		return nil
	}
	if err := a.store.Drain(ctx); err != nil {
		return failed(a.env, a.cfg, err)
	}
	fmt.Fprintln(a.env.Stdout, line)
	return nil
}

func (a breakGlassAction) request(ctx context.Context) error {
	b := a.cfg.BreakGlass
	signed, err := a.sign(ctx, runner.BreakGlassRequestAction, "", b.Text)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	e, err := a.emit(ctx, runner.EventBreakGlassRequested, runner.BreakGlassRequest{Environment: b.Env, Requester: string(a.actor), Reason: b.Text, Claim: signed})
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	err = a.done(ctx, fmt.Sprintf("recorded break-glass request %s for %s of contract %s by %s; two other members of group %s approve it with `nova break-glass approve --env %s --request %s --as NAME` or a comment `/nova break-glass approve %s` on its issue",
		e.ID, b.Env, a.contractID, a.actor, runner.BreakGlassGroup, b.Env, e.ID, e.ID))
	if err == nil {
		a.answerNow(ctx, e.ID, "")
	}
	return err
}

func (a breakGlassAction) approve(ctx context.Context) error {
	b := a.cfg.BreakGlass
	req, err := a.find(b.ID)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	member, err := runner.IsMember(ctx, a.forge.membership, a.approvers.Groups[runner.BreakGlassGroup], a.actor)
	if err != nil {
		return failed(a.env, a.cfg, runner.Errorf(runner.ReasonOf(err), "checking whether %s is in approver group %s: %w", a.actor, runner.BreakGlassGroup, err))
	}
	reason, why, _ := runner.DecideBreakGlassApproval(req, runner.BreakGlassApprovalInput{Approver: a.actor, Member: member, Now: a.now, Duration: a.approvers.BreakGlassDuration()})
	if reason != "" {
		return a.refuse(ctx, runner.BreakGlassApproveAction, req, reason, why)
	}
	a.env.pause(pauseApprovalDecided)
	signed, err := a.sign(ctx, runner.BreakGlassApproveAction, req.Request, "")
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	e, err := a.emit(ctx, runner.EventBreakGlassApproved, runner.BreakGlassApproval{Environment: b.Env, Request: req.Request, Approver: string(a.actor), Claim: signed})
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	return a.grantDue(ctx, req.Request, e.ID)
}

// grantDue records the grant the chain's approvals of request make, once
// approval (this command's) is in the chain. The grant is decided from
// the chain as it stands after the approval was delivered, not from what
// the command read before: of two approvals at the same moment, each run
// read only the first approver's, so deciding from that would let both
// grant (or, for the first two, neither). Should both runs still record a
// grant, the chain keeps the first (BreakGlassState.DueGrant).
func (a breakGlassAction) grantDue(ctx context.Context, request, approval string) error {
	b := a.cfg.BreakGlass
	if !a.cfg.Check {
		if err := a.store.Drain(ctx); err != nil {
			return failed(a.env, a.cfg, err)
		}
	}
	sum, err := runner.ReadGateSummary(ctx, a.rec, a.contractID)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	req, err := sum.FindBreakGlass(request)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	grant := req.DueGrant(a.now, a.approvers.BreakGlassDuration())
	if grant == nil {
		defer a.answerNow(ctx, request, fmt.Sprintf("approved by @%s", a.actor))
		if req.Grant != "" {
			return a.done(ctx, fmt.Sprintf("recorded %s's approval of break-glass request %s for %s (event %s); it was granted already (grant %s, until %s)",
				a.actor, req.Request, b.Env, approval, req.Grant, req.ExpiresAt.Format(time.RFC3339)))
		}
		return a.done(ctx, fmt.Sprintf("recorded %s's approval of break-glass request %s for %s (event %s); one more member of group %s, not %s, must approve",
			a.actor, req.Request, b.Env, approval, runner.BreakGlassGroup, req.Requester))
	}
	a.env.pause(pauseBeforeGrant)
	g, err := a.emit(ctx, runner.EventBreakGlassGranted, *grant)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	defer a.answerNow(ctx, request, fmt.Sprintf("approved by @%s: granted", a.actor))
	return a.done(ctx, fmt.Sprintf("BREAK-GLASS GRANTED: grant %s for %s of contract %s, requested by %s, approved by %s, until %s",
		g.ID, b.Env, a.contractID, req.Requester, strings.Join(grant.Approvers, " and "), grant.ExpiresAt.Format(time.RFC3339)))
}

func (a breakGlassAction) revoke(ctx context.Context) error {
	b := a.cfg.BreakGlass
	var req *runner.BreakGlassState
	if b.ID == "" {
		if req = a.sum.ActiveBreakGlass(b.Env, a.now); req == nil {
			return failed(a.env, a.cfg, runner.Errorf(runner.ConfigInvalid, "no break-glass grant holds for %s of contract %s; name a request with --grant", b.Env, a.contractID))
		}
	} else {
		var err error
		if req, err = a.find(b.ID); err != nil {
			return failed(a.env, a.cfg, err)
		}
	}
	switch {
	case req.Revoked != "":
		return refuseBreakGlass(a.env, a.cfg, runner.BreakGlassRevoked, fmt.Sprintf("break-glass request %s was revoked already by %s", req.Request, req.RevokedBy))
	case req.Grant != "" && !req.HoldsAt(a.now):
		return refuseBreakGlass(a.env, a.cfg, runner.BreakGlassExpired, fmt.Sprintf("break-glass grant %s expired at %s: nothing to revoke", req.Grant, req.ExpiresAt.Format(time.RFC3339)))
	}
	// Ending an emergency only tightens: its requester may, as may anyone
	// who could have approved it.
	if a.actor != req.Requester {
		member, err := runner.IsMember(ctx, a.forge.membership, a.approvers.Groups[runner.BreakGlassGroup], a.actor)
		if err != nil {
			return failed(a.env, a.cfg, err)
		}
		if !member {
			return a.refuse(ctx, runner.BreakGlassRevokeAction, req, runner.BreakGlassNotInGroup, fmt.Sprintf("%s is neither the requester of %s nor in approver group %s", a.actor, req.Request, runner.BreakGlassGroup))
		}
	}
	signed, err := a.sign(ctx, runner.BreakGlassRevokeAction, req.Request, b.Text)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	e, err := a.emit(ctx, runner.EventBreakGlassRevoked, runner.BreakGlassRevocation{Environment: b.Env, Request: req.Request, Grant: req.Grant, RevokedBy: string(a.actor), Reason: b.Text, Claim: signed})
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	defer a.answerNow(ctx, req.Request, fmt.Sprintf("revoked by @%s: %s", a.actor, b.Text))
	return a.done(ctx, fmt.Sprintf("recorded %s %s: break-glass request %s for %s is ended by %s", runner.EventBreakGlassRevoked, e.ID, req.Request, b.Env, a.actor))
}

func (a breakGlassAction) review(ctx context.Context) error {
	b := a.cfg.BreakGlass
	req, err := a.find(b.ID)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	if req.Grant == "" || len(req.Uses) == 0 {
		return failed(a.env, a.cfg, runner.Errorf(runner.ConfigInvalid, "break-glass request %s was never used: no review is open", req.Request))
	}
	member, err := runner.IsMember(ctx, a.forge.membership, a.approvers.Groups[runner.BreakGlassGroup], a.actor)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	if !member {
		return a.refuse(ctx, runner.BreakGlassReviewAction, req, runner.BreakGlassNotInGroup, fmt.Sprintf("%s is not in approver group %s, whose members record break-glass reviews", a.actor, runner.BreakGlassGroup))
	}
	signed, err := a.sign(ctx, runner.BreakGlassReviewAction, req.Request, b.Text)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	e, err := a.emit(ctx, runner.EventBreakGlassReviewed, runner.BreakGlassReview{Environment: b.Env, Request: req.Request, Grant: req.Grant, Reviewer: string(a.actor), Note: b.Text, Claim: signed})
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	return a.done(ctx, fmt.Sprintf("recorded %s %s: the post-incident review of break-glass grant %s (%d use(s)) by %s", runner.EventBreakGlassReviewed, e.ID, req.Grant, len(req.Uses), a.actor))
}

// eventSource names where the forge said who acted: the comment, or the
// dispatched run.
func (a breakGlassAction) eventSource() (string, string) {
	b := a.cfg.BreakGlass
	if b.Comment != nil {
		if a.cfg.Forge == Gitea {
			return runner.SourceGiteaComment, b.Comment.Ref
		}
		return runner.SourceGitHubComment, b.Comment.Ref
	}
	if a.cfg.Forge == Gitea {
		return runner.SourceGiteaDispatch, a.cfg.ForgeRun
	}
	return runner.SourceGitHubDispatch, a.cfg.ForgeRun
}

// comment acts on a /nova break-glass comment as its poster: approve or
// revoke, by the same rules as the commands. The comment must be as it
// was posted. A refusal is answered on the request's issue; a command
// naming no request fails the job, saying why.
func (a breakGlassAction) comment(ctx context.Context) error {
	b := &a.cfg.BreakGlass
	cmd := b.Command
	if cmd.Problem != "" {
		return failed(a.env, a.cfg, runner.Errorf(runner.ConfigInvalid, "comment %s: %s", b.Comment.Ref, cmd.Problem))
	}
	req, err := a.sum.FindBreakGlass(cmd.ID)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	if b.Env != "" && b.Env != req.Environment {
		return failed(a.env, a.cfg, runner.Errorf(runner.ConfigInvalid, "break-glass request %s is for %s, not %s", req.Request, req.Environment, b.Env))
	}
	b.Env, b.Action, b.ID = req.Environment, cmd.Action, req.Request
	if reason, why := runner.BreakGlassCommentProblem(*b.Comment, cmd); reason != "" {
		return a.refuse(ctx, cmd.Action, req, reason, why)
	}
	if cmd.Action == runner.BreakGlassApproveAction {
		return a.approve(ctx)
	}
	return a.revoke(ctx)
}

// requestMarker marks the issue Nova opens for a request.
func requestMarker(contractID, request string) string {
	return fmt.Sprintf("<!-- nova:breakglass-request:%s:%s -->", markerValue(contractID), markerValue(request))
}

// answer keeps the request's issue saying where the request stands, with
// a line for what was just done or refused: approvers act by commenting
// there, so they read the answer there. A forge that cannot be written
// to is reported, not fatal: the evidence holds the decision.
func (a breakGlassAction) answer(ctx context.Context, req *runner.BreakGlassState, line string) {
	if a.cfg.Check || a.forge.issues == nil || req == nil {
		return
	}
	esc := templates.EscapeMarkdown
	var body strings.Builder
	fmt.Fprintf(&body, "%s\n### 🚨 Break-glass requested: <code>%s</code> of contract <code>%s</code>\n\n", requestMarker(a.contractID, req.Request), esc(string(req.Environment)), esc(a.contractID))
	fmt.Fprintf(&body, "Requested by @%s: %s\n\nRequest id: `%s`\n\n", esc(string(req.Requester)), esc(req.Reason), req.Request)
	switch {
	case req.Revoked != "":
		fmt.Fprintf(&body, "**Revoked** by @%s.\n", esc(req.RevokedBy))
	case req.Grant != "":
		var who []string
		for _, ap := range req.Approvers {
			who = append(who, "@"+esc(string(ap)))
		}
		fmt.Fprintf(&body, "**Granted** by %s until %s (grant `%s`): re-run the %s apply job; every use is recorded and opens a post-incident review.\n\nEnd it early with a comment:\n\n```\n/nova break-glass revoke %s <reason>\n```\n",
			strings.Join(who, " and "), req.ExpiresAt.UTC().Format(time.RFC3339), req.Grant, esc(string(req.Environment)), req.Request)
	default:
		approved := "nobody yet"
		if len(req.Approvals) > 0 {
			var who []string
			for _, ap := range req.Approvals {
				who = append(who, "@"+esc(string(ap.Approver)))
			}
			approved = strings.Join(who, ", ")
		}
		fmt.Fprintf(&body, "Two members of the `%s` group, not the requester, approve it with a comment (approved so far: %s):\n\n```\n/nova break-glass approve %s\n```\n",
			runner.BreakGlassGroup, approved, req.Request)
	}
	if line != "" {
		fmt.Fprintf(&body, "\nLatest: %s\n", esc(line))
	}
	title := fmt.Sprintf("Break-glass requested: contract %s in %s", a.contractID, req.Environment)
	if err := a.forge.issues.UpsertIssue(ctx, requestMarker(a.contractID, req.Request), title, body.String()); err != nil {
		fmt.Fprintf(a.env.Stderr, "nova: could not update the break-glass request's issue on the forge: %v\n", err)
	}
}

// answerNow re-reads request from the chain and answers on its issue.
func (a breakGlassAction) answerNow(ctx context.Context, request, line string) {
	if a.cfg.Check || a.forge.issues == nil {
		return
	}
	sum, err := runner.ReadGateSummary(ctx, a.rec, a.contractID)
	if err != nil {
		fmt.Fprintf(a.env.Stderr, "nova: could not read the request to answer on the forge: %v\n", err)
		return
	}
	if req, err := sum.FindBreakGlass(request); err == nil {
		a.answer(ctx, req, line)
	}
}

// find is the request id names, in the command's environment.
func (a breakGlassAction) find(id string) (*runner.BreakGlassState, error) {
	req, err := a.sum.FindBreakGlass(id)
	if err != nil {
		return nil, err
	}
	if env := a.cfg.BreakGlass.Env; req.Environment != env {
		return nil, runner.Errorf(runner.ConfigInvalid, "break-glass request %s is for %s, not %s", req.Request, req.Environment, env)
	}
	return req, nil
}

// refuse records that the rules refused what the actor signed for, and
// reports it: an attempt to approve one's own emergency, or to approve or
// review it from outside the group, is what an auditor looks for first.
func (a breakGlassAction) refuse(ctx context.Context, action string, req *runner.BreakGlassState, reason runner.Reason, why string) error {
	signed, err := a.sign(ctx, action, req.Request, a.cfg.BreakGlass.Text)
	if err != nil {
		return failed(a.env, a.cfg, err)
	}
	if _, err := a.emit(ctx, runner.EventBreakGlassRefused, runner.BreakGlassRefusal{Environment: req.Environment, Request: req.Request,
		Actor: string(a.actor), Action: action, Reason: reason, Message: why, Claim: signed}); err != nil {
		return failed(a.env, a.cfg, err)
	}
	if !a.cfg.Check {
		if err := a.store.Drain(ctx); err != nil {
			return failed(a.env, a.cfg, err)
		}
	}
	a.answerNow(ctx, req.Request, fmt.Sprintf("@%s: not counted (%s): %s", a.actor, reason, why))
	return refuseBreakGlass(a.env, a.cfg, reason, why)
}

// refuseBreakGlass reports a refusal by the break-glass rules: a verdict
// on what was asked, not a failure to evaluate it.
func refuseBreakGlass(env Env, cfg Config, reason runner.Reason, why string) error {
	fmt.Fprintf(env.Stderr, "nova break-glass %s: %s: %s\n", cfg.BreakGlass.Action, reason, why)
	return verdict(runner.Fail, reason)
}

// breakGlass makes an authorization under a grant loud where people look:
// a line on stderr always, and on a forge a comment on the pull request,
// or without one, an issue.
func (r *forgeReport) breakGlass(ctx context.Context, st *runner.State) {
	a := st.Authorization
	if a == nil || a.BreakGlass == "" || st.Contract == nil || st.Plan == nil {
		return
	}
	fmt.Fprintf(r.warn, "nova: BREAK-GLASS: plan %s of contract %s is authorized for %s under grant %s, without its normal approvals; a post-incident review is open until `nova break-glass review --env %s --grant %s`\n",
		runner.ShortDigest(st.Plan.Digest), st.Contract.ID, a.Environment, a.BreakGlass, a.Environment, a.BreakGlass)
	if r.forge == nil {
		return
	}
	marker := fmt.Sprintf("<!-- nova:breakglass:%s:%s -->", markerValue(st.Contract.ID), markerValue(a.BreakGlass))
	body := breakGlassBody(marker, st, r.runURL())
	var err error
	switch {
	case r.forge.commenter != nil && st.PullRequest > 0:
		err = r.forge.commenter.UpsertComment(ctx, marker, body)
	case r.forge.issues != nil:
		err = r.forge.issues.UpsertIssue(ctx, marker, fmt.Sprintf("Break-glass used: contract %s in %s", st.Contract.ID, a.Environment), body)
	default:
		return
	}
	if err != nil {
		fmt.Fprintf(r.warn, "nova: could not announce the break-glass use on the forge: %v\n", err)
	}
}

// breakGlassBody renders a use for people; what comes from the change or
// the request is escaped.
func breakGlassBody(marker string, st *runner.State, runURL string) string {
	esc := templates.EscapeMarkdown
	a := st.Authorization
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### 🚨 Break-glass: <code>%s</code> applied without its approvals\n\n", marker, esc(string(a.Environment)))
	fmt.Fprintf(&b, "Contract <code>%s</code>: plan <code>%s</code> was authorized under break-glass grant <code>%s</code>, not by the environment's approvers.", esc(st.Contract.ID), esc(st.Plan.Digest), esc(a.BreakGlass))
	if runURL != "" {
		fmt.Fprintf(&b, " [Workflow run](%s).", runURL)
	}
	fmt.Fprintf(&b, "\n\nA post-incident review is open until a member of the `%s` group records it:\n\n```\nnova break-glass review --env %s --grant %s --as NAME --note \"…\"\n```\n",
		runner.BreakGlassGroup, a.Environment, a.BreakGlass)
	return b.String()
}

func (e Env) now() time.Time {
	if e.Now != nil {
		return e.Now()
	}
	return time.Now()
}

// openReviewUses are the nova.breakglass.used events of every grant whose
// post-incident review is open, read from the verified index: only the
// break-glass events' data is read.
func openReviewUses(ix *index.Index, reader *gitrepo.Reader) (map[string]bool, error) {
	var events []runner.Event
	all := ix.Events()
	for i := range all {
		e := &all[i]
		if !strings.HasPrefix(e.Type, "nova.breakglass.") {
			continue
		}
		full, err := ix.Read(reader, e)
		if err != nil {
			return nil, err
		}
		events = append(events, full)
	}
	open := map[string]bool{}
	for _, grants := range runner.OpenBreakGlassReviews(events) {
		for _, g := range grants {
			for _, u := range g.Uses {
				open[u] = true
			}
		}
	}
	return open, nil
}

// isBreakGlassAction reports whether s is a `nova break-glass` action.
func isBreakGlassAction(s string) bool { return slices.Contains(breakGlassActions, s) }
