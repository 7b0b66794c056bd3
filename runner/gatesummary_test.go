package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// The gate decides from a GateSummary folded event by event; the rules it
// replaced read the whole chain. The oracle below is those rules as they
// were, and checkGateParity holds the two equal on every chain the gate
// tests build (newWorld registers it), on each of its prefixes.

// checkGateParity checks, for every prefix of events: folding it whole and
// folding a prefix then the rest (on the kept summary and on a clone) give
// the same summary; the open apply of each environment is UnresolvedApply's;
// and decideGate on the summary equals the chain rules for each
// environment, plan digest the chain names, supersedes and time.
func checkGateParity(t *testing.T, events []Event, approvers *ApproverConfig, nows ...time.Time) {
	t.Helper()
	var digests []string
	for _, e := range events {
		var r struct {
			Digest     string `json:"digest"`
			PlanDigest string `json:"planDigest"`
		}
		_ = DecodeEventData(e, &r)
		digests = append(digests, r.Digest, r.PlanDigest)
	}
	digests = append(slices.Compact(slices.Sorted(slices.Values(digests))), "sha256:never-seen")
	decisions := 0
	for k := range len(events) + 1 {
		chain := events[:k]
		whole := SummarizeGate(chain)
		for j := range k + 1 {
			kept := SummarizeGate(chain[:j])
			clone := kept.Clone()
			for _, e := range chain[j:] {
				clone.Fold(e)
			}
			if !reflect.DeepEqual(clone, whole) {
				t.Fatalf("events[:%d]: folding %d events then the rest on a clone differs from folding them whole", k, j)
			}
			if !reflect.DeepEqual(kept, SummarizeGate(chain[:j])) {
				t.Fatalf("events[:%d]: folding a clone of the summary of %d events changed it", k, j)
			}
			for _, e := range chain[j:] {
				kept.Fold(e)
			}
			if !reflect.DeepEqual(kept, whole) {
				t.Fatalf("events[:%d]: folding %d events then the rest differs from folding them whole", k, j)
			}
		}
		checkImportParity(t, k, chain, whole, digests)
		if got, _ := whole.DecisionOutcomes(); !reflect.DeepEqual(got, DecisionOutcomes(chain)) {
			t.Fatalf("events[:%d]: decision outcomes %+v from the summary, %+v from the chain", k, got, DecisionOutcomes(chain))
		}
		for _, env := range []Environment{Dev, QA, Prod, DR} {
			want, got := "", ""
			if open := UnresolvedApply(chain, env); open != nil {
				want = open.ID + " " + open.Type
			}
			if open := whole.Env(env).Open; open != nil {
				got = open.ID + " " + open.Type
			}
			if got != want {
				t.Fatalf("events[:%d], %s: open apply %q from the summary, %q from the chain", k, env, got, want)
			}
			if env == Dev {
				continue
			}
			supersedes := []string{""}
			if start, _ := chainPendingRequest(chain, env); start != nil {
				supersedes = append(supersedes, start.ID)
			}
			for _, digest := range digests {
				for _, sup := range supersedes {
					for _, now := range nows {
						in := gateInput{Env: env, Digest: digest, Supersedes: sup, Now: now, Approvers: approvers, Members: listedMembers(chain, approvers)}
						want, werr := chainDecideGate(chain, in)
						got, gerr := decideGate(whole, in)
						if fmt.Sprint(werr) != fmt.Sprint(gerr) || ReasonOf(werr) != ReasonOf(gerr) || !reflect.DeepEqual(got, want) {
							t.Fatalf("events[:%d], %+v:\nsummary: %+v, %v\nchain:   %+v, %v", k, in, got, gerr, want, werr)
						}
						decisions++
					}
				}
			}
		}
	}
	if len(events) > 0 && decisions == 0 {
		t.Fatal("no decision compared")
	}
}

