// Package audit answers questions about verified evidence: which events a
// query matches, the fact tables a BI tool loads (runs, stage results,
// PCRs, confidence, decisions, approvals, applies, drift), and the
// measures the HTML report draws from those same tables. It works on
// events the evidence index has verified and never reads a repo itself:
// runner/evidence verifies, action/ wires the two together.
package audit

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
)

// FacetsVersion names Facets: an index built by another version computed
// other facets and is rebuilt. Change it whenever Facets changes.
const FacetsVersion = "audit-facets-2"

// Facet prefixes: a facet is "<name>=<value>".
const (
	facetApprover = "approver="
	facetReason   = "reason="
)

// Facets returns what a query filters an event by beyond its envelope:
// every person the event names as deciding (approver, rejecter, refused
// approver, the operator who resolved an apply, the approver an
// authorization names, who approved, granted, revoked or reviewed
// break-glass) and every reason code it carries (findings,
// confidence reasons, a refusal's or an outcome's reason). The index
// computes them once per event, so a query never reads event data.
func Facets(e runner.Event) []string {
	var out []string
	add := func(prefix, v string) {
		if v != "" && !slices.Contains(out, prefix+v) {
			out = append(out, prefix+v)
		}
	}
	var stage runner.StageEventData
	if json.Unmarshal(e.Data, &stage) == nil {
		for _, f := range stage.Findings {
			add(facetReason, string(f.Reason))
		}
	}
	switch e.Type {
	case runner.EventApprovalRecorded, runner.EventApprovalRejected:
		var a runner.ApprovalRecord
		if runner.DecodeEventData(e, &a) == nil {
			add(facetApprover, a.Approver)
		}
		if e.Type == runner.EventApprovalRejected {
			add(facetReason, string(runner.ApprovalRejected))
		}
	case runner.EventApprovalRefused:
		var r runner.RefusalRecord
		if runner.DecodeEventData(e, &r) == nil {
			for _, a := range r.Approvers {
				add(facetApprover, a)
			}
			add(facetReason, string(r.Reason))
		}
	case runner.EventApplyAuthorized:
		var a runner.Authorization
		if runner.DecodeEventData(e, &a) == nil {
			add(facetApprover, a.Approver)
			// A destroy names every approver it counted.
			for _, who := range a.Approvers {
				add(facetApprover, who)
			}
		}
	case runner.EventApplyResolved:
		var r runner.Resolution
		if runner.DecodeEventData(e, &r) == nil {
			add(facetApprover, r.ResolvedBy)
		}
	case runner.EventApplyIndeterminate:
		add(facetReason, string(runner.ApplyIndeterminate))
	case runner.EventBreakGlassApproved, runner.EventBreakGlassGranted, runner.EventBreakGlassUsed, runner.EventBreakGlassRevoked, runner.EventBreakGlassReviewed:
		for _, who := range breakGlassDeciders(e) {
			add(facetApprover, who)
		}
	case runner.EventBreakGlassRefused:
		var r runner.BreakGlassRefusal
		if runner.DecodeEventData(e, &r) == nil {
			add(facetApprover, r.Actor)
			add(facetReason, string(r.Reason))
		}
	case runner.EventConfidenceComputed:
		var c runner.Confidence
		if runner.DecodeEventData(e, &c) == nil {
			for _, r := range c.ReasonCodes {
				add(facetReason, string(r))
			}
			for _, in := range c.PerInput {
				for _, r := range in.Reasons {
					add(facetReason, string(r))
				}
			}
		}
	case runner.EventDecisionOutcome:
		var o runner.OutcomeRecord
		if json.Unmarshal(e.Data, &o) == nil {
			add(facetReason, string(o.Reason))
		}
	}
	slices.Sort(out)
	return out
}

// FacetValues returns the values of facets with the given prefix
// (approvers, reasons).
func FacetValues(facets []string, prefix string) []string {
	var out []string
	for _, f := range facets {
		if v, ok := strings.CutPrefix(f, prefix); ok {
			out = append(out, v)
		}
	}
	return out
}

// Approvers and Reasons read an event's facets.
func Approvers(facets []string) []string { return FacetValues(facets, facetApprover) }
func Reasons(facets []string) []string   { return FacetValues(facets, facetReason) }

// Query selects events. Within one filter any value may match (contract A
// or B); across filters all must (contract A and environment prod). Types
// may be patterns ("nova.apply.*").
type Query struct {
	Contracts    []string
	Environments []string
	Types        []string
	Approvers    []string
	Reasons      []string
	// Since and Until bound the event time: Since inclusive, Until
	// exclusive; zero means unbounded.
	Since, Until time.Time
}

// Match reports whether an event with this envelope and these facets is
// selected. It reads no event data, so it runs over a whole index.
func (q Query) Match(contract, env, typ string, at time.Time, facets []string) bool {
	switch {
	case len(q.Contracts) > 0 && !slices.Contains(q.Contracts, contract),
		len(q.Environments) > 0 && !slices.Contains(q.Environments, env),
		!q.Since.IsZero() && at.Before(q.Since),
		!q.Until.IsZero() && !at.Before(q.Until):
		return false
	}
	if len(q.Types) > 0 && !slices.ContainsFunc(q.Types, func(p string) bool {
		ok, _ := path.Match(p, typ)
		return ok
	}) {
		return false
	}
	return hasFacet(facets, facetApprover, q.Approvers) && hasFacet(facets, facetReason, q.Reasons)
}

func hasFacet(facets []string, prefix string, want []string) bool {
	if len(want) == 0 {
		return true
	}
	for _, w := range want {
		if slices.Contains(facets, prefix+w) {
			return true
		}
	}
	return false
}

// CheckPatterns refuses a type pattern path.Match cannot read, so a typo
// is an error rather than a query that matches nothing.
func (q Query) CheckPatterns() error {
	for _, p := range q.Types {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("type pattern %q: %w", p, err)
		}
	}
	return nil
}

// ParseTime reads a query bound: RFC 3339 ("2026-03-01T12:00:00Z"), a day
// ("2026-03-01", midnight UTC), or an age before now ("36h", "90d", "2w").
func ParseTime(s string, now time.Time) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t.UTC(), nil
	}
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	unit := map[byte]time.Duration{'d': 24 * time.Hour, 'w': 7 * 24 * time.Hour}
	if n := len(s); n > 1 && unit[s[n-1]] != 0 {
		if k, err := strconv.Atoi(s[:n-1]); err == nil && k >= 0 {
			return now.Add(-time.Duration(k) * unit[s[n-1]]).UTC(), nil
		}
	}
	if d, err := time.ParseDuration(s); err == nil && d >= 0 {
		return now.Add(-d).UTC(), nil
	}
	return time.Time{}, fmt.Errorf("%q is not a time: want RFC 3339, YYYY-MM-DD, or an age such as 36h, 90d, 2w", s)
}
