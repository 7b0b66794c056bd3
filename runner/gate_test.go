package runner

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const (
	contractID = "0c0ffee0-1111-4222-8333-444455556666"
	digestA    = "aaaa1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888"
	digestB    = "bbbb1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888"
)

// world is an evidence repo in memory plus the forge around it: the gate
// and the approvals stage run against it exactly as in a run.
type world struct {
	t         *testing.T
	rec       *memRecorder
	now       time.Time
	approvers *ApproverConfig
	authors   []Login
	unlinked  []string
	teams     map[string][]string
	// teamErr is what the forge answers about any team, when it cannot
	// tell (a token that may not read them).
	teamErr error
	// change is what every run deploys; newWorld records it applied in
	// dev, qa and prod, so each environment's gate may be reached.
	change string
}

func newWorld(t *testing.T) *world {
	cfg, err := ParseApprovers([]byte(`
groups:
  qa:
    members: [qa-lead, qa-2]
  sre:
    members: [sre-oncall, sre-2, qa-lead]
    teams: [platform/sre]
`))
	if err != nil {
		t.Fatal(err)
	}
	w := &world{t: t, rec: &memRecorder{}, now: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC), approvers: cfg,
		authors: []Login{"dev-author"}, teams: map[string][]string{"platform/sre": {"sre-team-member"}}, change: "change-1"}
	start := w.now
	for _, env := range []Environment{Dev, QA, Prod} {
		w.applied(env, w.change)
	}
	// Every chain a gate test builds also checks that the gate's summary
	// decides as the rules over the whole chain do.
	t.Cleanup(func() {
		events, _ := w.Chain(context.Background(), contractID)
		checkGateParity(t, events, w.approvers, start, w.now, w.now.Add(30*time.Hour), w.now.Add(100*time.Hour))
	})
	return w
}

// Chain is the contract's chain, numbered as an evidence store numbers it.
func (w *world) Chain(_ context.Context, id string) ([]Event, error) {
	var out []Event
	for _, e := range w.rec.events {
		if e.ContractID == id {
			e.Seq = int64(len(out) + 1)
			out = append(out, e)
		}
	}
	return out, nil
}

func (w *world) Change(context.Context) (Change, error) {
	return Change{Authors: w.authors, Unlinked: w.unlinked}, nil
}

// applied records change as applied in env, as an apply run does.
func (w *world) applied(env Environment, change string) {
	w.t.Helper()
	run := fmt.Sprintf("apply-%s-%d", env, len(w.rec.events))
	em := NewEmitter(w.rec, "urn:test", run, func() time.Time { return w.now })
	for _, e := range []EventSpec{
		{EventApplyAuthorized, Authorization{Digest: "applied-" + change, Environment: env, Approver: "autonomous", Change: change}},
		{EventApplyCompleted, map[string]any{"digest": "applied-" + change, "applied": true}},
	} {
		if _, err := em.Emit(w.t.Context(), e.Type, contractID, env, e.Data); err != nil {
			w.t.Fatal(err)
		}
	}
}

func (w *world) IsTeamMember(_ context.Context, team, login string) (bool, error) {
	if w.teamErr != nil {
		return false, w.teamErr
	}
	return slices.Contains(w.teams[team], login), nil
}

func (w *world) CheckTeam(context.Context, string) error { return w.teamErr }

// fakeClaims verifies a signed claim whose signature is the sha256 of the
// claim's canonical JSON: enough to tell a tampered claim from a good one.
type fakeClaims struct{}

func (fakeClaims) VerifyClaim(_ context.Context, c SignedClaim) error {
	want, _ := Digest(c.Claim)
	if c.Signature != want {
		return errors.New("signature does not match the claim")
	}
	return nil
}

func signed(claim LocalClaim) *SignedClaim {
	sig, _ := Digest(claim)
	return &SignedClaim{Claim: claim, Signature: sig}
}

type source []ApprovalClaim

func (source) Name() string { return "test" }
func (s source) Claims(context.Context, ApprovalRequest) ([]ApprovalClaim, error) {
	return s, nil
}

// claim is an approval by who of the plan with digest in env, from a PR
// review with the given reference.
func claim(who string, env Environment, digest, ref string) ApprovalClaim {
	return ApprovalClaim{Approver: who, Environment: env, PlanDigest: digest, Decision: Approve, Source: SourceGiteaReview, SourceRef: ref}
}