// checkImportParity checks that what the approvals stage reads of sum,
// the summary of chain, is what it read of chain itself.
func checkImportParity(t *testing.T, k int, chain []Event, sum *GateSummary, digests []string) {
	t.Helper()
	refs, claims := importedRefs(chain)
	if !maps.Equal(refs, nonNil(sum.Imported)) || !maps.Equal(claims, nonNil(sum.UsedClaims)) {
		t.Fatalf("events[:%d]: imported %v and claims %v from the summary, %v and %v from the chain", k, sum.Imported, sum.UsedClaims, refs, claims)
	}
	prs := []int64{0}
	for _, e := range chain {
		var p PlanRecord
		if e.Type == EventPlanCreated && DecodeEventData(e, &p) == nil && !slices.Contains(prs, p.PullRequest) {
			prs = append(prs, p.PullRequest)
		}
	}
	for _, env := range []Environment{Dev, QA, Prod, DR} {
		for _, pr := range prs {
			for _, digest := range append(slices.Clone(digests), "") {
				got, ok := sum.PlannedAt(env, pr, digest)
				want, wok := plannedAt(chain, env, pr, digest)
				if ok != wok || !got.Equal(want) {
					t.Fatalf("events[:%d]: %s plan %s of #%d on show since %v (%v) by the summary, since %v (%v) by the chain", k, env, digest, pr, got, ok, want, wok)
				}
			}
		}
	}
}

// plannedAt is when the plan with digest went on show in env for pull
// request pr, read from the whole chain: the first plan of the run of
// plans of that digest that ends the pull request's plans there.
func plannedAt(events []Event, env Environment, pr int64, digest string) (time.Time, bool) {
	var since time.Time
	current, planned := "", false
	for _, e := range events {
		var p PlanRecord
		if e.Type != EventPlanCreated || e.Environment != string(env) || DecodeEventData(e, &p) != nil || p.PullRequest != pr {
			continue
		}
		if !planned || p.Digest != current {
			current, since, planned = p.Digest, e.Time, true
		}
	}
	if !planned || current != digest {
		return time.Time{}, false
	}
	return since, true
}

// listedMembers says, for every approver the chain names, whether the
// approver config lists them in a group: the gate's membership check
// without a forge to ask about teams.
func listedMembers(events []Event, cfg *ApproverConfig) map[Login]bool {
	out := map[Login]bool{}
	for _, e := range events {
		var a ApprovalRecord
		if e.Type != EventApprovalRecorded || DecodeEventData(e, &a) != nil {
			continue
		}
		ok, _ := IsMember(context.Background(), nil, cfg.Groups[a.Group], LoginOf(a.Approver))
		out[LoginOf(a.Approver)] = ok
	}
	return out
}

func nonNil(m map[string]bool) map[string]bool {
	if m == nil {
		return map[string]bool{}
	}
	return m
}

