package runner

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestDecideBreakGlassApproval(t *testing.T) {
	at := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	req := func(approvers ...Login) *BreakGlassState {
		b := &BreakGlassState{Request: "req-1", Environment: Prod, Requester: "oncall", RequestedAt: at}
		for i, a := range approvers {
			b.Approvals = append(b.Approvals, BreakGlassApprovalRef{Approver: a, Event: "appr-" + string(rune('1'+i))})
		}
		return b
	}
	for _, tc := range []struct {
		name      string
		req       *BreakGlassState
		approver  Login
		notMember bool
		after     time.Duration
		want      Reason
		grant     []string
	}{
		{name: "the first approval grants nothing yet", req: req(), approver: "sre-1", after: time.Minute},
		{name: "a second approver grants", req: req("sre-1"), approver: "sre-2", after: time.Hour, grant: []string{"sre-1", "sre-2"}},
		{name: "the requester may not approve", req: req(), approver: "oncall", want: BreakGlassSelfApproval},
		{name: "nor make the second approval", req: req("sre-1"), approver: "oncall", want: BreakGlassSelfApproval},
		{name: "one approver approving twice is one approval", req: req("sre-1"), approver: "sre-1", want: BreakGlassDuplicateApproval},
		{name: "only the breakglass group approves", req: req("sre-1"), approver: "dev-1", notMember: true, want: BreakGlassNotInGroup},
		{name: "a request waits at most a grant's duration", req: req("sre-1"), approver: "sre-2", after: 4 * time.Hour, want: BreakGlassExpired},
		{name: "a revoked request takes no approval", req: func() *BreakGlassState {
			b := req("sre-1")
			b.Revoked, b.RevokedBy = "rev-1", "sre-1"
			return b
		}(), approver: "sre-2", want: BreakGlassRevoked},
		{name: "a granted request takes no more", req: func() *BreakGlassState {
			b := req("sre-1", "sre-2")
			b.Grant, b.ExpiresAt = "grant-1", at.Add(4*time.Hour)
			return b
		}(), approver: "sre-3", want: BreakGlassAlreadyGranted},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := at.Add(tc.after)
			reason, msg, grant := DecideBreakGlassApproval(tc.req, BreakGlassApprovalInput{Approver: tc.approver, Member: !tc.notMember, Now: now, Duration: DefaultBreakGlassDuration})
			if reason != tc.want {
				t.Fatalf("reason %q (%s), want %q", reason, msg, tc.want)
			}
			if (reason == "") != (msg == "") {
				t.Errorf("reason %q with message %q", reason, msg)
			}
			if tc.grant == nil {
				if grant != nil {
					t.Fatalf("granted %+v", grant)
				}
				return
			}
			want := &BreakGlassGrant{Environment: Prod, Request: "req-1", Requester: "oncall", Approvers: tc.grant, GrantedAt: now, ExpiresAt: now.Add(DefaultBreakGlassDuration)}
			if diff := cmp.Diff(want, grant); diff != "" {
				t.Errorf("grant (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBreakGlassDurationIsBounded(t *testing.T) {
	base := "groups:\n  qa: {members: [a]}\n  sre: {members: [b]}\n  breakglass: {members: [c, d]}\n"
	for _, tc := range []struct {
		duration string
		want     time.Duration
		bad      bool
	}{
		{"", DefaultBreakGlassDuration, false},
		{"90m", 90 * time.Minute, false},
		{"12h", MaxBreakGlassDuration, false},
		{"13h", 0, true},
		{"0s", 0, true},
		{"-1h", 0, true},
		{"four hours", 0, true},
	} {
		data := base
		if tc.duration != "" {
			data += "breakglass:\n  duration: " + tc.duration + "\n"
		}
		cfg, err := ParseApprovers([]byte(data))
		if tc.bad {
			if ReasonOf(err) != ApproversInvalid {
				t.Errorf("duration %q: %v, want %s", tc.duration, err, ApproversInvalid)
			}
			continue
		}
		if err != nil {
			t.Fatalf("duration %q: %v", tc.duration, err)
		}
		if got := cfg.BreakGlassDuration(); got != tc.want {
			t.Errorf("duration %q: %s, want %s", tc.duration, got, tc.want)
		}
	}
}

// breakGlassWorld is the gate's world with a breakglass group: oncall asks,
// sre-1 and sre-2 grant.
func breakGlassWorld(t *testing.T) *world {
	w := newWorld(t)
	cfg, err := ParseApprovers([]byte(`
groups:
  qa:
    members: [qa-lead, qa-2]
  sre:
    members: [sre-oncall, sre-2, qa-lead]
  breakglass:
    members: [sre-1, sre-2, bg-3]
`))
	if err != nil {
		t.Fatal(err)
	}
	w.approvers = cfg
	return w
}

// grantBreakGlass records a request by oncall and its grant by sre-1 and
// sre-2 now, lasting d, and returns the grant's event id.
func (w *world) grantBreakGlass(env Environment, d time.Duration) (request, grant string) {
	req := w.emit(EventBreakGlassRequested, env, BreakGlassRequest{Environment: env, Requester: "oncall", Reason: "outage"})
	a1 := w.emit(EventBreakGlassApproved, env, BreakGlassApproval{Environment: env, Request: req.ID, Approver: "sre-1"})
	a2 := w.emit(EventBreakGlassApproved, env, BreakGlassApproval{Environment: env, Request: req.ID, Approver: "sre-2"})
	g := w.emit(EventBreakGlassGranted, env, BreakGlassGrant{Environment: env, Request: req.ID, Requester: "oncall", Approvers: []string{"sre-1", "sre-2"},
		Approvals: []string{a1.ID, a2.ID}, GrantedAt: w.now, ExpiresAt: w.now.Add(d)})
	return req.ID, g.ID
}

// bgRun is a plan for the gate: made at the world's clock, then gated
// after the given time, with what the plan's evaluation found.
type bgRun struct {
	after   time.Duration
	waived  string
	pcrs    []PCR
	changes ChangeSummary
	claims  []ApprovalClaim
}

func (w *world) gateBreakGlass(env Environment, digest string, r bgRun) (Outcome, *State, []string) {
	w.t.Helper()
	st := &State{RunID: "run-" + digest[:4], Contract: &Contract{ID: contractID, Environment: env},
		Plan: &Plan{Digest: digest, Changes: r.changes}, Commit: "c0ffee", Change: &ChangeRecord{ID: w.change}, PCRs: r.pcrs}
	if r.waived != "" {
		st.Confidence = &Confidence{Phase: PostPlan, Band: BandFail, BreakGlass: r.waived}
	}
	w.emit(EventPlanCreated, env, PlanRecord{Digest: digest})
	w.now = w.now.Add(r.after)
	start := len(w.rec.events)
	em := NewEmitter(w.rec, "urn:test", st.RunID, func() time.Time { return w.now })
	p := Pipeline{Events: em, Now: func() time.Time { return w.now }, Stages: []Stage{
		&ImportApprovals{Sources: []ApprovalSource{source(r.claims)}, Approvers: StaticApprovers{w.approvers}, Membership: w, Change: w, Claims: fakeClaims{}, Evidence: w},
		Gate{Evidence: w, Approvers: StaticApprovers{w.approvers}, Membership: w, Now: func() time.Time { return w.now }},
	}}
	out := p.Run(w.t.Context(), st)
	types := w.typesSince(start)
	if out.Verdict == Pass {
		// The apply the authorization was for completes, as in a run.
		if _, err := em.Emit(w.t.Context(), EventApplyCompleted, contractID, env, map[string]any{"digest": digest, "applied": true}); err != nil {
			w.t.Fatal(err)
		}
	}
	return out, st, types
}

func TestGateBreakGlass(t *testing.T) {
	critical := []PCR{{RuleID: "nova.encryption", Severity: Critical, Result: PCRFail, Message: "bucket unencrypted"}}
	for _, tc := range []struct {
		name string
		// setup records what the chain holds before the plan, and returns
		// the grant the plan's score is accepted under, if any.
		setup  func(w *world, grant string)
		run    bgRun
		waive  bool
		want   Verdict
		reason Reason
		used   bool
	}{
		{name: "a grant authorizes without approvals", run: bgRun{after: time.Hour}, want: Pass, used: true},
		{name: "and accepts a score below the threshold", run: bgRun{after: time.Hour}, waive: true, want: Pass, used: true},
		{name: "without a grant the plan waits for approvals", setup: func(w *world, _ string) {
			w.rec.events = slices.DeleteFunc(w.rec.events, func(e Event) bool { return strings.HasPrefix(e.Type, "nova.breakglass.") })
		}, want: AwaitingApproval, reason: ApprovalRequired},
		{name: "an expired grant does not authorize", run: bgRun{after: 5 * time.Hour}, want: AwaitingApproval, reason: BreakGlassExpired},
		{name: "nor accept a score it accepted before it expired", run: bgRun{after: 5 * time.Hour}, waive: true, want: Fail, reason: BreakGlassExpired},
		{name: "a revoked grant does not authorize", setup: func(w *world, grant string) {
			w.emit(EventBreakGlassRevoked, Prod, BreakGlassRevocation{Environment: Prod, Request: w.requestOf(grant), Grant: grant, RevokedBy: "sre-1", Reason: "over"})
		}, run: bgRun{after: time.Minute}, waive: true, want: Fail, reason: BreakGlassRevoked},
		{name: "a grant for another environment does not authorize", setup: func(w *world, _ string) {
			w.rec.events = slices.DeleteFunc(w.rec.events, func(e Event) bool { return strings.HasPrefix(e.Type, "nova.breakglass.") })
			w.grantBreakGlass(QA, DefaultBreakGlassDuration)
		}, run: bgRun{after: time.Minute}, want: AwaitingApproval, reason: ApprovalRequired},
		{name: "never with a critical finding", run: bgRun{after: time.Hour, pcrs: critical}, want: Fail, reason: BreakGlassCriticalFinding},
		{name: "never a destroy", run: bgRun{after: time.Hour, changes: ChangeSummary{Destroy: 3}}, want: AwaitingApproval, reason: BreakGlassDestroy},
		{name: "a plan that destroys and creates is no destroy", run: bgRun{after: time.Hour, changes: ChangeSummary{Destroy: 1, Add: 1}}, want: Pass, used: true},
		{name: "an approver who left the group no longer counts", setup: func(w *world, _ string) {
			g := w.approvers.Groups[BreakGlassGroup]
			g.Members = []Login{"sre-1", "bg-3"}
			w.approvers.Groups[BreakGlassGroup] = g
		}, run: bgRun{after: time.Hour}, want: AwaitingApproval, reason: BreakGlassNotInGroup},
		{name: "a rejection stands", run: bgRun{after: time.Hour, waived: "", claims: []ApprovalClaim{{Approver: "sre-oncall", Environment: Prod, PlanDigest: digestA,
			Decision: Reject, Reason: "no", Source: SourceGiteaReview, SourceRef: "r1"}}}, waive: true, want: Fail, reason: ApprovalRejected},
		{name: "normal approvals need no grant", run: bgRun{after: time.Hour, claims: []ApprovalClaim{claim("sre-oncall", Prod, digestA, "r1")}}, want: Pass},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := breakGlassWorld(t)
			_, grant := w.grantBreakGlass(Prod, DefaultBreakGlassDuration)
			if tc.setup != nil {
				tc.setup(w, grant)
			}
			r := tc.run
			if tc.waive {
				r.waived = grant
			}
			out, st, types := w.gateBreakGlass(Prod, digestA, r)
			if out.Verdict != tc.want || (tc.reason != "" && out.Reason != tc.reason) {
				t.Fatalf("verdict %s reason %s, want %s %s: %+v", out.Verdict, out.Reason, tc.want, tc.reason, out.Results[len(out.Results)-1].Findings)
			}
			if got := slices.Contains(types, EventBreakGlassUsed); got != tc.used {
				t.Fatalf("nova.breakglass.used recorded: %v, want %v (%v)", got, tc.used, types)
			}
			if !tc.used {
				if st.Authorization != nil && st.Authorization.BreakGlass != "" {
					t.Errorf("authorized under break-glass: %+v", st.Authorization)
				}
				return
			}
			if a := st.Authorization; a == nil || a.BreakGlass != grant || a.Approver != "break-glass" {
				t.Fatalf("authorization %+v, want one under grant %s", a, grant)
			}
			// The use is on record right with the authorization it explains.
			if i, j := slices.Index(types, EventBreakGlassUsed), slices.Index(types, EventApplyAuthorized); j < 0 || i != j+1 {
				t.Errorf("events %v: the use must follow the authorization at once", types)
			}
			var use BreakGlassUse
			for _, e := range w.rec.events {
				if e.Type == EventBreakGlassUsed {
					if err := DecodeEventData(e, &use); err != nil {
						t.Fatal(err)
					}
				}
			}
			wantWaived := []string{WaivedApproval}
			if tc.waive {
				wantWaived = append(wantWaived, WaivedConfidence)
			}
			if use.Grant != grant || use.PlanDigest != digestA || !slices.Equal(use.Waived, wantWaived) || !slices.Equal(use.Approvers, []string{"sre-1", "sre-2"}) {
				t.Errorf("use %+v", use)
			}
			sum := SummarizeGate(w.rec.events)
			if b, _ := sum.FindBreakGlass(grant); b == nil || !b.ReviewOpen() {
				t.Errorf("the use opened no review: %+v", b)
			}
		})
	}
}

func (w *world) requestOf(grant string) string {
	w.t.Helper()
	b, err := SummarizeGate(w.rec.events).FindBreakGlass(grant)
	if err != nil {
		w.t.Fatal(err)
	}
	return b.Request
}

func TestBreakGlassReviewStaysOpenUntilRecorded(t *testing.T) {
	w := breakGlassWorld(t)
	req, grant := w.grantBreakGlass(Prod, DefaultBreakGlassDuration)
	if open := OpenBreakGlassReviews(w.rec.events); len(open) != 0 {
		t.Fatalf("an unused grant has an open review: %v", open)
	}
	if out, _, _ := w.gateBreakGlass(Prod, digestA, bgRun{after: time.Hour}); out.Verdict != Pass {
		t.Fatalf("gate: %s %s", out.Verdict, out.Reason)
	}
	open := OpenBreakGlassReviews(w.rec.events)
	if len(open[contractID]) != 1 || open[contractID][0].Grant != grant {
		t.Fatalf("open reviews %v, want grant %s", open, grant)
	}
	w.emit(EventBreakGlassReviewed, Prod, BreakGlassReview{Environment: Prod, Request: req, Grant: grant, Reviewer: "sre-1", Note: "pir-7"})
	if open := OpenBreakGlassReviews(w.rec.events); len(open[contractID]) != 0 {
		t.Fatalf("a recorded review is still open: %v", open)
	}
	// Another use while the grant holds opens it again.
	if out, _, _ := w.gateBreakGlass(Prod, digestB, bgRun{after: time.Minute}); out.Verdict != Pass {
		t.Fatalf("gate: %s %s", out.Verdict, out.Reason)
	}
	if open := OpenBreakGlassReviews(w.rec.events); len(open[contractID]) != 1 {
		t.Fatalf("a use after the review left it closed: %v", open)
	}
}

func TestBreakGlassWaiverReadsTheGrantThatHoldsNow(t *testing.T) {
	w := breakGlassWorld(t)
	_, grant := w.grantBreakGlass(Prod, time.Hour)
	for _, tc := range []struct {
		env   Environment
		after time.Duration
		want  string
	}{
		{Prod, time.Minute, grant},
		{QA, time.Minute, ""},
		{Prod, time.Hour, ""},
	} {
		g, err := BreakGlassGrants{Evidence: w, Now: func() time.Time { return w.now.Add(tc.after) }}.ActiveGrant(context.Background(), contractID, tc.env)
		if err != nil {
			t.Fatal(err)
		}
		got := ""
		if g != nil {
			got = g.Grant
		}
		if got != tc.want {
			t.Errorf("%s after %s: grant %q, want %q", tc.env, tc.after, got, tc.want)
		}
	}
}