// run plans digest for env and runs the approvals stage and the gate with
// the claims the forge holds, as one run does.
func (w *world) run(env Environment, digest string, supersedes string, claims ...ApprovalClaim) (Outcome, *State) {
	w.t.Helper()
	st := &State{RunID: "run-" + w.now.Format("0102T1504"), Contract: &Contract{ID: contractID, Environment: env, Supersedes: supersedes},
		Plan: &Plan{Digest: digest}, Commit: "c0ffee", Change: &ChangeRecord{ID: w.change}}
	em := NewEmitter(w.rec, "urn:test", st.RunID, func() time.Time { return w.now })
	if _, err := em.Emit(w.t.Context(), EventPlanCreated, contractID, env, PlanRecord{Digest: digest}); err != nil {
		w.t.Fatal(err)
	}
	p := Pipeline{Events: em, Now: func() time.Time { return w.now }, Stages: []Stage{
		&ImportApprovals{Sources: []ApprovalSource{source(claims)}, Approvers: StaticApprovers{w.approvers}, Membership: w, Change: w, Claims: fakeClaims{}, Evidence: w},
		Gate{Evidence: w, Approvers: StaticApprovers{w.approvers}, Membership: w, Now: func() time.Time { return w.now }},
	}}
	out := p.Run(w.t.Context(), st)
	if out.Verdict == Pass {
		// The apply the authorization was for completes, as in a run.
		if _, err := em.Emit(w.t.Context(), EventApplyCompleted, contractID, env, map[string]any{"digest": digest, "applied": true}); err != nil {
			w.t.Fatal(err)
		}
	}
	return out, st
}

// approve imports the claims on digest in env as `nova approve` does:
// the approvals stage alone, so nothing is applied before the gate's
// next run.
func (w *world) approve(env Environment, digest string, claims ...ApprovalClaim) {
	w.t.Helper()
	st := &State{RunID: "approve-" + w.now.Format("0102T1504"), Contract: &Contract{ID: contractID, Environment: env},
		Plan: &Plan{Digest: digest}, Commit: "c0ffee", Change: &ChangeRecord{ID: w.change}}
	em := NewEmitter(w.rec, "urn:test", st.RunID, func() time.Time { return w.now })
	p := Pipeline{Events: em, Now: func() time.Time { return w.now }, Stages: []Stage{
		&ImportApprovals{Sources: []ApprovalSource{source(claims)}, Approvers: StaticApprovers{w.approvers}, Membership: w, Change: w, Claims: fakeClaims{}, Evidence: w},
	}}
	if out := p.Run(w.t.Context(), st); out.Verdict != Pass {
		w.t.Fatalf("approving %s in %s: %s %s", ShortDigest(digest), env, out.Verdict, out.Reason)
	}
}

// typesSince lists the event types recorded from index i on.
func (w *world) typesSince(i int) []string {
	var out []string
	for _, e := range w.rec.events[i:] {
		out = append(out, e.Type)
	}
	return out
}

func (w *world) lastChecked() ApprovalCheck {
	w.t.Helper()
	for i := len(w.rec.events) - 1; i >= 0; i-- {
		if w.rec.events[i].Type == EventApprovalChecked {
			var c ApprovalCheck
			if err := DecodeEventData(w.rec.events[i], &c); err != nil {
				w.t.Fatal(err)
			}
			return c
		}
	}
	w.t.Fatal("no nova.approval.checked event")
	return ApprovalCheck{}
}

func TestGateIgnoresApprovalsThatDoNotCount(t *testing.T) {
	tests := []struct {
		name   string
		claim  ApprovalClaim
		reason Reason
	}{
		{"by someone outside the group", claim("outsider", QA, digestA, "1"), ApproverNotEligible},
		{"by the change's author", claim("dev-author", QA, digestA, "2"), ApproverNotEligible},
		{"by the author even when listed", claim("qa-2", QA, digestA, "3"), ApproverNotEligible},
		{"by the author under another case", claim("QA-2", QA, digestA, "3"), ApproverNotEligible},
		{"by a look-alike of a member", claim("qа-lead", QA, digestA, "3"), ApproverNotEligible},
		{"for another plan (a stale review, a wrong digest prefix)", claim("qa-lead", QA, digestB, "4"), ApproverNotEligible},
		{"for another environment", claim("qa-lead", Prod, digestA, "5"), ApproverNotEligible},
		// The PR under review may add mallory to qa in its own
		// approvers.yml; the gate reads the trusted base's, which does not.
		{"by someone the change adds to the group", claim("mallory", QA, digestA, "6"), ApproverNotEligible},
		{"a tampered signed claim", func() ApprovalClaim {
			c := claim("qa-lead", QA, digestA, "claim-1")
			c.Source = SourceLocal
			c.Signed = signed(LocalClaim{ID: "claim-1", ContractID: contractID, Environment: QA, PlanDigest: digestB, Approver: "qa-lead", Decision: Approve})
			c.Signed.Claim.PlanDigest = digestA // edited after signing
			return c
		}(), ApprovalClaimInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			switch tt.name {
			case "by the author even when listed", "by the author under another case":
				w.authors = append(w.authors, "qa-2")
			}
			start := len(w.rec.events)
			out, st := w.run(QA, digestA, "", tt.claim)
			if out.Verdict != AwaitingApproval || st.Authorization != nil {
				t.Fatalf("verdict %s, authorization %+v; want awaiting approval", out.Verdict, st.Authorization)
			}
			if got := w.typesSince(start + 1); !cmp.Equal(got, []string{EventApprovalChecked, EventApprovalRequested}) {
				t.Errorf("events %v: nothing may be imported", got)
			}
			check := w.lastChecked()
			if check.Imported != 0 || len(check.Ignored) != 1 || check.Ignored[0].Reason != tt.reason {
				t.Errorf("checked = %+v, want the claim ignored with %s", check, tt.reason)
			}
		})
	}
}

