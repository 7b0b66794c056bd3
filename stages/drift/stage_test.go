package drift

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/runnertest"
)

// chain is an EvidenceReader over fixed events.
type chain struct {
	events []runner.Event
	err    error
}

func (c chain) Chain(context.Context, string) ([]runner.Event, error) { return c.events, c.err }

var target = &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0"}

// applied is the evidence of target applied to dev by run r1.
func applied(t *testing.T, tgt *runner.TargetStack) []runner.Event {
	d, err := runner.Digest(tgt)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := json.Marshal(map[string]any{"stage": "schema", "verdict": "pass", "summary": "", "durationMs": 0, "result": map[string]string{"targetDigest": d}})
	return []runner.Event{
		{RunID: "r1", Environment: "dev", Type: runner.EventContractValidated, Data: data},
		{RunID: "r1", Environment: "dev", Type: runner.EventApplyCompleted, Data: json.RawMessage(`{}`)},
	}
}

func saved(drift ...runner.DriftedResource) func(context.Context, string) (*runner.SavedPlan, error) {
	return func(context.Context, string) (*runner.SavedPlan, error) { return &runner.SavedPlan{Drift: drift}, nil }
}

var (
	outside  = runner.DriftedResource{Address: "aws_instance.web", Kind: runner.DriftOutside, Actions: []string{"update"}, Attributes: []string{"instance_type"}}
	reconcil = runner.DriftedResource{Address: "module.m.terraform_data.x", Kind: runner.DriftConfiguration, Actions: []string{"update"}, Attributes: []string{"input"}}
)

func TestDrift(t *testing.T) {
	changed := &runner.TargetStack{Stack: "hello", StackVersion: "1.0.1"}
	tests := []struct {
		name       string
		evidence   chain
		ws         runnertest.Workspace
		want       runner.Verdict
		wantRes    []runner.DriftedResource
		wantCalls  []string
		wantEvent  string
		configured bool
	}{
		{name: "never applied: only outside changes are looked for", evidence: chain{},
			ws:   runnertest.Workspace{RefreshFunc: saved()},
			want: runner.Pass, wantCalls: []string{"refresh"}, wantEvent: runner.EventDriftClear},
		{name: "changed outside terraform", evidence: chain{},
			ws:   runnertest.Workspace{RefreshFunc: saved(outside, reconcil)},
			want: runner.Fail, wantRes: []runner.DriftedResource{outside}, wantCalls: []string{"refresh"}, wantEvent: runner.EventDriftDetected},
		{name: "applied and unchanged: the state is compared with the configuration", evidence: chain{events: applied(t, target)},
			ws:   runnertest.Workspace{RefreshFunc: saved(), PlanFunc: saved(reconcil, outside)},
			want: runner.Fail, wantRes: []runner.DriftedResource{reconcil}, wantCalls: []string{"refresh", "plan"}, wantEvent: runner.EventDriftDetected, configured: true},
		{name: "applied and matching", evidence: chain{events: applied(t, target)},
			ws:   runnertest.Workspace{RefreshFunc: saved(), PlanFunc: saved()},
			want: runner.Pass, wantCalls: []string{"refresh", "plan"}, wantEvent: runner.EventDriftClear, configured: true},
		{name: "contract changed since the apply: a pending change is not drift", evidence: chain{events: applied(t, changed)},
			ws:   runnertest.Workspace{RefreshFunc: saved()},
			want: runner.Pass, wantCalls: []string{"refresh"}, wantEvent: runner.EventDriftClear},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := tt.ws
			st := &runner.State{RunDir: t.TempDir(), Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev}, Target: target}
			engine := runnertest.Opening(&ws)
			engine.RenderFunc = func(string, *runner.Contract, *runner.TargetStack) error { return nil }
			res, err := New(engine, tt.evidence).Run(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tt.want || st.Drift == nil || st.Drift.ConfigurationChecked != tt.configured {
				t.Fatalf("verdict %s, record %+v; want %s, configuration checked %v", res.Verdict, st.Drift, tt.want, tt.configured)
			}
			if diff := cmp.Diff(tt.wantRes, st.Drift.Resources); diff != "" {
				t.Errorf("drifted resources (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantCalls, ws.Calls); diff != "" {
				t.Errorf("workspace calls (-want +got):\n%s", diff)
			}
			event := res.Event
			if res.Verdict == runner.Fail {
				if len(res.Also) != 1 || res.Findings[0].Reason != runner.DriftDetected {
					t.Fatalf("a drift is a DRIFT_DETECTED verdict recorded with its own event: %+v", res)
				}
				event = res.Also[0].Type
			}
			if event != tt.wantEvent {
				t.Errorf("event %s, want %s", event, tt.wantEvent)
			}
			if st.Workspace == nil {
				t.Error("the workspace (and its run lock) is not left to the run, which closes it")
			}
		})
	}
}

func TestDriftCannotTellWithoutTheEvidence(t *testing.T) {
	ws := runnertest.Workspace{RefreshFunc: saved()}
	engine := runnertest.Opening(&ws)
	engine.RenderFunc = func(string, *runner.Contract, *runner.TargetStack) error { return nil }
	st := &runner.State{RunDir: t.TempDir(), Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev}, Target: target}
	_, err := New(engine, chain{err: runner.Errorf(runner.EvidenceRepoUnavailable, "gone")}).Run(t.Context(), st)
	if runner.ReasonOf(err) != runner.EvidenceRepoUnavailable {
		t.Errorf("err = %v, want %s", err, runner.EvidenceRepoUnavailable)
	}
}
