package plan

import (
	"context"
	"os"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/runner/runnertest"
)

// TestPlanDestroy: a destroy run plans with plan -destroy, binds the
// operation into the digest, the bundle and the event, and refuses a
// destroy plan that would create or change anything.
func TestPlanDestroy(t *testing.T) {
	content := runner.PlanContent{ResourceChanges: []any{map[string]any{"address": "module.m.terraform_data.x"}}}
	for _, tt := range []struct {
		name    string
		changes runner.ChangeSummary
		reason  runner.Reason
	}{
		{name: "deletes only", changes: runner.ChangeSummary{Destroy: 2}},
		{name: "creates too", changes: runner.ChangeSummary{Add: 1, Destroy: 1}, reason: runner.TerraformPlanFailed},
		{name: "changes too", changes: runner.ChangeSummary{Change: 1, Destroy: 1}, reason: runner.TerraformPlanFailed},
	} {
		t.Run(tt.name, func(t *testing.T) {
			st := state(t)
			st.Change, st.Operation = nil, runner.OperationDestroy
			ws := &runnertest.Workspace{PlanDestroyFunc: func(_ context.Context, planFile string) (*runner.SavedPlan, error) {
				return &runner.SavedPlan{Content: content, HasChanges: true, Changes: tt.changes, Engine: "terraform 1.11.4"}, os.WriteFile(planFile, []byte("destroy plan"), 0o644)
			}}
			engine := &runnertest.Engine{
				RenderFunc: func(dir string, _ *runner.Contract, _ *runner.TargetStack) error { return os.MkdirAll(dir, 0o755) },
				OpenFunc:   func(context.Context, string, string, *runner.Contract) (runner.Workspace, error) { return ws, nil },
			}
			res, err := New(engine).Run(t.Context(), st)
			if tt.reason != "" {
				if runner.ReasonOf(err) != tt.reason || st.Plan != nil {
					t.Fatalf("%+v %v, want %s and no plan", res, err, tt.reason)
				}
				return
			}
			if err != nil || res.Verdict != runner.Pass {
				t.Fatalf("%+v %v", res, err)
			}
			update, _ := runner.PlanDigest(content, "terraform 1.11.4", "cd", "commit")
			destroy := content
			destroy.Operation = runner.OperationDestroy
			want, _ := runner.PlanDigest(destroy, "terraform 1.11.4", "cd", "commit")
			rec, _ := res.Data.(runner.PlanRecord)
			m, err := bundle.ReadManifest(bundle.Dir(st.RunDir))
			if err != nil {
				t.Fatal(err)
			}
			if st.Plan.Digest != want || want == update || st.Plan.Operation != runner.OperationDestroy || rec.Operation != runner.OperationDestroy || m.Operation != runner.OperationDestroy {
				t.Errorf("digest %s (update %s, destroy %s), plan %+v, event %+v, manifest %+v", st.Plan.Digest, update, want, st.Plan, rec, m)
			}
			if ws.Calls[0] != "plan-destroy" {
				t.Errorf("calls %v, want plan -destroy", ws.Calls)
			}
		})
	}
}
