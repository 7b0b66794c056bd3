package audit

import (
	"slices"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
)

// Review states of a break-glass request, as the break_glass table names
// them.
const (
	ReviewNone     = "none"
	ReviewOpen     = "open"
	ReviewRecorded = "recorded"
)

// BreakGlassRow is one break-glass request, from its request to its
// post-incident review.
type BreakGlassRow struct {
	RequestEventID string     `json:"request_event_id" desc:"Id of the nova.breakglass.requested event."`
	ContractID     string     `json:"contract_id" desc:"The contract."`
	Environment    string     `json:"environment" desc:"qa, prod or dr."`
	Requester      string     `json:"requester" desc:"Who asked for break-glass."`
	Reason         string     `json:"reason" desc:"Why, as the requester wrote it."`
	RequestedAt    time.Time  `json:"requested_at" desc:"When it was requested."`
	GrantEventID   string     `json:"grant_event_id" desc:"Id of the nova.breakglass.granted event, empty while not granted."`
	Approvers      string     `json:"approvers" desc:"The two members of the breakglass group who granted it, separated by ;."`
	GrantedAt      *time.Time `json:"granted_at" desc:"When the second approval granted it, null while not granted."`
	ExpiresAt      *time.Time `json:"expires_at" desc:"When the grant ends on its own, null while not granted."`
	RevokedBy      string     `json:"revoked_by" desc:"Who revoked it, empty if nobody did."`
	RevokedAt      *time.Time `json:"revoked_at" desc:"When it was revoked, null if it was not."`
	Uses           int64      `json:"uses" desc:"How many plans were authorized under the grant (nova.breakglass.used)."`
	UseEventIDs    string     `json:"use_event_ids" desc:"Ids of the nova.breakglass.used events, separated by ;."`
	Review         string     `json:"review" desc:"none (never used), open (used since its last review) or recorded."`
	ReviewEventIDs string     `json:"review_event_ids" desc:"Ids of the nova.breakglass.reviewed events, separated by ;."`
}

// breakGlassRows reads one contract's chain into its break-glass rows,
// oldest request first, by the rules the gate reads it with.
func breakGlassRows(chain []Record) []BreakGlassRow {
	sum := &runner.GateSummary{}
	for _, r := range chain {
		if strings.HasPrefix(r.Event.Type, "nova.breakglass.") {
			sum.Fold(r.Event)
		}
	}
	var rows []BreakGlassRow
	for _, b := range sum.BreakGlass {
		row := BreakGlassRow{
			RequestEventID: b.Request, ContractID: chain[0].Event.ContractID, Environment: string(b.Environment), Requester: string(b.Requester),
			Reason: b.Reason, RequestedAt: b.RequestedAt, GrantEventID: b.Grant, RevokedBy: b.RevokedBy,
			Uses: int64(len(b.Uses)), UseEventIDs: strings.Join(b.Uses, ";"), ReviewEventIDs: strings.Join(b.Reviews, ";"), Review: ReviewNone,
		}
		var approvers []string
		for _, a := range b.Approvers {
			approvers = append(approvers, string(a))
		}
		row.Approvers = strings.Join(approvers, ";")
		if b.Grant != "" {
			row.GrantedAt, row.ExpiresAt = timePtr(b.GrantedAt), timePtr(b.ExpiresAt)
		}
		if b.Revoked != "" {
			row.RevokedAt = timePtr(b.RevokedAt)
		}
		switch {
		case b.ReviewOpen():
			row.Review = ReviewOpen
		case len(b.Uses) > 0:
			row.Review = ReviewRecorded
		}
		rows = append(rows, row)
	}
	slices.SortFunc(rows, func(a, b BreakGlassRow) int { return a.RequestedAt.Compare(b.RequestedAt) })
	return rows
}

// breakGlassDeciders are the people a break-glass event names as deciding:
// who approved, granted, used under whose grant, revoked or reviewed.
func breakGlassDeciders(e runner.Event) []string {
	var d struct {
		Approver  string   `json:"approver"`
		Approvers []string `json:"approvers"`
		RevokedBy string   `json:"revokedBy"`
		Reviewer  string   `json:"reviewer"`
	}
	if runner.DecodeEventData(e, &d) != nil {
		return nil
	}
	return slices.DeleteFunc(append([]string{d.Approver, d.RevokedBy, d.Reviewer}, d.Approvers...), func(s string) bool { return s == "" })
}
