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

func TestDecideLock(t *testing.T) {
	held := &PullRequestHold{PullRequest: 1, Change: "c1c1c1c1c1c1c1c1c1c1", Event: "ev-apply-1"}
	tests := []struct {
		name string
		in   lockInput
		// want is the verdict and reason, or the error's reason.
		want    string
		summary string
	}{
		{"dev, free", lockInput{Env: Dev, PullRequest: 2}, "pass", "dev is free: pull request #2 holds it once it applies"},
		{"dev, held by this pull request", lockInput{Env: Dev, PullRequest: 1, Hold: held}, "pass", "pull request #1 holds dev"},
		{"dev, held by an open pull request", lockInput{Env: Dev, PullRequest: 2, Hold: held, HolderState: PullRequestOpen}, "fail STATE_HELD_BY_PR", "dev is held by pull request #1"},
		{"dev, held by a merged pull request", lockInput{Env: Dev, PullRequest: 2, Hold: held, HolderState: PullRequestMerged}, "pass", "pull request #1 held dev until it was merged: dev is free"},
		{"dev, held by a closed pull request", lockInput{Env: Dev, PullRequest: 2, Hold: held, HolderState: PullRequestClosed}, "pass", "pull request #1 held dev until it was closed: dev is free"},
		{"dev, the holder's state unknown", lockInput{Env: Dev, PullRequest: 2, Hold: held}, "error FORGE_API_FAILED", ""},
		{"dev, the holder's state not one the rule knows", lockInput{Env: Dev, PullRequest: 2, Hold: held, HolderState: "draft"}, "error FORGE_API_FAILED", ""},
		{"dev, a run without a pull request", lockInput{Env: Dev, Hold: held, HolderState: PullRequestOpen}, "pass", "a run without a pull request neither waits for dev's lock nor takes it"},
		{"qa is not locked", lockInput{Env: QA, PullRequest: 2, Hold: held, HolderState: PullRequestOpen}, "pass", "qa is not locked per pull request"},
		{"prod is not locked", lockInput{Env: Prod, PullRequest: 2}, "pass", "prod is not locked per pull request"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.Contract = contractID
			res, err := decideLock(tc.in)
			got := string(res.Verdict)
			if len(res.Findings) > 0 {
				got += " " + string(res.Findings[0].Reason)
			}
			if err != nil {
				got = "error " + string(ReasonOf(err))
			}
			if got != tc.want || res.Summary != tc.summary {
				t.Fatalf("decideLock = %q %q (%v), want %q %q", got, res.Summary, err, tc.want, tc.summary)
			}
			if err != nil {
				return
			}
			want := LockCheck{Environment: tc.in.Env, PullRequest: tc.in.PullRequest, Holder: tc.in.Hold, HolderState: tc.in.HolderState}
			if diff := cmp.Diff(want, res.Data); diff != "" {
				t.Errorf("the lock's record (-want +got):\n%s", diff)
			}
			if res.Verdict == Pass && res.Event != EventLockChecked {
				t.Errorf("a passing lock records %q, want %s", res.Event, EventLockChecked)
			}
		})
	}
	// The refusal names the holder, its change and how to release it.
	res, _ := decideLock(lockInput{Contract: contractID, Env: Dev, PullRequest: 2, Hold: held, HolderState: PullRequestOpen})
	for _, want := range []string{"pull request #1", "change c1c1c1c1c1c1", "ev-apply-1", "merged or closed", "nova unlock --env dev --contract " + contractID} {
		if !strings.Contains(res.Findings[0].Message, want) {
			t.Errorf("the refusal lacks %q: %s", want, res.Findings[0].Message)
		}
	}
}

// prStates is the forge's word on pull requests, and a log of what was
// asked.
type prStates struct {
	states map[int64]PullRequestState
	err    error
	asked  []int64
}

func (p *prStates) PullRequestState(_ context.Context, n int64) (PullRequestState, error) {
	p.asked = append(p.asked, n)
	return p.states[n], p.err
}

