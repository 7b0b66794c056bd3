package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// fakeStage is a hand-written fake: a name and a function.
type fakeStage struct {
	name string
	run  func(ctx context.Context, st *State) (Result, error)
}

func (f fakeStage) Name() string { return f.name }
func (f fakeStage) Run(ctx context.Context, st *State) (Result, error) {
	return f.run(ctx, st)
}

func passing(name string) fakeStage {
	return fakeStage{name, func(context.Context, *State) (Result, error) {
		return Result{Verdict: Pass, Summary: name + " ok", Event: "nova.test." + name}, nil
	}}
}

type memRecorder struct {
	events []Event
	fail   error
	head   *chainHead
}

func (m *memRecorder) Record(_ context.Context, e Event) error {
	if m.fail != nil {
		return m.fail
	}
	m.events = append(m.events, e)
	return nil
}

type headRecorder struct {
	memRecorder
}

func (h *headRecorder) ChainHead(context.Context, string) (int64, string, error) {
	return h.head.seq, h.head.hash, nil
}

func contractState() *State {
	return &State{RunID: "run-1", Contract: &Contract{ID: "c-1", Environment: Dev}}
}

func TestPipelineRecordsOneChainedEventPerStage(t *testing.T) {
	rec := &memRecorder{}
	p := Pipeline{
		Stages: []Stage{passing("a"), passing("b"), passing("c")},
		Events: NewEmitter(rec, "urn:test", "run-1", fixedClock()),
	}
	out := p.Run(t.Context(), contractState())
	if out.Verdict != Pass || len(out.Results) != 3 {
		t.Fatalf("outcome = %+v, want 3 passing results", out)
	}
	var types []string
	prev := ""
	for i, e := range rec.events {
		types = append(types, e.Type)
		if e.Seq != int64(i+1) {
			t.Errorf("event %d has seq %d", i, e.Seq)
		}
		if e.PrevEventHash != prev {
			t.Errorf("event %d preveventhash = %q, want hash of event %d %q", i, e.PrevEventHash, i-1, prev)
		}
		if e.SpecVersion != "1.0" || e.ID == "" || e.Source != "urn:test" || e.RunID != "run-1" || e.ContractID != "c-1" || e.Subject != "c-1" {
			t.Errorf("event %d envelope incomplete: %+v", i, e)
		}
		var err error
		if prev, err = e.Hash(); err != nil {
			t.Fatal(err)
		}
	}
	if diff := cmp.Diff([]string{"nova.test.a", "nova.test.b", "nova.test.c"}, types); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
}

func TestPipelineStopsAtFirstNonPass(t *testing.T) {
	failing := fakeStage{"policy", func(context.Context, *State) (Result, error) {
		return Result{Verdict: Fail, Summary: "denied", Findings: []Finding{{Reason: StackUnknown, Message: "no"}}}, nil
	}}
	broken := fakeStage{"plan", func(context.Context, *State) (Result, error) {
		return Result{}, Errorf(TerraformNotFound, "no terraform")
	}}
	gate := fakeStage{"gate", func(context.Context, *State) (Result, error) {
		return Result{Verdict: AwaitingApproval, Summary: "wait", Event: EventApprovalRequested,
			Findings: []Finding{{Reason: ApprovalRequired, Message: "wait"}}}, nil
	}}
	panicsIfRun := fakeStage{"never", func(context.Context, *State) (Result, error) {
		t.Error("a stage after the stopping stage ran")
		return Result{Verdict: Pass}, nil
	}}
	tests := []struct {
		name        string
		stop        Stage
		wantVerdict Verdict
		wantReason  Reason
		wantEvent   string
	}{
		{"fail", failing, Fail, StackUnknown, EventRunFailed},
		{"error", broken, Errored, TerraformNotFound, EventRunFailed},
		{"awaiting approval", gate, AwaitingApproval, ApprovalRequired, EventApprovalRequested},
		{"no verdict is a bug", fakeStage{"empty", func(context.Context, *State) (Result, error) { return Result{}, nil }}, Errored, InternalError, EventRunFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &memRecorder{}
			p := Pipeline{Stages: []Stage{passing("schema"), tt.stop, panicsIfRun}, Events: NewEmitter(rec, "urn:test", "r", nil)}
			out := p.Run(t.Context(), contractState())
			if out.Verdict != tt.wantVerdict || out.Reason != tt.wantReason {
				t.Errorf("outcome = %s/%s, want %s/%s", out.Verdict, out.Reason, tt.wantVerdict, tt.wantReason)
			}
			if len(rec.events) != 2 || rec.events[1].Type != tt.wantEvent {
				t.Fatalf("events = %d, last type %q; want 2 with %q", len(rec.events), lastType(rec.events), tt.wantEvent)
			}
			var data StageEventData
			if err := json.Unmarshal(rec.events[1].Data, &data); err != nil {
				t.Fatal(err)
			}
			if data.Stage != tt.stop.Name() || data.Verdict != tt.wantVerdict || len(data.Findings) == 0 || data.Findings[0].Reason != tt.wantReason {
				t.Errorf("failure event data = %+v", data)
			}
		})
	}
}

