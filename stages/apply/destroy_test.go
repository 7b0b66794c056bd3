package apply

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/runner/runnertest"
)

var destroyPlan = runner.PlanContent{ResourceChanges: []any{map[string]any{"address": "a", "change": "delete"}}, Operation: runner.OperationDestroy}

// destroyState is a run whose gate authorized the destroy plan; the plan
// file is read again (no hash of this process), with the operation the
// bundle's manifest names.
func destroyState(t *testing.T, ws *runnertest.Workspace, op runner.Operation) *runner.State {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, bundle.PlanFile), []byte("saved destroy plan"), 0o644); err != nil {
		t.Fatal(err)
	}
	digest := digestOf(t, destroyPlan)
	return &runner.State{
		Contract: &runner.Contract{ID: "c-1", Environment: runner.Prod}, ContractDigest: "cd", Commit: "commit", RunDir: t.TempDir(),
		Plan:          &runner.Plan{Digest: digest, BundleDir: dir, HasChanges: true, Engine: engine, Operation: op},
		Authorization: &runner.Authorization{Digest: digest, Environment: runner.Prod, Operation: runner.OperationDestroy, Change: "change-1"},
		Workspace:     ws,
	}
}

func showingDestroy(context.Context, string) (*runner.SavedPlan, error) {
	content := destroyPlan
	content.Operation = "" // what terraform shows: the operation is the run's
	return &runner.SavedPlan{Content: content, HasChanges: true, Changes: runner.ChangeSummary{Destroy: 1}, Engine: engine}, nil
}

func TestApplyDestroy(t *testing.T) {
	for _, tt := range []struct {
		name string
		// op is the operation the manifest names.
		op      runner.Operation
		apply   error
		remove  error
		removed bool
		verdict runner.Verdict
		reason  runner.Reason
		events  []string
		calls   []string
	}{
		{name: "completes and removes the state", op: runner.OperationDestroy, removed: true, verdict: runner.Pass,
			events: []string{runner.EventDestroyCompleted}, calls: []string{"show", "apply", "remove-state"}},
		{name: "a backend that keeps the state", op: runner.OperationDestroy, verdict: runner.Pass,
			events: []string{runner.EventDestroyCompleted}, calls: []string{"show", "apply", "remove-state"}},
		{name: "interrupted: indeterminate, the state kept", op: runner.OperationDestroy, apply: runner.Errorf(runner.TerraformInterrupted, "signal"),
			verdict: runner.Errored, reason: runner.ApplyIndeterminate, events: []string{runner.EventApplyIndeterminate}, calls: []string{"show", "apply"}},
		{name: "timed out: indeterminate", op: runner.OperationDestroy, apply: runner.Errorf(runner.TerraformTimeout, "2h"),
			verdict: runner.Errored, reason: runner.ApplyIndeterminate, events: []string{runner.EventApplyIndeterminate}, calls: []string{"show", "apply"}},
		{name: "failed: the state kept", op: runner.OperationDestroy, apply: runner.Errorf(runner.TerraformApplyFailed, "boom"),
			verdict: runner.Errored, reason: runner.TerraformApplyFailed, calls: []string{"show", "apply"}},
		{name: "resources left in the state", op: runner.OperationDestroy, remove: runner.Errorf(runner.DestroyIncomplete, "1 left"),
			verdict: runner.Errored, reason: runner.DestroyIncomplete, calls: []string{"show", "apply", "remove-state"}},
		// A manifest relabelled as an update re-derives a digest nobody
		// approved: approving a destroy authorises only the destroy.
		{name: "a manifest that drops the operation", verdict: runner.Fail, reason: runner.PlanDigestMismatch, calls: []string{"show"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ws := &runnertest.Workspace{ShowFunc: showingDestroy,
				ApplyFunc: func(context.Context, string) error { return tt.apply },
				RemoveStateFunc: func(context.Context) (runner.StateRemoval, error) {
					if !tt.removed {
						return runner.StateRemoval{Note: "the pg backend keeps the state"}, tt.remove
					}
					return runner.StateRemoval{Removed: true}, tt.remove
				}}
			st := destroyState(t, ws, tt.op)
			res, err := New(&runnertest.Engine{}).Run(t.Context(), st)
			verdict, reason := res.Verdict, runner.Reason("")
			if err != nil {
				verdict, reason = runner.Errored, runner.ReasonOf(err)
			} else if len(res.Findings) > 0 {
				reason = res.Findings[0].Reason
			}
			if verdict != tt.verdict || reason != tt.reason || !slices.Equal(ws.Calls, tt.calls) {
				t.Fatalf("%s %s, calls %v; want %s %s, calls %v", verdict, reason, ws.Calls, tt.verdict, tt.reason, tt.calls)
			}
			var also []string
			for _, e := range res.Also {
				also = append(also, e.Type)
			}
			if !slices.Equal(also, tt.events) {
				t.Errorf("events %v, want %v", also, tt.events)
			}
			if tt.verdict != runner.Pass {
				return
			}
			d, ok := res.Data.(Data)
			done, _ := res.Also[0].Data.(runner.DestroyedRecord)
			if res.Event != runner.EventApplyCompleted || !ok || d.Operation != runner.OperationDestroy || done.StateRemoved != tt.removed || done.Change != "change-1" || (!tt.removed && done.State == "") {
				t.Errorf("recorded %s %+v and %+v", res.Event, res.Data, done)
			}
		})
	}
}
