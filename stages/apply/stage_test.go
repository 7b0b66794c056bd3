package apply

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/runner/runnertest"
)

// The saved plans the fake workspace shows: the one that was authorized,
// and another one (a swapped tfplan).
var (
	authorizedPlan = runner.PlanContent{ResourceChanges: []any{map[string]any{"address": "a", "change": "create"}}}
	otherPlan      = runner.PlanContent{ResourceChanges: []any{map[string]any{"address": "b", "change": "create"}}}
)

func digestOf(t *testing.T, c runner.PlanContent) string {
	t.Helper()
	d, err := runner.PlanDigest(c, engine, "cd", "commit")
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func showing(content runner.PlanContent, changes bool) func(context.Context, string) (*runner.SavedPlan, error) {
	return func(context.Context, string) (*runner.SavedPlan, error) {
		return &runner.SavedPlan{Content: content, HasChanges: changes, Changes: runner.ChangeSummary{Add: 1}, Engine: engine}, nil
	}
}

// TestApplyTrustsThePlanFileItHashed: in the run that planned, the saved
// plan is trusted by the hash of the file this process made, and read only
// once; a file changed since is read and its digest derived again.
func TestApplyTrustsThePlanFileItHashed(t *testing.T) {
	digest := digestOf(t, authorizedPlan)
	for _, tamper := range []bool{false, true} {
		dir := t.TempDir()
		planFile := filepath.Join(dir, bundle.PlanFile)
		if err := os.WriteFile(planFile, []byte("saved plan"), 0o644); err != nil {
			t.Fatal(err)
		}
		sum, err := runner.HashFile(planFile)
		if err != nil {
			t.Fatal(err)
		}
		if tamper {
			if err := os.WriteFile(planFile, []byte("another plan"), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ws := &runnertest.Workspace{ShowFunc: showing(otherPlan, true), ApplyFunc: func(context.Context, string) error { return nil },
			OutputsFunc: func(context.Context) (map[string]runner.OutputValue, error) { return nil, nil }}
		st := &runner.State{
			Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev}, ContractDigest: "cd", Commit: "commit", RunDir: t.TempDir(),
			Plan:          &runner.Plan{Digest: digest, BundleDir: dir, FileSHA256: sum, HasChanges: true, Engine: engine},
			Authorization: &runner.Authorization{Digest: digest, Environment: runner.Dev},
			Workspace:     ws,
		}
		res, err := New(&runnertest.Engine{}).Run(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		if !tamper && (res.Verdict != runner.Pass || !slices.Equal(ws.Calls, []string{"apply", "outputs"})) {
			t.Errorf("untouched file: %s, calls %v; want applied without reading the plan again", res.Verdict, ws.Calls)
		}
		if tamper && (res.Verdict != runner.Fail || res.Findings[0].Reason != runner.PlanDigestMismatch || slices.Contains(ws.Calls, "apply")) {
			t.Errorf("changed file: %s %+v, calls %v; want refused after reading it again", res.Verdict, res.Findings, ws.Calls)
		}
	}
}

func TestApply(t *testing.T) {
	interrupted := runner.Errorf(runner.TerraformInterrupted, "terraform apply interrupted: %w", context.Canceled)
	outputs := func(context.Context) (map[string]runner.OutputValue, error) {
		return map[string]runner.OutputValue{"greeting": {Value: "hello"}, "password": {Value: "s3cret", Sensitive: true}}, nil
	}
	tests := []struct {
		name        string
		ws          runnertest.Workspace
		authorize   func(digest string) *runner.Authorization
		wantVerdict runner.Verdict
		wantReason  runner.Reason
		wantCalls   []string
		wantData    *Data
		wantAlso    []string
	}{
		{
			name:        "no authorization: nothing opened",
			authorize:   func(string) *runner.Authorization { return nil },
			wantVerdict: runner.Fail, wantReason: runner.ApprovalRequired,
		},
		{
			name: "authorized for another digest",
			authorize: func(string) *runner.Authorization {
				return &runner.Authorization{Digest: "other", Environment: runner.Dev}
			},
			wantVerdict: runner.Fail, wantReason: runner.ApprovalRequired,
		},
		{
			name: "authorized for another environment",
			authorize: func(d string) *runner.Authorization {
				return &runner.Authorization{Digest: d, Environment: runner.Prod}
			},
			wantVerdict: runner.Fail, wantReason: runner.ApprovalRequired,
		},
		{
			name:        "saved plan swapped: refused before apply",
			ws:          runnertest.Workspace{ShowFunc: showing(otherPlan, true)},
			wantVerdict: runner.Fail, wantReason: runner.PlanDigestMismatch,
			wantCalls: []string{"show"},
		},
		{
			// The plan of one engine is never applied by another, nor
			// by another version of it.
			name: "another engine would apply: refused before apply",
			ws: runnertest.Workspace{ShowFunc: func(context.Context, string) (*runner.SavedPlan, error) {
				return &runner.SavedPlan{Content: authorizedPlan, HasChanges: true, Engine: "opentofu 1.12.6"}, nil
			}},
			wantVerdict: runner.Fail, wantReason: runner.EngineChangedSincePlan,
			wantCalls: []string{"show"},
		},
		{
			name: "saved plan unreadable",
			ws: runnertest.Workspace{ShowFunc: func(context.Context, string) (*runner.SavedPlan, error) {
				return nil, runner.Errorf(runner.TerraformShowFailed, "bad plan")
			}},
			wantVerdict: runner.Errored, wantReason: runner.TerraformShowFailed,
			wantCalls: []string{"show"},
		},
		{
			name:        "no changes: nothing applied",
			ws:          runnertest.Workspace{ShowFunc: showing(authorizedPlan, false)},
			wantVerdict: runner.Pass,
			wantCalls:   []string{"show"},
			wantData:    &Data{Applied: false, Changes: runner.ChangeSummary{Add: 1}, Engine: engine},
		},
		{
			name:        "applied: sensitive outputs stay out of the event",
			ws:          runnertest.Workspace{ShowFunc: showing(authorizedPlan, true), ApplyFunc: func(context.Context, string) error { return nil }, OutputsFunc: outputs},
			wantVerdict: runner.Pass,
			wantCalls:   []string{"show", "apply", "outputs"},
			wantData:    &Data{Applied: true, Changes: runner.ChangeSummary{Add: 1}, Outputs: map[string]string{"greeting": "sha256:" + mustDigest(t, "hello")}, Engine: engine},
		},
		{
			name:        "apply failed: a failure, not an unknown outcome",
			ws:          runnertest.Workspace{ShowFunc: showing(authorizedPlan, true), ApplyFunc: func(context.Context, string) error { return runner.Errorf(runner.TerraformApplyFailed, "boom") }},
			wantVerdict: runner.Errored, wantReason: runner.TerraformApplyFailed,
			wantCalls: []string{"show", "apply"},
		},
		{
			name:        "apply interrupted: indeterminate",
			ws:          runnertest.Workspace{ShowFunc: showing(authorizedPlan, true), ApplyFunc: func(context.Context, string) error { return interrupted }},
			wantVerdict: runner.Errored, wantReason: runner.ApplyIndeterminate,
			wantCalls: []string{"show", "apply"},
			wantAlso:  []string{runner.EventApplyIndeterminate},
		},
		{
			name: "apply timed out: indeterminate, never a failure",
			ws: runnertest.Workspace{ShowFunc: showing(authorizedPlan, true), ApplyFunc: func(context.Context, string) error {
				return runner.Errorf(runner.TerraformTimeout, "terraform apply timed out after 1h0m0s")
			}},
			wantVerdict: runner.Errored, wantReason: runner.ApplyIndeterminate,
			wantCalls: []string{"show", "apply"},
			wantAlso:  []string{runner.EventApplyIndeterminate},
		},
		{
			name: "outputs unreadable after apply: indeterminate",
			ws: runnertest.Workspace{ShowFunc: showing(authorizedPlan, true), ApplyFunc: func(context.Context, string) error { return nil },
				OutputsFunc: func(context.Context) (map[string]runner.OutputValue, error) {
					return nil, errors.New("state unreadable")
				}},
			wantVerdict: runner.Errored, wantReason: runner.ApplyIndeterminate,
			wantCalls: []string{"show", "apply", "outputs"},
			wantAlso:  []string{runner.EventApplyIndeterminate},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			digest := digestOf(t, authorizedPlan)
			st := &runner.State{
				Contract:       &runner.Contract{ID: "c-1", Environment: runner.Dev},
				ContractDigest: "cd", Commit: "commit", RunDir: t.TempDir(),
				Plan: &runner.Plan{Digest: digest, BundleDir: t.TempDir(), Engine: engine},
			}
			st.Authorization = &runner.Authorization{Digest: digest, Environment: runner.Dev, Approver: "autonomous"}
			if tt.authorize != nil {
				st.Authorization = tt.authorize(digest)
			}
			ws := tt.ws
			res, err := New(runnertest.Opening(&ws)).Run(t.Context(), st)
			t.Cleanup(func() {
				if st.Workspace != nil {
					st.Workspace.Close()
				}
			})
			verdict, reason := res.Verdict, runner.Reason("")
			if err != nil {
				verdict, reason = runner.Errored, runner.ReasonOf(err)
			} else if len(res.Findings) > 0 {
				reason = res.Findings[0].Reason
			}
			if verdict != tt.wantVerdict || reason != tt.wantReason {
				t.Errorf("verdict %s reason %q (err %v), want %s %q", verdict, reason, err, tt.wantVerdict, tt.wantReason)
			}
			if diff := cmp.Diff(tt.wantCalls, ws.Calls); diff != "" {
				t.Errorf("workspace calls (-want +got):\n%s", diff)
			}
			if ws.Calls != nil && st.Workspace == nil {
				t.Error("the workspace is not left to the run, which closes it")
			}
			if tt.wantData != nil {
				want := *tt.wantData
				want.Digest = digest
				if diff := cmp.Diff(want, res.Data); diff != "" {
					t.Errorf("data (-want +got):\n%s", diff)
				}
			}
			var also []string
			for _, a := range res.Also {
				also = append(also, a.Type)
			}
			if !slices.Equal(also, tt.wantAlso) {
				t.Errorf("follow-up events %v, want %v", also, tt.wantAlso)
			}
		})
	}
}

func mustDigest(t *testing.T, v any) string {
	t.Helper()
	d, err := runner.Digest(v)
	if err != nil {
		t.Fatal(err)
	}
	return d
}