// TestGateRefusesApprovalsOfAChangeByUnknownAuthors: an approver who
// commits under an email the forge links to nobody, in a pull request a
// colleague opened, is not listed among the authors; so no approval
// counts while any commit's author is unknown. A rejection still holds.
func TestGateRefusesApprovalsOfAChangeByUnknownAuthors(t *testing.T) {
	w := newWorld(t)
	w.unlinked = []string{"5ca1ab1e00000000000000000000000000000000"}
	out, st := w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r1"))
	if out.Verdict != Fail || out.Reason != ChangeAuthorUnknown || st.Authorization != nil {
		t.Fatalf("approval of a change with an unknown author: %s %s %+v", out.Verdict, out.Reason, st.Authorization)
	}
	if msg := out.Results[len(out.Results)-1].Findings[0].Message; !strings.Contains(msg, "5ca1ab1e0000") {
		t.Errorf("the refusal does not name the commit: %s", msg)
	}
	if n := countType(w.rec.events, EventApprovalRecorded); n != 0 {
		t.Errorf("%d approvals recorded", n)
	}
	reject := claim("qa-2", QA, digestA, "r2")
	reject.Decision, reject.Reason = Reject, "who wrote 5ca1ab1e?"
	w.run(QA, digestA, "", reject)
	if n := countType(w.rec.events, EventApprovalRejected); n != 1 {
		t.Errorf("%d rejections recorded, want the member's rejection", n)
	}
	w.unlinked = nil
	if out, _ := w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r1")); out.Reason != ApprovalRejected {
		t.Errorf("once the authors are known: %s %s, want the rejection to hold", out.Verdict, out.Reason)
	}
}

func TestGatePromotion(t *testing.T) {
	w := newWorld(t)
	if out, st := w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r1")); out.Verdict != Pass || st.Authorization.Approver != "qa-lead" || len(st.Authorization.Approvals) != 1 {
		t.Fatalf("qa approved by qa-lead: %s %+v", out.Verdict, st.Authorization)
	}
	// A second read of the same review is not a second approval.
	before := len(w.rec.events)
	w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r1"))
	if n := countType(w.rec.events[before:], EventApprovalRecorded); n != 0 {
		t.Errorf("the same review was imported %d more time(s)", n)
	}

	// prod by the qa approver: separation of duties, the refusal
	// recorded, and the plan goes on waiting for someone else (exit 3).
	start := len(w.rec.events)
	out, st := w.run(Prod, digestA, "", claim("qa-lead", Prod, digestA, "r2"))
	if out.Verdict != AwaitingApproval || out.Reason != SeparationOfDutiesViolation || st.Authorization != nil {
		t.Fatalf("prod by the qa approver: %s %s", out.Verdict, out.Reason)
	}
	if got := w.typesSince(start + 1); !cmp.Equal(got, []string{EventApprovalChecked, EventApprovalRecorded, EventApprovalRequested, EventApprovalRefused}) {
		t.Errorf("events %v", got)
	}
	msg := out.Results[len(out.Results)-1].Findings[0].Message
	for _, who := range []string{"sre-2", "sre-oncall", "platform/sre"} {
		if !strings.Contains(msg, who) {
			t.Errorf("the message does not name %s as one who may approve instead: %s", who, msg)
		}
	}
	if strings.Contains(msg, ", qa-lead") {
		t.Errorf("the message offers the qa approver again: %s", msg)
	}

	// Another SRE (here through the team) authorizes.
	if out, st := w.run(Prod, digestA, "", claim("sre-team-member", Prod, digestA, "r3")); out.Verdict != Pass || st.Authorization.Approver != "sre-team-member" {
		t.Fatalf("prod by another sre: %s %+v", out.Verdict, st.Authorization)
	}
	// dr obeys separation of duties too.
	if out, _ := w.run(DR, digestA, "", claim("qa-lead", DR, digestA, "r4")); out.Reason != SeparationOfDutiesViolation {
		t.Errorf("dr by the qa approver: %s %s", out.Verdict, out.Reason)
	}
}

