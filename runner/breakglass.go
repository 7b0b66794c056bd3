package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Break-glass is the sanctioned emergency path: someone asks for it
// (nova.breakglass.requested), two members of the breakglass approver
// group other than the requester approve (nova.breakglass.approved each),
// and the second approval makes a grant (nova.breakglass.granted) that
// lasts a bounded time unless revoked (nova.breakglass.revoked). While it
// holds, the gate authorizes a plan of that environment without its
// normal approvals, and the confidence stages accept a score below the
// threshold; never a plan with a critical policy finding, never a
// destroy. Every use is recorded (nova.breakglass.used) and opens a
// post-incident review that stays open until someone records it
// (nova.breakglass.reviewed). Everything is in the contract's chain, so
// the gate decides from the evidence alone, as it does for approvals.

// BreakGlassGroup is the approver group whose members approve break-glass
// requests; it is declared in the trusted approver config like the others.
const BreakGlassGroup = "breakglass"

// How long a grant lasts: DefaultBreakGlassDuration unless the approver
// config says otherwise (breakglass.duration), never more than
// MaxBreakGlassDuration. An emergency that outlasts a shift is no longer
// one: it needs the normal approvals, or a new request someone answers
// for again.
const (
	DefaultBreakGlassDuration = 4 * time.Hour
	MaxBreakGlassDuration     = 12 * time.Hour
)

// Break-glass actions, as a signed claim names them.
const (
	BreakGlassRequestAction = "request"
	BreakGlassApproveAction = "approve"
	BreakGlassRevokeAction  = "revoke"
	BreakGlassReviewAction  = "review"
)

// BreakGlassConfig is the breakglass: section of the approver config.
type BreakGlassConfig struct {
	// Duration is how long a grant lasts, as Go writes durations ("2h").
	Duration string `yaml:"duration"`
}

// check refuses a duration that is not one, or is outside (0, max].
func (b BreakGlassConfig) check() error {
	if b.Duration == "" {
		return nil
	}
	d, err := time.ParseDuration(b.Duration)
	if err != nil {
		return Errorf(ApproversInvalid, "%s: breakglass.duration %q is not a duration such as 2h or 90m", ApproversFile, b.Duration)
	}
	if d <= 0 || d > MaxBreakGlassDuration {
		return Errorf(ApproversInvalid, "%s: breakglass.duration %s is outside (0, %s]: a grant is bounded", ApproversFile, d, MaxBreakGlassDuration)
	}
	return nil
}

// BreakGlassDuration is how long a grant made under c lasts.
func (c *ApproverConfig) BreakGlassDuration() time.Duration {
	if d, err := time.ParseDuration(c.BreakGlass.Duration); err == nil && d > 0 && d <= MaxBreakGlassDuration {
		return d
	}
	return DefaultBreakGlassDuration
}

// BreakGlassClaim is what a person signs to request, approve, revoke or
// review break-glass, with the same key a local approval is signed with:
// the chain then shows who did it, not only who ran the command.
type BreakGlassClaim struct {
	ID          string      `json:"id"`
	ContractID  string      `json:"contractId"`
	Environment Environment `json:"environment"`
	Action      string      `json:"action"`
	// Request is the request the claim is about (empty for a request).
	Request string `json:"request,omitempty"`
	Actor   string `json:"actor"`
	// Text is the request's or revocation's reason, or the review's note.
	Text string    `json:"text,omitempty"`
	At   time.Time `json:"at"`
	// Source, when set, says the forge named the actor (a dispatch's
	// sender, a comment's poster) and SourceRef where: the claim is the
	// forge's word, unsigned, like a comment approval. Empty: the claim
	// is signed with the actor's approver key.
	Source    string `json:"source,omitempty"`
	SourceRef string `json:"sourceRef,omitempty"`
}

// Where a break-glass claim the forge vouches for comes from
// (BreakGlassClaim.Source): a comment (SourceGitHubComment,
// SourceGiteaComment) or a workflow_dispatch run.
const (
	SourceGitHubDispatch = "github-dispatch"
	SourceGiteaDispatch  = "gitea-dispatch"
)

// SignedBreakGlass is a claim and its signature (base64 DER, as cosign
// writes).
type SignedBreakGlass struct {
	Claim     BreakGlassClaim `json:"claim"`
	Signature string          `json:"signature"`
}

// BreakGlassVerifier checks a break-glass claim's signature with its
// actor's key.
type BreakGlassVerifier interface {
	VerifyBreakGlass(ctx context.Context, c SignedBreakGlass) error
}

