package runner

import (
	"context"
	"encoding/binary"
	"hash/fnv"
	"maps"
	"slices"
	"sort"
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
const GateSummaryVersion = 2

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
	// Planned is when each of the last plannedKept plans was first
	// recorded, oldest first (plannedAt); Dropped the hashes (planHash)
	// of the plans dropped from it, sorted, each in 8 bytes big-endian,
	// so that PlannedAt knows when its answer would not be the chain's.
	Planned []PlanTime `json:",omitempty"`
	Dropped []byte     `json:",omitempty"`
	// Ledger is what RecordDecisionOutcomes reads (DecisionOutcomes).
	Ledger LedgerSummary
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

// plannedKept is how many plans' times a GateSummary keeps: a run asks
// about the plan it has just made, so these cover every run but one that
// approves a plan made again after many others, which reads the chain.
const plannedKept = 32

// PlanTime is when the plan with Digest was first recorded in Env.
type PlanTime struct {
	Env    Environment
	Digest string
	At     time.Time
}

// planHash is what Dropped keeps of a plan: enough to tell plans apart
// but for rare collisions, which only cost a read of the chain.
func planHash(env Environment, digest string) uint64 {
	h := fnv.New64a()
	h.Write([]byte(string(env) + "/" + digest))
	return h.Sum64()
}

// droppedAt is where h is, or would be, in Dropped.
func (s *GateSummary) droppedAt(h uint64) (int, bool) {
	n := len(s.Dropped) / 8
	i := sort.Search(n, func(i int) bool { return binary.BigEndian.Uint64(s.Dropped[8*i:]) >= h })
	return i, i < n && binary.BigEndian.Uint64(s.Dropped[8*i:]) == h
}

// PlannedAt is plannedAt over the folded chain when ok; otherwise the plan
// may have been dropped from the summary, and only the chain tells.
func (s *GateSummary) PlannedAt(env Environment, digest string) (at time.Time, ok bool) {
	if i := slices.IndexFunc(s.Planned, func(p PlanTime) bool { return p.Env == env && p.Digest == digest }); i >= 0 {
		return s.Planned[i].At, true
	}
	_, dropped := s.droppedAt(planHash(env, digest))
	return time.Time{}, !dropped
}

// EnvGateSummary is the gate's view of one environment.
type EnvGateSummary struct {
	// Open and AuthorizedBy are UnresolvedApply's state.
	Open         *EventRef
	AuthorizedBy string
	// Request is the pending approval request (pendingRequest).
	Request   *EventRef
	Escalated bool
	// Approvals are the approvals recorded for the environment (as their
	// data names it) by plan digest, oldest first; Approvers the event ids
	// of each approver's approvals of any digest (separation of duties).
	Approvals map[string][]Approval
	Approvers map[string][]string
	// Rejections is the first rejection of each plan digest; BadRejection
	// the first rejection whose data could not be read.
	Rejections   map[string]Rejection
	BadRejection *Rejection
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
	s.Ledger.fold(e)
	switch e.Type {
	case EventApplyAuthorized:
		es := s.env(Environment(e.Environment))
		es.Open, es.AuthorizedBy = ref(e), e.RunID
		es.Request, es.Escalated = nil, false
	case EventApplyCompleted:
		es := s.env(Environment(e.Environment))
		if es.Open != nil && es.Open.Type == EventApplyAuthorized && e.RunID == es.AuthorizedBy {
			es.Open = nil
		}
	case EventRunFailed:
		es := s.env(Environment(e.Environment))
		if es.Open != nil && es.Open.Type == EventApplyAuthorized && e.RunID == es.AuthorizedBy && !failedUnknown(e) {
			es.Open = nil
		}
	case EventApplyIndeterminate:
		s.env(Environment(e.Environment)).Open = ref(e)
	case EventApplyResolved:
		s.env(Environment(e.Environment)).Open = nil
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
			es.Approvals, es.Approvers = map[string][]Approval{}, map[string][]string{}
		}
		es.Approvals[a.PlanDigest] = append(es.Approvals[a.PlanDigest], Approval{ApprovalRecord: a, EventID: e.ID, Seq: e.Seq, Recorded: e.Time})
		es.Approvers[a.Approver] = append(es.Approvers[a.Approver], e.ID)
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
		env := Environment(e.Environment)
		if slices.ContainsFunc(s.Planned, func(t PlanTime) bool { return t.Env == env && t.Digest == p.Digest }) {
			return // its first time is kept
		}
		if _, ok := s.PlannedAt(env, p.Digest); !ok {
			return // dropped: only the chain has its first time
		}
		s.Planned = append(s.Planned, PlanTime{Env: env, Digest: p.Digest, At: e.Time})
		if len(s.Planned) <= plannedKept {
			return
		}
		old := s.Planned[0]
		s.Planned = slices.Delete(s.Planned, 0, 1)
		h := planHash(old.Env, old.Digest)
		if i, found := s.droppedAt(h); !found {
			s.Dropped = slices.Insert(s.Dropped, 8*i, binary.BigEndian.AppendUint64(nil, h)...)
		}
	}
}

// Clone returns a copy that folding does not share with s.
func (s *GateSummary) Clone() *GateSummary {
	c := &GateSummary{Folded: s.Folded, ApprovalError: s.ApprovalError,
		Imported: maps.Clone(s.Imported), UsedClaims: maps.Clone(s.UsedClaims), Planned: slices.Clone(s.Planned), Dropped: slices.Clone(s.Dropped),
		Ledger: s.Ledger.clone()}
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
		c.Envs[env] = &ce
	}
	return c
}