func TestGateRejectionHoldsThePlan(t *testing.T) {
	w := newWorld(t)
	reject := claim("qa-2", QA, digestA, "r1")
	reject.Decision, reject.Reason = Reject, "load test is red"
	out, _ := w.run(QA, digestA, "", reject)
	if out.Verdict != Fail || out.Reason != ApprovalRejected {
		t.Fatalf("after a rejection: %s %s", out.Verdict, out.Reason)
	}
	if n := countType(w.rec.events, EventApprovalRejected); n != 1 {
		t.Errorf("%d rejection events, want 1", n)
	}
	// An approval of the rejected plan does not revive it.
	if out, _ := w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r2")); out.Reason != ApprovalRejected {
		t.Errorf("approval after rejection: %s %s, want still held", out.Verdict, out.Reason)
	}
	// A new plan can be approved.
	if out, _ := w.run(QA, digestB, "", claim("qa-lead", QA, digestB, "r3")); out.Verdict != Pass {
		t.Errorf("new plan approved: %s %s", out.Verdict, out.Reason)
	}
}

func TestGateTimeoutsCountBusinessDays(t *testing.T) {
	w := newWorld(t)
	w.now = time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC) // a Friday
	out, _ := w.run(QA, digestA, "")
	if out.Verdict != AwaitingApproval {
		t.Fatalf("first run: %s", out.Verdict)
	}
	steps := []struct {
		at       time.Time
		verdict  Verdict
		reason   Reason
		escalate bool
	}{
		{time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), AwaitingApproval, ApprovalRequired, false}, // Monday: 23 business hours
		{time.Date(2026, 11, 30, 15, 30, 0, 0, time.UTC), AwaitingApproval, ApprovalRequired, true}, // one business day
		{time.Date(2026, 11, 30, 16, 0, 0, 0, time.UTC), AwaitingApproval, ApprovalRequired, false}, // escalated once only
		{time.Date(2026, 12, 1, 16, 0, 0, 0, time.UTC), Fail, ApprovalFrozen, false},                // two business days
	}
	for _, s := range steps {
		w.now = s.at
		start := len(w.rec.events)
		out, _ := w.run(QA, digestA, "")
		if out.Verdict != s.verdict || out.Reason != s.reason {
			t.Errorf("%s: %s %s, want %s %s", s.at.Format(time.RFC1123), out.Verdict, out.Reason, s.verdict, s.reason)
		}
		if got := countType(w.rec.events[start:], EventApprovalEscalated) == 1; got != s.escalate {
			t.Errorf("%s: escalated %v, want %v", s.at.Format(time.RFC1123), got, s.escalate)
		}
	}
	// An approval given after the freeze does not move it.
	late := claim("qa-lead", QA, digestA, "late")
	late.At = w.now
	if out, _ := w.run(QA, digestA, "", late); out.Reason != ApprovalFrozen {
		t.Errorf("approval after the freeze: %s %s, want %s", out.Verdict, out.Reason, ApprovalFrozen)
	}
	// A re-submission naming the frozen request starts a new one.
	w2 := newWorld(t)
	w2.now = time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	w2.run(QA, digestA, "")
	request := w2.rec.events[len(w2.rec.events)-1].ID
	w2.now = time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)
	if out, _ := w2.run(QA, digestA, ""); out.Reason != ApprovalFrozen {
		t.Fatalf("not frozen: %s %s", out.Verdict, out.Reason)
	}
	if out, _ := w2.run(QA, digestB, "some-other-request"); out.Reason != ApprovalFrozen {
		t.Errorf("superseding another request unfroze it: %s %s", out.Verdict, out.Reason)
	}
	if out, _ := w2.run(QA, digestB, request); out.Verdict != AwaitingApproval {
		t.Errorf("re-submission superseding %s: %s %s, want awaiting approval", request, out.Verdict, out.Reason)
	}
	w2.now = w2.now.Add(2 * time.Hour)
	if out, _ := w2.run(QA, digestB, request); out.Verdict != AwaitingApproval {
		t.Errorf("after the re-submission: %s %s, want awaiting approval", out.Verdict, out.Reason)
	}
}

