package runner

import (
	"context"
	"maps"
	"slices"
	"time"
)

// GateSummaryReader is implemented by evidence readers that keep each
// contract's GateSummary as its chain grows (the evidence repo keeps it
// beside the verified chain): the gate then reads what its rules need
// rather than every past event, so its cost does not grow with the
// contract's history. The same guarantee as Chain holds: a summary of the
// whole verified chain, followed by the contract's pending events, or an
// error with the reason.
type GateSummaryReader interface {
	GateSummary(ctx context.Context, contractID string) (*GateSummary, error)
}

// ReadGateSummary returns the contract's gate summary from r, folding its
// chain here when r does not keep one.
func ReadGateSummary(ctx context.Context, r EvidenceReader, contractID string) (*GateSummary, error) {
	if sr, ok := r.(GateSummaryReader); ok {
		return sr.GateSummary(ctx, contractID)
	}
	events, err := r.Chain(ctx, contractID)
	if err != nil {
		return nil, err
	}
	return SummarizeGate(events), nil
}

// GateSummaryVersion names what Fold keeps and how. A store that keeps
// summaries across processes keeps this with them and folds afresh when it
// differs: bump it whenever Fold keeps something new or folds an event
// differently, or a summary folded by the old rules would be read as if
// the new ones had made it.
const GateSummaryVersion = 8

// GateSummary is what the gate's rules read of one contract's chain, and
// what the approvals stage and the decision ledger read of it, folded
// event by event (Fold): folding a chain in one go and folding a
// prefix, keeping the summary and folding the rest later give the same
// summary, which is what lets a store keep it instead of the chain. Its
// fields are exported so a store can persist it; only Fold changes it.
type GateSummary struct {
	// Folded counts the events folded; At fields are positions in it,
	// which is all the rules compare.
	Folded int64
	// ApprovalError is the first nova.approval.recorded whose data could
	// not be read: the gate decides on no part of a record it cannot read.
	ApprovalError string
	Envs          map[Environment]*EnvGateSummary
	// Imported and UsedClaims are what the approvals stage reads of the
	// chain (importedRefs): the decisions imported, by
	// environment/source/reference, and the signed claims they used. They
	// grow with the approvals, as Approvals does.
	Imported   map[string]bool
	UsedClaims map[string]bool
	// Ledger is what RecordDecisionOutcomes reads (DecisionOutcomes).
	Ledger LedgerSummary
	// BreakGlass is every break-glass request by its event id
	// (breakglass.go).
	BreakGlass map[string]*BreakGlassState `json:",omitempty"`
}

// DecisionOutcomes is DecisionOutcomes over the folded chain, with the
// environment of each decision.
func (s *GateSummary) DecisionOutcomes() ([]OutcomeRecord, map[string]Environment) {
	out := s.Ledger.outcomes()
	envOf := map[string]Environment{}
	for _, d := range s.Ledger.Decisions {
		envOf[d.ID] = d.Env
	}
	return out, envOf
}

// PlannedAt is when the plan with digest went on show in env for pull
// request pr (0: runs of no pull request): the first of the run of plans
// of that digest that the pull request's latest plans in env are (ok
// false when its latest plan is another). A decision made before then
// cannot have been about this plan, whatever it named: when a digest
// comes back after another plan of the same pull request (a branch pushed
// away and back), its clock starts again, so an approval given while
// another plan was on show never carries over to it. Each pull request
// has its own plans on show: another one's plan in between changes
// nothing of what this one's approvers saw.
func (s *GateSummary) PlannedAt(env Environment, pr int64, digest string) (at time.Time, ok bool) {
	cur := s.Env(env).Current[pr]
	if cur == nil || cur.Digest != digest {
		return time.Time{}, false
	}
	return cur.Since, true
}

// ShownPlan is the plan on show in an environment and since when.
type ShownPlan struct {
	Digest string
	Since  time.Time
}