// BreakGlassRequest is the data of nova.breakglass.requested.
type BreakGlassRequest struct {
	Environment Environment      `json:"environment"`
	Requester   string           `json:"requester"`
	Reason      string           `json:"reason"`
	Claim       SignedBreakGlass `json:"claim"`
}

// BreakGlassApproval is the data of nova.breakglass.approved.
type BreakGlassApproval struct {
	Environment Environment      `json:"environment"`
	Request     string           `json:"request"`
	Approver    string           `json:"approver"`
	Claim       SignedBreakGlass `json:"claim"`
}

// BreakGlassGrant is the data of nova.breakglass.granted: two approvals
// made the request a grant, until ExpiresAt.
type BreakGlassGrant struct {
	Environment Environment `json:"environment"`
	Request     string      `json:"request"`
	Requester   string      `json:"requester"`
	Reason      string      `json:"reason"`
	Approvers   []string    `json:"approvers"`
	// Approvals are the nova.breakglass.approved events that granted.
	Approvals []string  `json:"approvals"`
	GrantedAt time.Time `json:"grantedAt"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// BreakGlassRevocation is the data of nova.breakglass.revoked: it ends a
// grant, or a request before it is granted.
type BreakGlassRevocation struct {
	Environment Environment      `json:"environment"`
	Request     string           `json:"request"`
	Grant       string           `json:"grant,omitempty"`
	RevokedBy   string           `json:"revokedBy"`
	Reason      string           `json:"reason"`
	Claim       SignedBreakGlass `json:"claim"`
}

// BreakGlassUse is the data of nova.breakglass.used: a plan authorized
// under a grant, and what the grant stood in for.
type BreakGlassUse struct {
	Environment Environment `json:"environment"`
	Request     string      `json:"request"`
	Grant       string      `json:"grant"`
	PlanDigest  string      `json:"planDigest"`
	Change      string      `json:"change,omitempty"`
	PullRequest int64       `json:"pullRequest,omitempty"`
	Requester   string      `json:"requester"`
	Approvers   []string    `json:"approvers"`
	ExpiresAt   time.Time   `json:"expiresAt"`
	// Waived names what the grant stood in for: "approval" (the
	// environment's normal approvals), "confidence" (a score below the
	// threshold).
	Waived []string `json:"waived"`
}

// BreakGlassReview is the data of nova.breakglass.reviewed: the
// post-incident review of a grant's uses is recorded.
type BreakGlassReview struct {
	Environment Environment      `json:"environment"`
	Request     string           `json:"request"`
	Grant       string           `json:"grant"`
	Reviewer    string           `json:"reviewer"`
	Note        string           `json:"note"`
	Claim       SignedBreakGlass `json:"claim"`
}

// BreakGlassRefusal is the data of nova.breakglass.refused: someone signed
// for an action the rules refused (approving their own request, acting
// from outside the breakglass group, …). It changes nothing of the
// request; it is there to be seen.
type BreakGlassRefusal struct {
	Environment Environment      `json:"environment"`
	Request     string           `json:"request"`
	Actor       string           `json:"actor"`
	Action      string           `json:"action"`
	Reason      Reason           `json:"reason"`
	Message     string           `json:"message"`
	Claim       SignedBreakGlass `json:"claim"`
}

// What break-glass waives, as BreakGlassUse.Waived names it.
const (
	WaivedApproval   = "approval"
	WaivedConfidence = "confidence"
)

// BreakGlassState is one request's life as the chain tells it. At
// fields are positions in the folded chain, which is all the review rule
// compares.
type BreakGlassState struct {
	Request     string
	Environment Environment
	Requester   Login
	Reason      string
	RequestedAt time.Time
	// Approvals are the accepted approvals, oldest first.
	Approvals []BreakGlassApprovalRef `json:",omitempty"`
	// Grant is the nova.breakglass.granted event, when granted.
	Grant     string    `json:",omitempty"`
	Approvers []Login   `json:",omitempty"`
	GrantedAt time.Time `json:",omitzero"`
	ExpiresAt time.Time `json:",omitzero"`
	// DuplicateGrants are nova.breakglass.granted events recorded after
	// the request's grant (two second approvals at one moment): they
	// make no grant.
	DuplicateGrants []string `json:",omitempty"`
	// Revoked is the nova.breakglass.revoked event, when revoked.
	Revoked   string    `json:",omitempty"`
	RevokedBy string    `json:",omitempty"`
	RevokedAt time.Time `json:",omitzero"`
	// Uses are the nova.breakglass.used events; LastUse and LastReview
	// the positions of the latest use and review.
	Uses       []string `json:",omitempty"`
	LastUse    int64    `json:",omitempty"`
	Reviews    []string `json:",omitempty"`
	LastReview int64    `json:",omitempty"`
}

// BreakGlassApprovalRef is one accepted approval of a request.
type BreakGlassApprovalRef struct {
	Approver Login
	Event    string
}

// ReviewOpen reports whether the grant was used since its last review.
func (b *BreakGlassState) ReviewOpen() bool { return b.LastUse > b.LastReview }

// HoldsAt reports whether the grant holds at t.
func (b *BreakGlassState) HoldsAt(t time.Time) bool {
	return b.Grant != "" && !t.Before(b.GrantedAt) && t.Before(b.ExpiresAt) && (b.Revoked == "" || t.Before(b.RevokedAt))
}

// ended says why a grant no longer holds at t: revoked or expired.
func (b *BreakGlassState) ended(t time.Time) (Reason, string) {
	if b.Revoked != "" && !t.Before(b.RevokedAt) {
		return BreakGlassRevoked, fmt.Sprintf("break-glass grant %s for %s was revoked by %s at %s", b.Grant, b.Environment, b.RevokedBy, b.RevokedAt.UTC().Format(time.RFC3339))
	}
	return BreakGlassExpired, fmt.Sprintf("break-glass grant %s for %s expired at %s", b.Grant, b.Environment, b.ExpiresAt.UTC().Format(time.RFC3339))
}

// foldBreakGlass keeps what the break-glass rules read of e.
func (s *GateSummary) foldBreakGlass(e Event) {
	if !strings.HasPrefix(e.Type, "nova.breakglass.") {
		return
	}
	if s.BreakGlass == nil {
		s.BreakGlass = map[string]*BreakGlassState{}
	}
	switch e.Type {
	case EventBreakGlassRequested:
		var r BreakGlassRequest
		if DecodeEventData(e, &r) != nil {
			return
		}
		s.BreakGlass[e.ID] = &BreakGlassState{Request: e.ID, Environment: Environment(e.Environment),
			Requester: LoginOf(r.Requester), Reason: r.Reason, RequestedAt: e.Time}
	case EventBreakGlassApproved:
		var a BreakGlassApproval
		if DecodeEventData(e, &a) != nil || s.BreakGlass[a.Request] == nil {
			return
		}
		b := s.BreakGlass[a.Request]
		who := LoginOf(a.Approver)
		// Two runs of one approver at the same moment both pass the
		// duplicate rule; the chain keeps one approval per person, never
		// the requester's.
		if who == b.Requester || slices.ContainsFunc(b.Approvals, func(r BreakGlassApprovalRef) bool { return r.Approver == who }) {
			return
		}
		b.Approvals = append(b.Approvals, BreakGlassApprovalRef{Approver: who, Event: e.ID})
	case EventBreakGlassGranted:
		var g BreakGlassGrant
		if DecodeEventData(e, &g) != nil || s.BreakGlass[g.Request] == nil {
			return
		}
		b := s.BreakGlass[g.Request]
		if b.Grant != "" {
			// Two second approvals at the same moment each record a grant;
			// a request has one, the first in the chain: a later one is a
			// duplicate that neither extends nor replaces it.
			b.DuplicateGrants = append(b.DuplicateGrants, e.ID)
			return
		}
		b.Grant, b.GrantedAt, b.ExpiresAt = e.ID, g.GrantedAt, g.ExpiresAt
		b.Approvers = nil
		for _, a := range g.Approvers {
			b.Approvers = append(b.Approvers, LoginOf(a))
		}
	case EventBreakGlassRevoked:
		var r BreakGlassRevocation
		if DecodeEventData(e, &r) != nil || s.BreakGlass[r.Request] == nil {
			return
		}
		b := s.BreakGlass[r.Request]
		if b.Revoked == "" {
			b.Revoked, b.RevokedBy, b.RevokedAt = e.ID, r.RevokedBy, e.Time
		}
	case EventBreakGlassUsed:
		var u BreakGlassUse
		if DecodeEventData(e, &u) != nil || s.BreakGlass[u.Request] == nil {
			return
		}
		b := s.BreakGlass[u.Request]
		b.Uses, b.LastUse = append(b.Uses, e.ID), s.Folded
	case EventBreakGlassReviewed:
		var r BreakGlassReview
		if DecodeEventData(e, &r) != nil || s.BreakGlass[r.Request] == nil {
			return
		}
		b := s.BreakGlass[r.Request]
		b.Reviews, b.LastReview = append(b.Reviews, e.ID), s.Folded
	}
}

// cloneBreakGlass copies the break-glass states so that folding into a
// clone leaves s as it was.
func cloneBreakGlass(in map[string]*BreakGlassState) map[string]*BreakGlassState {
	if in == nil {
		return nil
	}
	out := make(map[string]*BreakGlassState, len(in))
	for id, b := range in {
		c := *b
		c.Approvals, c.Approvers = slices.Clip(b.Approvals), slices.Clip(b.Approvers)
		c.Uses, c.Reviews, c.DuplicateGrants = slices.Clip(b.Uses), slices.Clip(b.Reviews), slices.Clip(b.DuplicateGrants)
		out[id] = &c
	}
	return out
}

// FindBreakGlass returns the request that id names: a request's or its
// grant's event id, or a unique prefix of at least 8 characters of either.
func (s *GateSummary) FindBreakGlass(id string) (*BreakGlassState, error) {
	if b, ok := s.BreakGlass[id]; ok {
		return b, nil
	}
	var found []*BreakGlassState
	for _, b := range s.BreakGlass {
		if b.Grant == id || (len(id) >= 8 && (strings.HasPrefix(b.Request, id) || (b.Grant != "" && strings.HasPrefix(b.Grant, id)))) {
			found = append(found, b)
		}
	}
	switch len(found) {
	case 1:
		return found[0], nil
	case 0:
		return nil, Errorf(ConfigInvalid, "no break-glass request or grant %q is recorded for this contract", id)
	}
	return nil, Errorf(ConfigInvalid, "%q names more than one break-glass request; give more of the id", id)
}

// BreakGlassRequests lists env's requests, oldest first.
func (s *GateSummary) BreakGlassRequests(env Environment) []*BreakGlassState {
	var out []*BreakGlassState
	for _, b := range s.BreakGlass {
		if b.Environment == env {
			out = append(out, b)
		}
	}
	slices.SortFunc(out, func(a, b *BreakGlassState) int { return a.RequestedAt.Compare(b.RequestedAt) })
	return out
}

// ActiveBreakGlass is the newest grant of env that holds at now, or nil.
func (s *GateSummary) ActiveBreakGlass(env Environment, now time.Time) *BreakGlassState {
	var active *BreakGlassState
	for _, b := range s.BreakGlassRequests(env) {
		if b.HoldsAt(now) {
			active = b
		}
	}
	return active
}

// BreakGlassWaiver is the confidence stages' port to break-glass: the
// grant that holds for a contract's environment now, if any.
type BreakGlassWaiver interface {
	ActiveGrant(ctx context.Context, contractID string, env Environment) (*BreakGlassState, error)
}

// BreakGlassGrants reads grants from the evidence.
type BreakGlassGrants struct {
	Evidence EvidenceReader
	// Now is the clock grants are read at; nil means time.Now.
	Now func() time.Time
}

// ActiveGrant implements BreakGlassWaiver.
func (b BreakGlassGrants) ActiveGrant(ctx context.Context, contractID string, env Environment) (*BreakGlassState, error) {
	if b.Evidence == nil || env.Autonomous() {
		return nil, nil
	}
	sum, err := ReadGateSummary(ctx, b.Evidence, contractID)
	if err != nil {
		return nil, err
	}
	now := time.Now
	if b.Now != nil {
		now = b.Now
	}
	return sum.ActiveBreakGlass(env, now().UTC()), nil
}

// OpenBreakGlassReviews folds the break-glass events of events (any
// contracts, any order of contracts, each contract's in chain order) and
// returns the grants whose post-incident review is open, by contract.
func OpenBreakGlassReviews(events []Event) map[string][]*BreakGlassState {
	sums := map[string]*GateSummary{}
	for _, e := range events {
		if !strings.HasPrefix(e.Type, "nova.breakglass.") {
			continue
		}
		s := sums[e.ContractID]
		if s == nil {
			s = &GateSummary{}
			sums[e.ContractID] = s
		}
		// Positions only need to grow within a contract's chain.
		s.Folded++
		s.foldBreakGlass(e)
	}
	out := map[string][]*BreakGlassState{}
	for id, s := range sums {
		for _, b := range s.BreakGlass {
			if b.ReviewOpen() {
				out[id] = append(out[id], b)
			}
		}
		slices.SortFunc(out[id], func(a, b *BreakGlassState) int { return a.RequestedAt.Compare(b.RequestedAt) })
	}
	return out
}