// TestGateShowsEachPlansOwnRequestTime: two pull requests of one contract
// wait in qa at once; each plan's message gives its own request's time,
// not the environment's pending request, which is the other's.
func TestGateShowsEachPlansOwnRequestTime(t *testing.T) {
	w := newWorld(t)
	message := func(out Outcome, _ *State) string {
		t.Helper()
		last := out.Results[len(out.Results)-1]
		if out.Verdict != AwaitingApproval || len(last.Findings) == 0 {
			t.Fatalf("%s %s, want awaiting approval", out.Verdict, out.Reason)
		}
		return last.Findings[0].Message
	}
	first := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	second := first.Add(3 * time.Hour)
	w.now = first
	if m := message(w.run(QA, digestA, "")); strings.Contains(m, "requested") && !strings.Contains(m, "(requested 2026-11-30T09:00:00Z)") {
		t.Errorf("PR #1's first plan: %s", m)
	}
	w.now = second
	// Its first run makes its request: there is no earlier one to show.
	if m := message(w.run(QA, digestB, "")); strings.Contains(m, "09:00:00Z") {
		t.Errorf("PR #2's plan shows PR #1's request time: %s", m)
	}
	w.now = second.Add(time.Hour)
	if m := message(w.run(QA, digestA, "")); !strings.Contains(m, "(requested 2026-11-30T09:00:00Z)") {
		t.Errorf("PR #1's plan again: %s\nwant its own request's time, 2026-11-30T09:00:00Z", m)
	}
	if m := message(w.run(QA, digestB, "")); !strings.Contains(m, "(requested 2026-11-30T12:00:00Z)") {
		t.Errorf("PR #2's plan again: %s\nwant its own request's time, 2026-11-30T12:00:00Z", m)
	}
}

func TestGateAcceptsASignedClaimOnce(t *testing.T) {
	w := newWorld(t)
	c := claim("qa-lead", QA, digestA, "claim-7")
	c.Source = SourceLocal
	c.Signed = signed(LocalClaim{ID: "claim-7", ContractID: contractID, Environment: QA, PlanDigest: digestA, Approver: "qa-lead", Decision: Approve})
	if out, _ := w.run(QA, digestA, "", c); out.Verdict != Pass {
		t.Fatalf("signed claim: %s %s", out.Verdict, out.Reason)
	}
	// Replayed under another reference (so it is not a mere re-read).
	replay := c
	replay.SourceRef = "claim-7-again"
	replay.Signed = signed(LocalClaim{ID: "claim-7", ContractID: contractID, Environment: QA, PlanDigest: digestA, Approver: "qa-lead", Decision: Approve})
	replay.Signed.Claim.ID = "claim-7"
	out, _ := w.run(QA, digestA, "", replay)
	if check := w.lastChecked(); len(check.Ignored) != 1 || check.Ignored[0].Reason != ApprovalClaimInvalid {
		t.Errorf("replayed claim: %+v (verdict %s)", check, out.Verdict)
	}
}

func TestBusinessDuration(t *testing.T) {
	fri := time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC)
	tests := []struct {
		to   time.Time
		want time.Duration
	}{
		{fri, 0},
		{time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC), 9 * time.Hour},  // Saturday noon: only Friday counts
		{time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC), 9 * time.Hour},   // Monday midnight
		{time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC), 24 * time.Hour}, // Monday, same hour
		{time.Date(2026, 12, 1, 15, 0, 0, 0, time.UTC), 48 * time.Hour},
	}
	for _, tt := range tests {
		if got := BusinessDuration(fri, tt.to); got != tt.want {
			t.Errorf("BusinessDuration(Fri 15:00, %s) = %s, want %s", tt.to.Format(time.RFC1123), got, tt.want)
		}
	}
}

func countType(events []Event, typ string) int {
	n := 0
	for _, e := range events {
		if e.Type == typ {
			n++
		}
	}
	return n
}

func TestGateWithoutEvidenceOrApproversIsAnError(t *testing.T) {
	st := &State{Contract: &Contract{ID: "c", Environment: Prod}, Plan: &Plan{Digest: "d"}}
	if _, err := (Gate{}).Run(t.Context(), st); ReasonOf(err) != InternalError {
		t.Errorf("no evidence: %v", err)
	}
	w := newWorld(t)
	if _, err := (Gate{Evidence: w}).Run(t.Context(), st); ReasonOf(err) != ApproversInvalid {
		t.Errorf("no approvers: %v", err)
	}
	dev := &State{Contract: &Contract{ID: "c", Environment: Dev}, Plan: &Plan{Digest: "d1"}}
	if res, err := (Gate{}).Run(t.Context(), dev); err != nil || res.Verdict != Pass || dev.Authorization.Approver != "autonomous" {
		t.Errorf("dev without evidence: %+v %v", res, err)
	}
}