func TestPipelineFailsClosedWhenEventsCannotBeWritten(t *testing.T) {
	rec := &memRecorder{fail: errors.New("disk full")}
	ran := false
	second := fakeStage{"apply", func(context.Context, *State) (Result, error) {
		ran = true
		return Result{Verdict: Pass}, nil
	}}
	p := Pipeline{Stages: []Stage{passing("plan"), second}, Events: NewEmitter(rec, "urn:test", "r", nil)}
	out := p.Run(t.Context(), contractState())
	if ran {
		t.Error("the stage after an unrecorded one ran")
	}
	if out.Verdict != Errored || out.Reason != EventWriteFailed {
		t.Errorf("outcome = %s/%s, want error/%s", out.Verdict, out.Reason, EventWriteFailed)
	}
}

func TestPipelineRecordsCancellation(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	rec := &memRecorder{}
	first := fakeStage{"plan", func(context.Context, *State) (Result, error) {
		cancel()
		return Result{Verdict: Pass, Event: EventPlanCreated}, nil
	}}
	p := Pipeline{Stages: []Stage{first, passing("apply")}, Events: NewEmitter(rec, "urn:test", "r", nil)}
	out := p.Run(ctx, contractState())
	if out.Verdict != Errored || out.Reason != RunCancelled {
		t.Errorf("outcome = %s/%s, want error/%s", out.Verdict, out.Reason, RunCancelled)
	}
	if got := lastType(rec.events); got != EventRunFailed {
		t.Errorf("last event %q, want %q recorded despite the cancelled context", got, EventRunFailed)
	}
}