// applyAs records an authorized apply of change in env by a run of pull
// request pr (0: none), and returns the nova.apply.completed. In dev the
// gate authorizes it, as in a run; elsewhere the authorization is
// recorded as the gate would.
func (w *world) applyAs(env Environment, pr int64, change string) Event {
	w.t.Helper()
	st := &State{RunID: fmt.Sprintf("run-pr%d-%d", pr, len(w.rec.events)), PullRequest: pr,
		Contract: &Contract{ID: contractID, Environment: env}, Plan: &Plan{Digest: digestA}, Change: &ChangeRecord{ID: change}}
	em := NewEmitter(w.rec, "urn:test", st.RunID, func() time.Time { return w.now })
	if env == Dev {
		p := Pipeline{Events: em, Stages: []Stage{Gate{Evidence: w}}}
		if out := p.Run(w.t.Context(), st); out.Verdict != Pass || st.Authorization.PullRequest != pr {
			w.t.Fatalf("%s gate for pull request #%d: %s %s, %+v", env, pr, out.Verdict, out.Reason, st.Authorization)
		}
	} else if _, err := em.Emit(w.t.Context(), EventApplyAuthorized, contractID, env, Authorization{Digest: digestA, Environment: env, Approver: "qa-lead", Change: change, PullRequest: pr}); err != nil {
		w.t.Fatal(err)
	}
	e, err := em.Emit(w.t.Context(), EventApplyCompleted, contractID, env, map[string]any{"digest": digestA, "applied": true})
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *world) emit(typ string, env Environment, data any) Event {
	w.t.Helper()
	e, err := NewEmitter(w.rec, "urn:test", "op-"+typ, func() time.Time { return w.now }).Emit(w.t.Context(), typ, contractID, env, data)
	if err != nil {
		w.t.Fatal(err)
	}
	return e
}

func (w *world) hold(env Environment) *PullRequestHold {
	return SummarizeGate(w.rec.events).Env(env).Hold
}