func TestAddBusinessDuration(t *testing.T) {
	tests := []struct {
		from time.Time
		d    time.Duration
		want time.Time
	}{
		{time.Date(2026, 11, 27, 15, 0, 0, 0, time.UTC), 24 * time.Hour, time.Date(2026, 11, 30, 15, 0, 0, 0, time.UTC)}, // Friday → Monday
		{time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC), time.Hour, time.Date(2026, 11, 30, 1, 0, 0, 0, time.UTC)},       // Saturday → Monday 01:00
		{time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC), 48 * time.Hour, time.Date(2026, 12, 2, 9, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		got := AddBusinessDuration(tt.from, tt.d)
		if !got.Equal(tt.want) {
			t.Errorf("AddBusinessDuration(%s, %s) = %s, want %s", tt.from.Format(time.RFC1123), tt.d, got.Format(time.RFC1123), tt.want.Format(time.RFC1123))
		}
		if back := BusinessDuration(tt.from, got); back != tt.d {
			t.Errorf("BusinessDuration back = %s, want %s", back, tt.d)
		}
	}
}

// TestGateComparesLoginsWithoutCase: the forges fold case in logins, so
// the gate does too, in separation of duties as in membership.
func TestGateComparesLoginsWithoutCase(t *testing.T) {
	w := newWorld(t)
	if out, _ := w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r1")); out.Verdict != Pass {
		t.Fatalf("qa: %s %s", out.Verdict, out.Reason)
	}
	out, _ := w.run(Prod, digestA, "", claim("QA-LEAD", Prod, digestA, "r2"))
	if out.Reason != SeparationOfDutiesViolation {
		t.Errorf("prod approved as QA-LEAD after qa as qa-lead: %s %s, want %s", out.Verdict, out.Reason, SeparationOfDutiesViolation)
	}
	for _, e := range w.rec.events {
		var a ApprovalRecord
		if e.Type == EventApprovalRecorded && DecodeEventData(e, &a) == nil && a.Approver != strings.ToLower(a.Approver) {
			t.Errorf("approval recorded under %q, not the canonical login", a.Approver)
		}
	}
}

// TestGateRechecksMembership: an approval stops counting when its
// approver leaves the group, before the apply it would authorize.
func TestGateRechecksMembership(t *testing.T) {
	w := newWorld(t)
	out, _ := w.run(QA, digestA, "", claim("qa-2", QA, digestA, "r1"))
	if out.Verdict != Pass {
		t.Fatalf("qa-2 approves: %s %s", out.Verdict, out.Reason)
	}
	// qa-2 approves digestB, then leaves the qa group before the apply.
	w.run(QA, digestB, "")
	w.approve(QA, digestB, claim("qa-2", QA, digestB, "r2"))
	cfg, err := ParseApprovers([]byte("groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-oncall]\n"))
	if err != nil {
		t.Fatal(err)
	}
	w.approvers = cfg
	out, st := w.run(QA, digestB, "")
	if out.Verdict != AwaitingApproval || out.Reason != ApproverLeftGroup || st.Authorization != nil {
		t.Fatalf("after qa-2 left qa: %s %s %+v, want awaiting approval with %s", out.Verdict, out.Reason, st.Authorization, ApproverLeftGroup)
	}
	// The same for a team member the forge no longer lists.
	w2 := newWorld(t)
	if out, _ := w2.run(QA, digestA, "", claim("qa-lead", QA, digestA, "q")); out.Verdict != Pass {
		t.Fatal(out.Reason)
	}
	w2.run(Prod, digestA, "", claim("sre-team-member", Prod, digestB, "x"))
	w2.run(Prod, digestB, "")
	w2.approve(Prod, digestB, claim("sre-team-member", Prod, digestB, "r3"))
	w2.teams = nil
	if out, _ := w2.run(Prod, digestB, ""); out.Reason != ApproverLeftGroup {
		t.Errorf("after the team lost its member: %s %s, want %s", out.Verdict, out.Reason, ApproverLeftGroup)
	}
}