// EnvGateSummary is the gate's view of one environment.
type EnvGateSummary struct {
	// Open and AuthorizedBy are UnresolvedApply's state.
	Open         *EventRef
	AuthorizedBy string
	// AuthorizedChange is the change of the open authorization; Applied
	// every change an apply completed (change → its nova.apply.completed),
	// LastApplied the latest of them: what the environment runs now.
	AuthorizedChange string            `json:",omitempty"`
	Applied          map[string]string `json:",omitempty"`
	LastApplied      *AppliedChange    `json:",omitempty"`
	// AuthorizedOp is the open authorization's operation; Destroyed the
	// latest destroy that completed (the change it took away, and the
	// event), after which the environment runs nothing of the contract.
	AuthorizedOp Operation      `json:",omitempty"`
	Destroyed    *AppliedChange `json:",omitempty"`
	// AuthorizedPR is the pull request of the open authorization's run;
	// Hold the pull request that holds the environment (PullRequestLock):
	// the latest whose authorized apply completed, until a release names
	// the event that took it.
	AuthorizedPR int64            `json:",omitempty"`
	Hold         *PullRequestHold `json:",omitempty"`
	// Drifted is true when a drift check found, since the last apply,
	// that what runs no longer matches it: the change must be applied
	// again, so no receipt answers for it.
	Drifted bool `json:",omitempty"`
	// Request is the pending approval request (pendingRequest): the
	// environment's clock, which escalates and freezes whatever plan is
	// on show. Requested is when each plan digest was first asked for:
	// the time a plan's own request shows, which another pull request's
	// plan of the contract must not lend it.
	Request   *EventRef
	Escalated bool
	Requested map[string]time.Time `json:",omitempty"`
	// Approvals are the approvals recorded for the environment (as their
	// data names it) by plan digest, oldest first; Approvers the event ids
	// of each approver's approvals of any digest (separation of duties).
	Approvals map[string][]Approval
	Approvers map[Login][]string
	// Current is the plan on show for each pull request (PlannedAt).
	Current map[int64]*ShownPlan `json:",omitempty"`
	// Rejections is the first rejection of each plan digest; BadRejection
	// the first rejection whose data could not be read.
	Rejections   map[string]Rejection
	BadRejection *Rejection
}

// AppliedChange is a change an environment applied, and the receipt:
// its event and that event's seq in the chain.
type AppliedChange struct {
	Change string
	Event  string
	Seq    int64 `json:",omitempty"`
}

// EventRef names an event the rules point at.
type EventRef struct {
	ID    string
	Type  string
	RunID string
	Time  time.Time
}

// Rejection is a nova.approval.rejected at position At of the chain, or,
// with Err, one that could not be read.
type Rejection struct {
	At     int64
	Record ApprovalRecord
	Err    string
}

// SummarizeGate folds a whole chain.
func SummarizeGate(events []Event) *GateSummary {
	s := &GateSummary{}
	for _, e := range events {
		s.Fold(e)
	}
	return s
}

func ref(e Event) *EventRef { return &EventRef{ID: e.ID, Type: e.Type, RunID: e.RunID, Time: e.Time} }

// env returns env's summary, made when missing.
func (s *GateSummary) env(env Environment) *EnvGateSummary {
	if s.Envs == nil {
		s.Envs = map[Environment]*EnvGateSummary{}
	}
	es, ok := s.Envs[env]
	if !ok {
		es = &EnvGateSummary{}
		s.Envs[env] = es
	}
	return es
}

// Env returns env's summary; an environment the chain never named has an
// empty one.
func (s *GateSummary) Env(env Environment) *EnvGateSummary {
	if es, ok := s.Envs[env]; ok {
		return es
	}
	return &EnvGateSummary{}
}