func TestGateSummaryParityOnUnreadableEvents(t *testing.T) {
	cfg, err := ParseApprovers([]byte("groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	approval := func(id, env, who, digest string) Event {
		e := event(t, id, EventApprovalRecorded, env, "r", "", ApprovalRecord{Environment: Environment(env), Approver: who, PlanDigest: digest, Group: cfg.GroupFor(Environment(env))})
		e.Time = at
		return e
	}
	rejection := func(id, digest string) Event {
		return event(t, id, EventApprovalRejected, "prod", "r", "", ApprovalRecord{Environment: Prod, Approver: "sre-1", PlanDigest: digest, Reason: "no, says " + id})
	}
	unreadable := func(id, typ string) Event {
		return Event{ID: id, Type: typ, Environment: "prod", Data: json.RawMessage(`"not an object"`)}
	}
	for name, events := range map[string][]Event{
		"bad rejection before a rejection": {rejection("1", "d1"), unreadable("2", EventApprovalRejected), rejection("3", "d2"), approval("4", "prod", "sre-1", "d3"), rejection("5", "d1")},
		"bad approval":                     {approval("1", "qa", "qa-lead", "d1"), unreadable("2", EventApprovalRecorded), approval("3", "prod", "sre-1", "d1")},
		"separation of duties":             {approval("1", "qa", "sre-1", "d1"), approval("2", "prod", "sre-1", "d1"), approval("3", "dr", "sre-1", "d2")},
		"plans and imports": {
			event(t, "1", EventPlanCreated, "qa", "r1", "plan", PlanRecord{Digest: "d1"}),
			unreadable("2", EventPlanCreated),
			event(t, "3", EventPlanCreated, "prod", "r2", "plan", PlanRecord{Digest: "d1"}),
			event(t, "4", EventPlanCreated, "qa", "r3", "plan", PlanRecord{Digest: "d1"}),
			event(t, "5", EventApprovalRecorded, "qa", "r3", "", ApprovalRecord{Environment: QA, Approver: "qa-lead", PlanDigest: "d1", Source: SourceLocal, SourceRef: "c1",
				Claim: signed(LocalClaim{ID: "c1", Approver: "qa-lead", Environment: QA, PlanDigest: "d1", Decision: Approve})}),
			event(t, "6", EventApprovalRejected, "prod", "r3", "", ApprovalRecord{Environment: Prod, Approver: "sre-1", PlanDigest: "d1", Source: SourceGiteaReview, SourceRef: "7"}),
			event(t, "7", EventPlanCreated, "qa", "r4", "plan", PlanRecord{}),
		},
		"request, escalation, authorization": {
			event(t, "1", EventApprovalRequested, "qa", "r", "", RequestRecord{Environment: QA, PlanDigest: "d1"}),
			event(t, "2", EventApprovalEscalated, "qa", "r", "", EscalationRecord{Environment: QA, PlanDigest: "d1", Request: "1"}),
			event(t, "3", EventApprovalRequested, "qa", "r", "", RequestRecord{Environment: QA, PlanDigest: "d1", Supersedes: "1"}),
			event(t, "4", EventApplyAuthorized, "qa", "r", "", Authorization{Digest: "d1", Environment: QA}),
			event(t, "5", EventApprovalRequested, "qa", "r2", "", RequestRecord{Environment: QA, PlanDigest: "d2"}),
			event(t, "6", EventApplyCompleted, "qa", "r", "", map[string]string{"digest": "d1"}),
		},
	} {
		for i := range events {
			events[i].Time = at.Add(time.Duration(i) * time.Hour)
		}
		t.Run(name, func(t *testing.T) {
			checkGateParity(t, events, cfg, at, at.Add(30*time.Hour), at.Add(100*time.Hour))
		})
	}
	// The import parity must be able to fail too.
	planned := []Event{event(t, "1", EventPlanCreated, "qa", "r1", "plan", PlanRecord{Digest: "d1"})}
	planned[0].Time = at
	if _, ok := SummarizeGate(nil).PlannedAt(QA, 0, "d1"); ok {
		t.Error("an empty summary knows when a plan was recorded")
	}
	if _, ok := plannedAt(planned, QA, 0, "d1"); !ok {
		t.Error("the oracle does not see a recorded plan")
	}
	if _, claims := importedRefs([]Event{event(t, "1", EventApprovalRecorded, "qa", "r1", "", ApprovalRecord{Environment: QA, Claim: signed(LocalClaim{ID: "c1"})})}); !claims["c1"] {
		t.Error("the oracle does not see a used claim")
	}
	// The parity must be able to fail: a summary missing one event is not
	// the chain's.
	events := []Event{approval("1", "qa", "qa-lead", "d1")}
	got, _ := decideGate(SummarizeGate(nil), gateInput{Env: QA, Digest: "d1", Now: at, Approvers: cfg})
	want, _ := chainDecideGate(events, gateInput{Env: QA, Digest: "d1", Now: at, Approvers: cfg})
	if reflect.DeepEqual(got, want) || !strings.Contains(got.Message, "requires an approval") {
		t.Errorf("an empty summary decided like a chain holding an approval: %+v", got)
	}
}

// chainDecideGate is decideGate as it was, over the whole chain.
func chainDecideGate(events []Event, in gateInput) (gateDecision, error) {
	approvals, err := Approvals(events, in.Env)
	if err != nil {
		return gateDecision{}, err
	}
	for _, e := range events {
		if e.Type != EventApprovalRejected || e.Environment != string(in.Env) {
			continue
		}
		var r ApprovalRecord
		if err := DecodeEventData(e, &r); err != nil {
			return gateDecision{}, Errorf(EvidenceLayoutInvalid, "reading rejection %s: %w", e.ID, err)
		}
		if r.PlanDigest == in.Digest {
			return gateDecision{Verdict: Fail, Reason: ApprovalRejected,
				Message: fmt.Sprintf("%s rejected plan %s for %s (%s); the contract is held: plan again and ask for a new approval", r.Approver, ShortDigest(in.Digest), in.Env, orNone(r.Reason))}, nil
		}
	}
	group := in.Approvers.GroupFor(in.Env)
	// A decision taken after the pending request froze does not count:
	// the request must be re-submitted first.
	freezeAt := time.Time{}
	if start, _ := chainPendingRequest(events, in.Env); start != nil && !chainResubmits(start, in) {
		freezeAt = AddBusinessDuration(start.Time, FreezeAfter)
	}
	var valid, left []Approval
	for _, a := range approvals {
		if a.PlanDigest != in.Digest || a.Group != group || (!freezeAt.IsZero() && !a.decidedAt().Before(freezeAt)) {
			continue
		}
		a.Approver = string(LoginOf(a.Approver))
		if !in.Members[Login(a.Approver)] {
			left = append(left, a)
			continue
		}
		valid = append(valid, a)
	}
	if len(valid) == 0 && len(left) > 0 {
		d := chainWaiting(events, in)
		var names []string
		for _, a := range left {
			names = append(names, a.Approver)
		}
		d.Reason = ApproverLeftGroup
		d.Message = fmt.Sprintf("%s approved plan %s but is no longer in group %s: the approval no longer counts; %s", strings.Join(slices.Compact(slices.Sorted(slices.Values(names))), ", "), ShortDigest(in.Digest), group, d.Message)
		return d, nil
	}
	if len(valid) > 0 && (in.Env == Prod || in.Env == DR) {
		qa, err := Approvals(events, QA)
		if err != nil {
			return gateDecision{}, err
		}
		qaApprovers := map[Login][]string{}
		for _, a := range qa {
			qaApprovers[LoginOf(a.Approver)] = append(qaApprovers[LoginOf(a.Approver)], a.EventID)
		}
		var refusal *gateDecision
		if valid, refusal = separateDuties(valid, qaApprovers, in, group); refusal != nil {
			return refused(*refusal, chainWaiting(events, in)), nil
		}
	}
	if len(valid) > 0 {
		return gateDecision{Verdict: Pass, Approval: &valid[0]}, nil
	}
	return chainWaiting(events, in), nil
}

// chainWaiting is waiting over the whole chain.
func chainWaiting(events []Event, in gateInput) gateDecision {
	d := gateDecision{Verdict: AwaitingApproval, Reason: ApprovalRequired, RecordWait: true,
		Request: RequestRecord{Environment: in.Env, PlanDigest: in.Digest}}
	start, escalated := chainPendingRequest(events, in.Env)
	if start == nil {
		d.Message = fmt.Sprintf("environment %s requires an approval bound to plan digest %s from group %s%s", in.Env, in.Digest, in.Approvers.GroupFor(in.Env), chainRequestedSince(events, in))
		return d
	}
	if chainResubmits(start, in) {
		// The re-submission the freeze asked for: the old request is
		// closed and this one starts its own clock.
		d.Request.Supersedes = start.ID
		d.Message = fmt.Sprintf("re-submitted, superseding request %s: environment %s requires an approval bound to plan digest %s", start.ID, in.Env, in.Digest)
		return d
	}
	age := BusinessDuration(start.Time, in.Now)
	switch {
	case age >= FreezeAfter:
		return gateDecision{Verdict: Fail, Reason: ApprovalFrozen,
			Message: fmt.Sprintf("the approval request %s for %s has waited %s business time since %s; it is frozen: re-submit with `supersedes: %s` in the contract", start.ID, in.Env, age.Round(time.Minute), start.Time.Format(time.RFC3339), start.ID)}
	case age >= EscalateAfter && !escalated:
		d.Also = []EventSpec{{Type: EventApprovalEscalated, Data: EscalationRecord{Environment: in.Env, PlanDigest: in.Digest, Request: start.ID, Since: start.Time}}}
	}
	d.Message = fmt.Sprintf("environment %s requires an approval bound to plan digest %s from group %s%s", in.Env, in.Digest, in.Approvers.GroupFor(in.Env), chainRequestedSince(events, in))
	return d
}

// chainRequestedSince is requestedSince over the whole chain: the first
// request of this plan digest in the environment.
func chainRequestedSince(events []Event, in gateInput) string {
	for _, e := range events {
		var r RequestRecord
		if e.Type != EventApprovalRequested || Environment(e.Environment) != in.Env || DecodeEventData(e, &r) != nil || r.PlanDigest != in.Digest {
			continue
		}
		return " (requested " + e.Time.UTC().Format(time.RFC3339) + ")"
	}
	return ""
}

// chainResubmits is resubmits over the whole chain: naming the pending
// request re-submits it only once it is frozen.
func chainResubmits(start *Event, in gateInput) bool {
	return in.Supersedes != "" && in.Supersedes == start.ID && BusinessDuration(start.Time, in.Now) >= FreezeAfter
}

// chainPendingRequest is the pending request read from the whole chain.
func chainPendingRequest(events []Event, env Environment) (*Event, bool) {
	var start *Event
	escalated := false
	for i := range events {
		e := &events[i]
		if e.Environment != string(env) {
			continue
		}
		switch e.Type {
		case EventApplyAuthorized, EventApprovalRejected:
			start, escalated = nil, false
		case EventApprovalRequested:
			var r RequestRecord
			_ = DecodeEventData(*e, &r)
			if start == nil || (r.Supersedes != "" && r.Supersedes == start.ID) {
				start, escalated = e, false
			}
		case EventApprovalEscalated:
			var r EscalationRecord
			if start != nil && DecodeEventData(*e, &r) == nil && r.Request == start.ID {
				escalated = true
			}
		}
	}
	return start, escalated
}

// TestPlannedAtIsWhenThePlanWentOnShow: an approval comment counts only
// if written while its plan was the one on show. A digest that comes back
// after another plan (the attack: push M, push B, the approver approves
// B's prefix, push M again) starts its clock again, and a plan made again
// with nothing in between keeps its clock.
func TestPlannedAtIsWhenThePlanWentOnShow(t *testing.T) {
	at := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	var events []Event
	planOf := func(pr int64, env, digest string) time.Time {
		e := event(t, fmt.Sprint(len(events)), EventPlanCreated, env, "r", "plan", PlanRecord{Digest: digest, PullRequest: pr})
		e.Time = at.Add(time.Duration(len(events)) * time.Minute)
		events = append(events, e)
		return e.Time
	}
	plan := func(env, digest string) time.Time { return planOf(0, env, digest) }
	m1 := plan("prod", "M")
	plan("prod", "B")
	plan("qa", "M") // another environment's plans are its own
	m2 := plan("prod", "M")
	plan("prod", "M")
	sum := SummarizeGate(events)
	if got, ok := sum.PlannedAt(Prod, 0, "M"); !ok || !got.Equal(m2) || got.Equal(m1) {
		t.Errorf("prod M on show since %v (%v), want %v: when it came back, not when it was first planned", got, ok, m2)
	}
	if _, ok := sum.PlannedAt(Prod, 0, "B"); ok {
		t.Error("B is not on show in prod any more, yet the summary dates it")
	}
	// Another pull request's plans in between change nothing of what this
	// one's approvers saw: #1's plan stays on show since its first plan.
	p1 := planOf(1, "qa", "P1")
	planOf(2, "qa", "P2")
	planOf(1, "qa", "P1")
	sum = SummarizeGate(events)
	if got, ok := sum.PlannedAt(QA, 1, "P1"); !ok || !got.Equal(p1) {
		t.Errorf("#1's qa plan on show since %v (%v), want %v: #2's plan in between is not #1's", got, ok, p1)
	}
	if _, ok := sum.PlannedAt(QA, 2, "P1"); ok {
		t.Error("#1's plan is dated as #2's")
	}
	cfg, err := ParseApprovers([]byte("groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-1]\n"))
	if err != nil {
		t.Fatal(err)
	}
	checkGateParity(t, events, cfg, at)
	// The approvals stage asks the sources for decisions made since then.
	var seen time.Time
	stage := &ImportApprovals{Sources: []ApprovalSource{requestSpy{&seen}}, Approvers: StaticApprovers{cfg}, Evidence: chainReader{&events}}
	st := &State{Contract: &Contract{ID: "c", Environment: Prod}, Plan: &Plan{Digest: "M"}}
	if _, err := stage.Run(t.Context(), st); err != nil {
		t.Fatal(err)
	}
	if !seen.Equal(m2) {
		t.Errorf("the stage asked for claims after %v, the plan went on show at %v", seen, m2)
	}
}

// requestSpy is an approval source that keeps the PlannedAt it is asked
// with and holds no claim.
type requestSpy struct{ plannedAt *time.Time }

func (requestSpy) Name() string { return "spy" }
func (r requestSpy) Claims(_ context.Context, req ApprovalRequest) ([]ApprovalClaim, error) {
	*r.plannedAt = req.PlannedAt
	return nil, nil
}

// importedRefs is what the approvals stage read of the whole chain before
// the gate summary kept it: the oracle of its parity, with plannedAt.

// importedRefs lists the decisions already in the chain, by source and
// reference, and the signed claims already used.
func importedRefs(events []Event) (refs, claims map[string]bool) {
	refs, claims = map[string]bool{}, map[string]bool{}
	for _, e := range events {
		if e.Type != EventApprovalRecorded && e.Type != EventApprovalRejected {
			continue
		}
		var r ApprovalRecord
		if DecodeEventData(e, &r) != nil {
			continue
		}
		refs[string(r.Environment)+"/"+r.Source+"/"+r.SourceRef] = true
		if r.Claim != nil {
			claims[r.Claim.Claim.ID] = true
		}
	}
	return refs, claims
}