// TestTeamsTheTokenCannotReadStopTheRun: a token that may not read the
// approver group's teams is a configuration error, named by the first run
// of the environment (before anyone approves) and by the gate's recheck,
// never "ignored": a team member's rejection would go unheard.
func TestTeamsTheTokenCannotReadStopTheRun(t *testing.T) {
	unreadable := Errorf(ApproverTeamUnreadable, "reading team platform/sre: 403 Forbidden")
	for _, tt := range []struct {
		name   string
		claims []ApprovalClaim
	}{
		{"the first run, before anyone approved", nil},
		{"a team member's rejection", []ApprovalClaim{func() ApprovalClaim {
			c := claim("sre-team-member", Prod, digestA, "r1")
			c.Decision, c.Reason = Reject, "not this week"
			return c
		}()}},
		{"a listed member's approval", []ApprovalClaim{claim("sre-oncall", Prod, digestA, "r2")}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			w.teamErr = unreadable
			start := len(w.rec.events)
			out, st := w.run(Prod, digestA, "", tt.claims...)
			if out.Verdict != Errored || out.Reason != ApproverTeamUnreadable || st.Authorization != nil {
				t.Fatalf("%s %s %+v, want an error with %s", out.Verdict, out.Reason, st.Authorization, ApproverTeamUnreadable)
			}
			if n := countType(w.rec.events[start:], EventApprovalRecorded) + countType(w.rec.events[start:], EventApprovalRejected) + countType(w.rec.events[start:], EventApprovalChecked); n != 0 {
				t.Errorf("%d approval events recorded; a run that cannot read the teams decides nothing", n)
			}
		})
	}

	t.Run("the gate's recheck", func(t *testing.T) {
		w := newWorld(t)
		if out, _ := w.run(Prod, digestB, "", claim("sre-team-member", Prod, digestB, "r3")); out.Verdict != Pass {
			t.Fatalf("sre-team-member approves: %s %s", out.Verdict, out.Reason)
		}
		w.teamErr = unreadable
		st := &State{RunID: "recheck", Contract: &Contract{ID: contractID, Environment: Prod}, Plan: &Plan{Digest: digestB}, Change: &ChangeRecord{ID: w.change}}
		_, err := Gate{Evidence: w, Approvers: StaticApprovers{w.approvers}, Membership: w, Now: func() time.Time { return w.now }}.Run(t.Context(), st)
		if ReasonOf(err) != ApproverTeamUnreadable {
			t.Errorf("gate: %v, want reason %s", err, ApproverTeamUnreadable)
		}
	})
}

// TestGateEnforcesPromotionOrder: an environment applies a change only
// after the one before it did, whatever order the workflow runs them in.
func TestGateEnforcesPromotionOrder(t *testing.T) {
	w := newWorld(t)
	w.change = "change-2" // applied nowhere yet
	for _, env := range []Environment{QA, Prod, DR} {
		out, st := w.run(env, digestA, "", claim("sre-oncall", env, digestA, "r-"+string(env)))
		if out.Verdict != Fail || out.Reason != PromotionOrderViolation || st.Authorization != nil {
			t.Errorf("%s before %s applied the change: %s %s", env, env.Previous(), out.Verdict, out.Reason)
		}
	}
	w.applied(Dev, "change-2")
	// Authorized is not applied: an apply of qa that never completed
	// leaves prod waiting.
	em := NewEmitter(w.rec, "urn:test", "qa-unfinished", func() time.Time { return w.now })
	if _, err := em.Emit(t.Context(), EventApplyAuthorized, contractID, QA, Authorization{Digest: digestB, Environment: QA, Change: "change-2"}); err != nil {
		t.Fatal(err)
	}
	if out, _ := w.run(Prod, digestA, "", claim("sre-oncall", Prod, digestA, "r2")); out.Reason != PromotionOrderViolation {
		t.Errorf("prod after qa was only authorized: %s %s", out.Verdict, out.Reason)
	}
	w2 := newWorld(t)
	w2.change = "change-2"
	w2.applied(Dev, "change-2")
	if out, st := w2.run(QA, digestA, "", claim("qa-lead", QA, digestA, "r1")); out.Verdict != Pass || st.Authorization.Change != "change-2" {
		t.Fatalf("qa after dev: %s %s", out.Verdict, out.Reason)
	}
	if out, _ := w2.run(Prod, digestA, "", claim("sre-oncall", Prod, digestA, "r2")); out.Verdict != Pass {
		t.Errorf("prod after qa applied: %s %s", out.Verdict, out.Reason)
	}
	// A run that did not identify its change reaches no guarded env.
	st := &State{Contract: &Contract{ID: contractID, Environment: QA}, Plan: &Plan{Digest: digestA}}
	res, err := Gate{Evidence: w2, Approvers: StaticApprovers{w2.approvers}}.Run(t.Context(), st)
	if err != nil || res.Verdict != Fail || res.Findings[0].Reason != PromotionOrderViolation {
		t.Errorf("gate without a change: %+v %v", res, err)
	}
}