// TestHoldFollowsTheEvidence: the pull request whose authorized apply
// completed last holds the environment; runs without one leave the hold
// as it was; a release ends the hold it names and no other.
func TestHoldFollowsTheEvidence(t *testing.T) {
	w := newWorld(t)
	if h := w.hold(Dev); h != nil {
		t.Fatalf("applies without a pull request took a hold: %+v", h)
	}
	first := w.applyAs(Dev, 1, "change-pr1")
	want := &PullRequestHold{PullRequest: 1, Change: "change-pr1", Event: first.ID}
	if diff := cmp.Diff(want, w.hold(Dev)); diff != "" {
		t.Fatalf("after pull request #1 applied (-want +got):\n%s", diff)
	}
	// A local run applies in dev: #1 still holds it.
	w.applyAs(Dev, 0, "change-local")
	if diff := cmp.Diff(want, w.hold(Dev)); diff != "" {
		t.Errorf("after a run without a pull request applied (-want +got):\n%s", diff)
	}
	// An authorization of #2 that never completed takes nothing.
	em := NewEmitter(w.rec, "urn:test", "pr2-failed", func() time.Time { return w.now })
	if _, err := em.Emit(t.Context(), EventApplyAuthorized, contractID, Dev, Authorization{Digest: digestB, Environment: Dev, Change: "change-pr2", PullRequest: 2}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.Emit(t.Context(), EventRunFailed, contractID, Dev, StageEventData{Stage: "apply", Verdict: Fail, Findings: []Finding{{Reason: TerraformApplyFailed}}}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, w.hold(Dev)); diff != "" {
		t.Errorf("after pull request #2's apply failed (-want +got):\n%s", diff)
	}
	// A release that names another hold ends nothing.
	w.emit(EventLockReleased, Dev, LockRelease{Environment: Dev, PullRequest: 1, Hold: "some-other-apply", Reason: "stale", ReleasedBy: "ops"})
	if diff := cmp.Diff(want, w.hold(Dev)); diff != "" {
		t.Errorf("after a release of another hold (-want +got):\n%s", diff)
	}
	w.emit(EventLockReleased, Dev, LockRelease{Environment: Dev, PullRequest: 1, Hold: first.ID, Reason: "abandoned", ReleasedBy: "ops"})
	if h := w.hold(Dev); h != nil {
		t.Errorf("after the release: %+v", h)
	}
	// The next pull request to apply takes it; other environments' holds
	// are their own.
	second := w.applyAs(Dev, 2, "change-pr2")
	w.applyAs(QA, 1, "change-pr1")
	if h := w.hold(Dev); h == nil || h.PullRequest != 2 || h.Event != second.ID {
		t.Errorf("after pull request #2 applied: %+v", h)
	}
	if h := w.hold(QA); h == nil || h.PullRequest != 1 {
		t.Errorf("qa: %+v", h)
	}
	// An apply of unknown outcome holds once someone finds it applied,
	// and not when they find it did not.
	for _, tc := range []struct {
		outcome string
		want    int64
	}{{ResolvedNotApplied, 2}, {ResolvedApplied, 3}} {
		em := NewEmitter(w.rec, "urn:test", "pr3-"+tc.outcome, func() time.Time { return w.now })
		if _, err := em.Emit(t.Context(), EventApplyAuthorized, contractID, Dev, Authorization{Digest: digestB, Environment: Dev, Change: "change-pr3", PullRequest: 3}); err != nil {
			t.Fatal(err)
		}
		if _, err := em.Emit(t.Context(), EventApplyIndeterminate, contractID, Dev, nil); err != nil {
			t.Fatal(err)
		}
		resolved := w.emit(EventApplyResolved, Dev, Resolution{Outcome: tc.outcome, Note: "checked the state", ResolvedBy: "ops"})
		h := w.hold(Dev)
		if h == nil || h.PullRequest != tc.want || (tc.want == 3 && h.Event != resolved.ID) {
			t.Errorf("resolved %s: %+v, want pull request #%d", tc.outcome, h, tc.want)
		}
	}
}

// TestPullRequestLockStage runs the lock as a pipeline does: it reads the
// holder from the evidence, asks the forge only about another pull
// request, and records its decision.
func TestPullRequestLockStage(t *testing.T) {
	w := newWorld(t)
	applied := w.applyAs(Dev, 1, "change-pr1")
	forgeDown := Errorf(ForgeAPIFailed, "reading the state of pull request 1: 502")
	tests := []struct {
		name  string
		pr    int64
		env   Environment
		forge prStates
		// want is the verdict and the reason; asked what the forge was
		// asked.
		want  string
		asked []int64
		event string
	}{
		{"the holder's own run", 1, Dev, prStates{}, "pass", nil, EventLockChecked},
		{"another pull request, the holder open", 2, Dev, prStates{states: map[int64]PullRequestState{1: PullRequestOpen}}, "fail STATE_HELD_BY_PR", []int64{1}, EventRunFailed},
		{"another pull request, the holder merged", 2, Dev, prStates{states: map[int64]PullRequestState{1: PullRequestMerged}}, "pass", []int64{1}, EventLockChecked},
		{"another pull request, the forge down", 2, Dev, prStates{err: forgeDown}, "error FORGE_API_FAILED", []int64{1}, EventRunFailed},
		{"qa, not locked", 2, QA, prStates{}, "pass", nil, EventLockChecked},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := &State{RunID: "lock-" + tc.name, Contract: &Contract{ID: contractID, Environment: tc.env}}
			em := NewEmitter(w.rec, "urn:test", st.RunID, func() time.Time { return w.now })
			p := Pipeline{Events: em, Stages: []Stage{&PullRequestLock{PullRequest: tc.pr, States: &tc.forge, Evidence: w}}}
			out := p.Run(t.Context(), st)
			got := string(out.Verdict)
			if out.Reason != "" {
				got += " " + string(out.Reason)
			}
			if got != tc.want || !slices.Equal(tc.forge.asked, tc.asked) {
				t.Fatalf("%s, asked %v; want %s, asked %v", got, tc.forge.asked, tc.want, tc.asked)
			}
			last := w.rec.events[len(w.rec.events)-1]
			if last.Type != tc.event || last.RunID != st.RunID {
				t.Fatalf("recorded %s by %s, want %s", last.Type, last.RunID, tc.event)
			}
			if out.Verdict == Errored {
				return
			}
			var data StageEventData
			var check LockCheck
			if err := DecodeEventData(last, &check); err != nil || DecodeEventData(last, &data) != nil {
				t.Fatalf("reading %s: %v", last.Type, err)
			}
			if tc.env == Dev && (check.Holder == nil || check.Holder.Event != applied.ID || check.PullRequest != tc.pr) {
				t.Errorf("the record names holder %+v for pull request #%d", check.Holder, check.PullRequest)
			}
		})
	}
	// Without a way to ask the forge, the hold of another stands and the
	// run says why.
	st := &State{Contract: &Contract{ID: contractID, Environment: Dev}}
	if _, err := (&PullRequestLock{PullRequest: 2, Evidence: w}).Run(t.Context(), st); ReasonOf(err) != ConfigInvalid || !strings.Contains(err.Error(), "#1 holds dev") {
		t.Errorf("no forge: %v", err)
	}
	if _, err := (&PullRequestLock{PullRequest: 2}).Run(t.Context(), st); ReasonOf(err) != InternalError {
		t.Errorf("no evidence: %v", err)
	}
	failing := &failingReader{err: errors.New("evidence unreadable")}
	if _, err := (&PullRequestLock{PullRequest: 2, Evidence: failing}).Run(t.Context(), st); err == nil {
		t.Error("an unreadable chain decided")
	}
}

type failingReader struct{ err error }

func (f *failingReader) Chain(context.Context, string) ([]Event, error) { return nil, f.err }