// Fold adds the next event of the chain. The rules it keeps are those of
// UnresolvedApply, Approvals, pendingRequest and the rejection scan of
// decideGate, then importedRefs, plannedAt and DecisionOutcomes, each
// event read the way they read it.
func (s *GateSummary) Fold(e Event) {
	s.Folded++
	s.foldImports(e)
	s.foldBreakGlass(e)
	s.Ledger.fold(e)
	switch e.Type {
	case EventApplyAuthorized:
		es := s.env(Environment(e.Environment))
		es.Open, es.AuthorizedBy = ref(e), e.RunID
		es.Request, es.Escalated = nil, false
		var a Authorization
		es.AuthorizedChange, es.AuthorizedPR, es.AuthorizedOp = "", 0, ""
		if DecodeEventData(e, &a) == nil {
			es.AuthorizedChange, es.AuthorizedPR, es.AuthorizedOp = a.Change, a.PullRequest, a.Operation
		}
	case EventApplyCompleted:
		es := s.env(Environment(e.Environment))
		if e.RunID != es.AuthorizedBy {
			return
		}
		if es.Open != nil && es.Open.Type == EventApplyAuthorized {
			es.Open = nil
		}
		if es.AuthorizedOp.IsDestroy() {
			es.decommissioned(e)
			return
		}
		es.hold(e)
		es.AuthorizedPR = 0
		if c := es.AuthorizedChange; c != "" {
			if es.Applied == nil {
				es.Applied = map[string]string{}
			}
			es.Applied[c] = e.ID
			es.LastApplied = &AppliedChange{Change: c, Event: e.ID, Seq: e.Seq}
			es.AuthorizedChange = ""
		}
		es.Drifted = false
	case EventDriftDetected:
		s.env(Environment(e.Environment)).Drifted = true
	case EventDriftClear:
		s.env(Environment(e.Environment)).Drifted = false
	case EventRunFailed:
		es := s.env(Environment(e.Environment))
		if es.Open != nil && es.Open.Type == EventApplyAuthorized && e.RunID == es.AuthorizedBy && !failedUnknown(e) {
			es.Open, es.AuthorizedChange, es.AuthorizedPR, es.AuthorizedOp = nil, "", 0, ""
		}
	case EventApplyIndeterminate:
		s.env(Environment(e.Environment)).Open = ref(e)
	case EventApplyResolved:
		es := s.env(Environment(e.Environment))
		es.Open = nil
		// Someone established what the apply of unknown outcome did: the
		// change it was authorized for runs there only if it applied.
		var r Resolution
		applied := DecodeEventData(e, &r) == nil && r.Outcome == ResolvedApplied
		if applied && es.AuthorizedOp.IsDestroy() {
			es.decommissioned(e)
			return
		}
		es.AuthorizedOp = ""
		if applied {
			es.hold(e)
		}
		if c := es.AuthorizedChange; c != "" && applied {
			if es.Applied == nil {
				es.Applied = map[string]string{}
			}
			es.Applied[c] = e.ID
			es.LastApplied = &AppliedChange{Change: c, Event: e.ID, Seq: e.Seq}
		}
		es.AuthorizedChange, es.AuthorizedPR = "", 0
	case EventLockReleased:
		es := s.env(Environment(e.Environment))
		var r LockRelease
		// A release names the hold it ends, so one recorded late never
		// ends a hold taken after it was decided on.
		if es.Hold != nil && DecodeEventData(e, &r) == nil && r.Hold == es.Hold.Event {
			es.Hold = nil
		}
	case EventApprovalRejected:
		es := s.env(Environment(e.Environment))
		es.Request, es.Escalated = nil, false
		var r ApprovalRecord
		if err := DecodeEventData(e, &r); err != nil {
			if es.BadRejection == nil {
				es.BadRejection = &Rejection{At: s.Folded, Err: "reading rejection " + e.ID + ": " + err.Error()}
			}
			return
		}
		if _, ok := es.Rejections[r.PlanDigest]; !ok {
			if es.Rejections == nil {
				es.Rejections = map[string]Rejection{}
			}
			es.Rejections[r.PlanDigest] = Rejection{At: s.Folded, Record: r}
		}
	case EventApprovalRequested:
		es := s.env(Environment(e.Environment))
		var r RequestRecord
		_ = DecodeEventData(e, &r)
		if es.Request == nil || (r.Supersedes != "" && r.Supersedes == es.Request.ID) {
			es.Request, es.Escalated = ref(e), false
		}
		if _, ok := es.Requested[r.PlanDigest]; r.PlanDigest != "" && !ok {
			if es.Requested == nil {
				es.Requested = map[string]time.Time{}
			}
			es.Requested[r.PlanDigest] = e.Time
		}
	case EventApprovalEscalated:
		es := s.env(Environment(e.Environment))
		var r EscalationRecord
		if es.Request != nil && DecodeEventData(e, &r) == nil && r.Request == es.Request.ID {
			es.Escalated = true
		}
	case EventApprovalRecorded:
		var a ApprovalRecord
		if err := DecodeEventData(e, &a); err != nil {
			if s.ApprovalError == "" {
				s.ApprovalError = "reading approval " + e.ID + ": " + err.Error()
			}
			return
		}
		es := s.env(a.Environment)
		if es.Approvals == nil {
			es.Approvals, es.Approvers = map[string][]Approval{}, map[Login][]string{}
		}
		// Recorded before logins were canonical, a name may differ from
		// its owner's other approvals in case only.
		a.Approver = string(LoginOf(a.Approver))
		es.Approvals[a.PlanDigest] = append(es.Approvals[a.PlanDigest], Approval{ApprovalRecord: a, EventID: e.ID, Seq: e.Seq, Recorded: e.Time})
		es.Approvers[Login(a.Approver)] = append(es.Approvers[Login(a.Approver)], e.ID)
	}
}