// TestGateCountsNoApprovalFromBeforeTheEnvironmentChanged: a plan can be
// byte for byte one approved before the environment last changed — prod,
// rolled back from change-2 to change-1, plans change-2 again from the
// same state — and that approval was for then. Counted, it would let
// anyone undo the rollback with nobody approving; so the plan waits for
// a new approval. A destroy's plan likewise.
func TestGateCountsNoApprovalFromBeforeTheEnvironmentChanged(t *testing.T) {
	w := newWorld(t)
	w.change = "change-2"
	w.applied(Dev, "change-2")
	w.applied(QA, "change-2")
	if out, _ := w.run(Prod, digestB, "", claim("sre-oncall", Prod, digestB, "r1")); out.Verdict != Pass {
		t.Fatalf("change-2 in prod: %s %s", out.Verdict, out.Reason)
	}
	w.applied(Prod, "change-1") // the rollback
	if out, st := w.run(Prod, digestB, ""); out.Verdict != AwaitingApproval || out.Reason != ApprovalRequired || st.Authorization != nil {
		t.Errorf("change-2 planned again after the rollback, on the approval from before it: %s %s", out.Verdict, out.Reason)
	}
	if out, _ := w.run(Prod, digestB, "", claim("sre-2", Prod, digestB, "r2")); out.Verdict != Pass {
		t.Errorf("change-2 approved again: %s %s", out.Verdict, out.Reason)
	}

	if out, _ := w.destroy(Prod, digestD, claim("sre-oncall", Prod, digestD, "d1")); out.Verdict != AwaitingApproval || out.Reason != DestroyNeedsMoreApprovals {
		t.Fatalf("prod's destroy approved once: %s %s", out.Verdict, out.Reason)
	}
	w.applied(Prod, "change-1")
	if out, st := w.destroy(Prod, digestD, claim("sre-2", Prod, digestD, "d2")); out.Verdict != AwaitingApproval || out.Reason != DestroyNeedsMoreApprovals || st.Authorization != nil {
		t.Errorf("prod's destroy, once approved before prod changed and once since: %s %s", out.Verdict, out.Reason)
	}
	if out, _ := w.destroy(Prod, digestD, claim("sre-oncall", Prod, digestD, "d3")); out.Verdict != Pass {
		t.Errorf("prod's destroy approved twice since prod changed: %s %s", out.Verdict, out.Reason)
	}
}

// TestGateSupersedesOnlyAFrozenRequest: `supersedes` comes from the change
// under review; naming a request that is merely waiting must not restart
// its clock, or it would never escalate.
func TestGateSupersedesOnlyAFrozenRequest(t *testing.T) {
	w := newWorld(t)
	w.now = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC) // Monday
	w.run(QA, digestA, "")
	request := w.rec.events[len(w.rec.events)-1].ID
	w.now = w.now.Add(25 * time.Hour)
	start := len(w.rec.events)
	w.run(QA, digestA, request)
	if countType(w.rec.events[start:], EventApprovalEscalated) != 1 {
		t.Errorf("a waiting request named in supersedes did not escalate: %v", w.typesSince(start))
	}
	w.now = w.now.Add(24 * time.Hour)
	if out, _ := w.run(QA, digestA, request); out.Verdict != AwaitingApproval {
		t.Errorf("the frozen request, superseded: %s %s, want a new request", out.Verdict, out.Reason)
	}
}

// TestGateLetsAChangeEnterWhereItsContractSays: a contract that declares
// qa cannot run in dev (--env may only raise it), so qa is where its
// changes enter; prod still follows qa.
func TestGateLetsAChangeEnterWhereItsContractSays(t *testing.T) {
	w := newWorld(t)
	w.change = "declared-qa"
	st := &State{RunID: "r1", Contract: &Contract{ID: contractID, Environment: QA, Declared: QA}, Plan: &Plan{Digest: digestA}, Change: &ChangeRecord{ID: w.change}}
	sum := SummarizeGate(w.rec.events)
	if res, blocked := promotionOrder(sum, QA, QA, st.Change); blocked {
		t.Errorf("qa, declared qa: %+v", res)
	}
	if res, blocked := promotionOrder(sum, Prod, QA, st.Change); !blocked || res.Findings[0].Reason != PromotionOrderViolation {
		t.Errorf("prod, declared qa, qa never applied it: %+v", res)
	}
	if _, blocked := promotionOrder(sum, Prod, Prod, st.Change); blocked {
		t.Error("prod, declared prod: held")
	}
	if _, blocked := promotionOrder(sum, QA, Dev, st.Change); !blocked {
		t.Error("qa, declared dev, dev never applied it: not held")
	}
}