func TestEmitterContinuesRecorderChain(t *testing.T) {
	rec := &headRecorder{memRecorder{head: &chainHead{seq: 41, hash: "abc"}}}
	em := NewEmitter(rec, "urn:test", "r", nil)
	e, err := em.Emit(t.Context(), EventPlanCreated, "c-1", Dev, map[string]int{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	if e.Seq != 42 || e.PrevEventHash != "abc" {
		t.Errorf("first event continues at seq %d prev %q, want 42 and abc", e.Seq, e.PrevEventHash)
	}
	e2, _ := em.Emit(t.Context(), EventPlanCreated, "c-1", Dev, nil)
	h, _ := e.Hash()
	if e2.Seq != 43 || e2.PrevEventHash != h {
		t.Errorf("second event seq %d prev %q, want 43 and %q", e2.Seq, e2.PrevEventHash, h)
	}
	other, _ := em.Emit(t.Context(), EventPlanCreated, "c-2", Dev, nil)
	if other.Seq != 42 {
		t.Errorf("another contract's chain starts at %d, want its own head + 1 = 42", other.Seq)
	}
}

func lastType(es []Event) string {
	if len(es) == 0 {
		return ""
	}
	return es[len(es)-1].Type
}

func fixedClock() func() time.Time {
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	return func() time.Time { return t0 }
}

func TestPipelineRecordsFollowUpEventsAndCompletedStages(t *testing.T) {
	rec := &memRecorder{}
	decide := fakeStage{"confidence", func(context.Context, *State) (Result, error) {
		return Result{Verdict: Pass, Event: "nova.confidence.computed", Also: []EventSpec{{Type: "nova.ai.decision.made", Data: map[string]string{"action": "proceed"}}}}, nil
	}}
	st := contractState()
	p := Pipeline{Stages: []Stage{passing("policy"), decide, passing("plan")}, Events: NewEmitter(rec, "urn:test", "r", nil)}
	out := p.Run(t.Context(), st)
	if out.Verdict != Pass {
		t.Fatalf("verdict %s", out.Verdict)
	}
	var types []string
	for _, e := range rec.events {
		types = append(types, e.Type)
	}
	if diff := cmp.Diff([]string{"nova.test.policy", "nova.confidence.computed", "nova.ai.decision.made", "nova.test.plan"}, types); diff != "" {
		t.Errorf("event types (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"policy", "confidence", "plan"}, st.Completed); diff != "" {
		t.Errorf("completed stages (-want +got):\n%s", diff)
	}
}

type chainFunc func(ctx context.Context, contractID string) ([]Event, error)

func (f chainFunc) Chain(ctx context.Context, contractID string) ([]Event, error) {
	return f(ctx, contractID)
}

func TestGateRefusesWhileAnApplyIsIndeterminate(t *testing.T) {
	st := &State{Contract: &Contract{ID: "c", Environment: Dev}, Plan: &Plan{Digest: "d"}}
	g := Gate{Evidence: chainFunc(func(_ context.Context, id string) ([]Event, error) {
		if id != "c" {
			t.Errorf("evidence asked about %s", id)
		}
		return []Event{{ID: "event-7", Type: EventApplyIndeterminate, Environment: "dev"}}, nil
	})}
	res, err := g.Run(t.Context(), st)
	if err != nil || res.Verdict != Fail || res.Findings[0].Reason != ApplyIndeterminate || st.Authorization != nil {
		t.Errorf("gate = %+v, %v, authorization %+v; want fail with %s and no authorization", res, err, st.Authorization, ApplyIndeterminate)
	}
	g.Evidence = chainFunc(func(context.Context, string) ([]Event, error) {
		return []Event{{ID: "event-7", Type: EventApplyIndeterminate, Environment: "dev"}, {ID: "event-8", Type: EventApplyResolved, Environment: "dev"}}, nil
	})
	if res, _ := g.Run(t.Context(), st); res.Verdict != Pass {
		t.Errorf("gate with resolved history = %s, want pass", res.Verdict)
	}
	g.Evidence = chainFunc(func(context.Context, string) ([]Event, error) {
		return nil, Errorf(EvidenceChainBroken, "seq 3 is missing")
	})
	if _, err := g.Run(t.Context(), st); ReasonOf(err) != EvidenceChainBroken {
		t.Errorf("gate over a broken chain: %v, want %s", err, EvidenceChainBroken)
	}
}

func TestErroredStageKeepsItsFollowUpEvents(t *testing.T) {
	rec := &memRecorder{}
	broken := fakeStage{"apply", func(context.Context, *State) (Result, error) {
		return Result{Also: []EventSpec{{Type: EventApplyIndeterminate}}}, Errorf(ApplyIndeterminate, "unknown outcome")
	}}
	p := Pipeline{Stages: []Stage{broken}, Events: NewEmitter(rec, "urn:test", "r", nil)}
	out := p.Run(t.Context(), contractState())
	if out.Verdict != Errored || out.Reason != ApplyIndeterminate {
		t.Errorf("outcome %s/%s", out.Verdict, out.Reason)
	}
	if len(rec.events) != 2 || rec.events[0].Type != EventRunFailed || rec.events[1].Type != EventApplyIndeterminate {
		t.Errorf("events %v, want run.failed then apply.indeterminate", rec.events)
	}
}

func TestTeeRecordsInOrderAndStopsAtFirstFailure(t *testing.T) {
	first, second := &memRecorder{}, &headRecorder{memRecorder{head: &chainHead{seq: 9, hash: "h"}}}
	tee := Tee{first, second}
	if seq, hash, _ := tee.ChainHead(t.Context(), "c"); seq != 9 || hash != "h" {
		t.Errorf("chain head %d %q, want the chain-aware recorder's 9 h", seq, hash)
	}
	if err := tee.Record(t.Context(), Event{ID: "1"}); err != nil || len(first.events) != 1 || len(second.events) != 1 {
		t.Errorf("record: %v, %d/%d events", err, len(first.events), len(second.events))
	}
	second.fail = errors.New("push rejected")
	if err := tee.Record(t.Context(), Event{ID: "2"}); err == nil {
		t.Error("a failing recorder did not fail the tee")
	}
}

// TestAnEventTooLargeIsRefusedNotWritten: a stage whose data outgrows an
// event stops the run with EVENT_TOO_LARGE, recorded by a small failure
// event; the oversized one never reaches the recorder.
func TestAnEventTooLargeIsRefusedNotWritten(t *testing.T) {
	rec := &memRecorder{}
	huge := fakeStage{"plan", func(context.Context, *State) (Result, error) {
		return Result{Verdict: Pass, Event: EventPlanCreated, Data: map[string]string{"resources": strings.Repeat("x", MaxEventData)}}, nil
	}}
	p := Pipeline{Stages: []Stage{passing("schema"), huge, passing("apply")}, Events: NewEmitter(rec, "urn:test", "r", nil)}
	out := p.Run(t.Context(), contractState())
	if out.Verdict != Errored || out.Reason != EventTooLarge {
		t.Fatalf("outcome = %s/%s, want error/%s", out.Verdict, out.Reason, EventTooLarge)
	}
	var types []string
	for _, e := range rec.events {
		types = append(types, e.Type)
		if len(e.Data) > MaxEventData {
			t.Errorf("an event of %d bytes was written", len(e.Data))
		}
	}
	if diff := cmp.Diff([]string{"nova.test.schema", EventRunFailed}, types); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// flushRecorder buffers like the evidence store: it notes each Flush in
// log, beside what the workspace and Finally note there.
type flushRecorder struct {
	memRecorder
	log *[]string
}

func (f *flushRecorder) Flush(_ context.Context, contractID string) error {
	*f.log = append(*f.log, "flush "+contractID)
	return nil
}

// closingWorkspace notes when it lets go of its run lock.
type closingWorkspace struct {
	Workspace
	log *[]string
}

func (w closingWorkspace) Close() error {
	*w.log = append(*w.log, "close")
	return nil
}

// TestPipelineFlushesAnAuthorizedRunBeforeLettingGoOfTheWorkspace: an
// authorized run's outcome, and what Finally records from it, are made
// visible before the run lock goes with the workspace; a run that
// authorized nothing leaves its events to the end of the command.
func TestPipelineFlushesAnAuthorizedRunBeforeLettingGoOfTheWorkspace(t *testing.T) {
	for _, tt := range []struct {
		name       string
		authorized bool
		want       []string
	}{
		{"authorized", true, []string{"finally", "flush c-1", "close"}},
		{"not authorized", false, []string{"finally", "close"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			rec := &flushRecorder{log: &log}
			em := NewEmitter(rec, "urn:test", "run-1", nil)
			open := fakeStage{"plan", func(_ context.Context, st *State) (Result, error) {
				st.Workspace = closingWorkspace{log: &log}
				if tt.authorized {
					st.Authorization = &Authorization{Environment: Dev}
				}
				return Result{Verdict: Pass, Summary: "ok"}, nil
			}}
			p := Pipeline{
				Stages: []Stage{open},
				Events: em,
				Finally: func(ctx context.Context, st *State) {
					log = append(log, "finally")
					if _, err := em.Emit(ctx, "nova.test.outcome", st.Contract.ID, Dev, nil); err != nil {
						t.Error(err)
					}
				},
			}
			p.Run(t.Context(), contractState())
			if diff := cmp.Diff(tt.want, log); diff != "" {
				t.Errorf("order (-want +got):\n%s", diff)
			}
			if n := len(rec.events); n != 2 {
				t.Errorf("%d events recorded, want the stage's and Finally's", n)
			}
		})
	}
}

// preparing is a Preparer fake that logs what the pipeline asks of it.
type preparing struct {
	fakeStage
	log *[]string
}

func (p preparing) Prepare(context.Context, *State) { *p.log = append(*p.log, "prepare") }
func (p preparing) Abandon(*State)                  { *p.log = append(*p.log, "abandon") }

// TestPipelineOffersPreparersTheStateAhead: a stage that can prepare is
// offered the state after each stage before it passes, never after a
// stage that stopped the run, and is told to abandon what it prepared as
// the run ends, whether or not its turn came.
func TestPipelineOffersPreparersTheStateAhead(t *testing.T) {
	failing := fakeStage{"policy", func(context.Context, *State) (Result, error) {
		return Result{Verdict: Fail, Summary: "denied", Findings: []Finding{{Reason: StackUnknown, Message: "no"}}}, nil
	}}
	tests := []struct {
		name   string
		before []Stage
		want   []string
	}{
		{"its turn comes", []Stage{passing("schema"), passing("policy")}, []string{"prepare", "prepare", "run plan", "abandon"}},
		{"an earlier stage fails", []Stage{passing("schema"), failing}, []string{"prepare", "abandon"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log []string
			plan := preparing{fakeStage{"plan", func(context.Context, *State) (Result, error) {
				log = append(log, "run plan")
				return Result{Verdict: Pass}, nil
			}}, &log}
			// Once its turn came, it is not offered the state again.
			stages := append(append([]Stage{}, tt.before...), plan, passing("gate"))
			p := Pipeline{Stages: stages, Events: NewEmitter(&memRecorder{}, "urn:test", "r", nil)}
			st := contractState()
			p.Run(t.Context(), st)
			if diff := cmp.Diff(tt.want, log); diff != "" {
				t.Errorf("what the preparer was asked (-want +got):\n%s", diff)
			}
		})
	}
}