// hold records that the authorized run's pull request, if it had one,
// holds the environment from e on: the apply that completed it, or the
// resolution that found it applied. A run without a pull request leaves
// the hold as it was.
func (es *EnvGateSummary) hold(e Event) {
	if es.AuthorizedPR > 0 {
		es.Hold = &PullRequestHold{PullRequest: es.AuthorizedPR, Change: es.AuthorizedChange, Event: e.ID}
	}
}

// foldImports keeps what importedRefs and plannedAt read of e, read the
// way they read it.
func (s *GateSummary) foldImports(e Event) {
	switch e.Type {
	case EventApprovalRecorded, EventApprovalRejected:
		var r ApprovalRecord
		if DecodeEventData(e, &r) != nil {
			return
		}
		if s.Imported == nil {
			s.Imported = map[string]bool{}
		}
		s.Imported[string(r.Environment)+"/"+r.Source+"/"+r.SourceRef] = true
		if r.Claim != nil {
			if s.UsedClaims == nil {
				s.UsedClaims = map[string]bool{}
			}
			s.UsedClaims[r.Claim.Claim.ID] = true
		}
	case EventPlanCreated:
		var p PlanRecord
		if DecodeEventData(e, &p) != nil {
			return
		}
		es := s.env(Environment(e.Environment))
		if cur := es.Current[p.PullRequest]; cur == nil || cur.Digest != p.Digest {
			if es.Current == nil {
				es.Current = map[int64]*ShownPlan{}
			}
			es.Current[p.PullRequest] = &ShownPlan{Digest: p.Digest, Since: e.Time}
		}
	}
}

// Clone returns a copy that folding does not share with s.
func (s *GateSummary) Clone() *GateSummary {
	c := &GateSummary{Folded: s.Folded, ApprovalError: s.ApprovalError,
		Imported: maps.Clone(s.Imported), UsedClaims: maps.Clone(s.UsedClaims),
		Ledger: s.Ledger.clone(), BreakGlass: cloneBreakGlass(s.BreakGlass)}
	if s.Envs != nil {
		c.Envs = make(map[Environment]*EnvGateSummary, len(s.Envs))
	}
	for env, es := range s.Envs {
		ce := *es
		ce.Approvals = maps.Clone(es.Approvals)
		for d, as := range ce.Approvals {
			ce.Approvals[d] = slices.Clip(as)
		}
		ce.Approvers = maps.Clone(es.Approvers)
		for a, ids := range ce.Approvers {
			ce.Approvers[a] = slices.Clip(ids)
		}
		ce.Rejections = maps.Clone(es.Rejections)
		ce.Applied = maps.Clone(es.Applied)
		ce.Requested = maps.Clone(es.Requested)
		ce.Current = maps.Clone(es.Current)
		c.Envs[env] = &ce
	}
	return c
}
