package plan

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/runner/runnertest"
)

func state(t *testing.T) *runner.State {
	return &runner.State{
		RunID: "r1", RunDir: t.TempDir(), ContractDigest: "cd", Commit: "commit",
		Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev, Stack: "hello"},
		Target:   &runner.TargetStack{Stack: "hello", StackVersion: "1.0.0"},
		Change:   &runner.ChangeRecord{ID: "change-1"},
	}
}

func TestPlanWritesTheBundleAndRecordsTheDigest(t *testing.T) {
	st := state(t)
	content := runner.PlanContent{ResourceChanges: []any{map[string]any{"address": "module.m.terraform_data.x"}}}
	saved := &runner.SavedPlan{Content: content, JSON: []byte(`{"format_version":"1.2"}`), HasChanges: true,
		Changes: runner.ChangeSummary{Add: 1}, Resources: []runner.ResourceChange{{Address: "module.m.terraform_data.x", Actions: []string{"create"}}},
		FileSHA256: "5a7ed91a", Engine: "opentofu 1.12.6"}
	var rendered, planned string
	ws := &runnertest.Workspace{PlanFunc: func(_ context.Context, planFile string) (*runner.SavedPlan, error) {
		planned = planFile
		return saved, os.WriteFile(planFile, []byte("saved plan"), 0o644)
	}}
	engine := &runnertest.Engine{
		RenderFunc: func(dir string, c *runner.Contract, target *runner.TargetStack) error {
			rendered = dir
			return os.MkdirAll(dir, 0o755)
		},
		OpenFunc: func(_ context.Context, dir, runDir string, c *runner.Contract) (runner.Workspace, error) {
			if dir != rendered || runDir != st.RunDir {
				t.Errorf("opened %s (run dir %s), want the rendered root %s", dir, runDir, rendered)
			}
			return ws, nil
		},
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res, err := New(engine, WithClock(func() time.Time { return at })).Run(t.Context(), st)
	if err != nil || res.Verdict != runner.Pass {
		t.Fatalf("plan: %+v, %v", res, err)
	}
	dir := bundle.Dir(st.RunDir)
	// The workspace stays open for this run's apply; the pipeline closes it.
	if rendered != filepath.Join(dir, bundle.RootDir) || planned != filepath.Join(dir, bundle.PlanFile) || st.Workspace != ws || ws.Closed {
		t.Errorf("rendered %s, planned %s, workspace left to the run %v, closed %v", rendered, planned, st.Workspace == ws, ws.Closed)
	}
	// Apply trusts the file by the hash the engine vouched for, and only
	// by that.
	if st.Plan.FileSHA256 != saved.FileSHA256 {
		t.Errorf("plan file hash %q, want the engine's %q", st.Plan.FileSHA256, saved.FileSHA256)
	}
	digest, _ := runner.PlanDigest(content, "opentofu 1.12.6", "cd", "commit")
	want := runner.PlanRecord{Digest: digest, HasChanges: true, Changes: runner.ChangeSummary{Add: 1}, Resources: saved.Resources, BundleDir: dir, Commit: "commit", Change: "change-1", Engine: "opentofu 1.12.6"}
	if diff := cmp.Diff(want, res.Data); diff != "" {
		t.Errorf("event data (-want +got):\n%s", diff)
	}
	m, err := bundle.ReadManifest(dir)
	if err != nil {
		t.Fatal(err)
	}
	wantManifest := bundle.Manifest{FormatVersion: 2, RunID: "r1", ContractID: "c-1", Environment: runner.Dev, Stack: "hello",
		ContractDigest: "cd", Commit: "commit", PlanDigest: digest, Engine: "opentofu 1.12.6", HasChanges: true, Changes: runner.ChangeSummary{Add: 1}, CreatedAt: at}
	if diff := cmp.Diff(wantManifest, m); diff != "" {
		t.Errorf("manifest (-want +got):\n%s", diff)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, bundle.PlanJSONFile)); string(got) != string(saved.JSON)+"\n" {
		t.Errorf("plan.json = %q", got)
	}
	if string(st.PlanJSON) != string(saved.JSON) || st.Plan == nil || st.Plan.Digest != digest {
		t.Errorf("state after plan: %+v", st.Plan)
	}
}

func TestPlanErrorsKeepTheirReason(t *testing.T) {
	tests := []struct {
		name   string
		engine *runnertest.Engine
		want   runner.Reason
	}{
		{"render fails", &runnertest.Engine{RenderFunc: func(string, *runner.Contract, *runner.TargetStack) error {
			return runner.Errorf(runner.ModuleUnknown, "module gone")
		}}, runner.ModuleUnknown},
		{"init fails", &runnertest.Engine{
			RenderFunc: func(string, *runner.Contract, *runner.TargetStack) error { return nil },
			OpenFunc: func(context.Context, string, string, *runner.Contract) (runner.Workspace, error) {
				return nil, runner.Errorf(runner.TerraformInitFailed, "no backend")
			}}, runner.TerraformInitFailed},
		{"plan fails", &runnertest.Engine{
			RenderFunc: func(string, *runner.Contract, *runner.TargetStack) error { return nil },
			OpenFunc: func(context.Context, string, string, *runner.Contract) (runner.Workspace, error) {
				return &runnertest.Workspace{PlanFunc: func(context.Context, string) (*runner.SavedPlan, error) {
					return nil, runner.Errorf(runner.TerraformPlanFailed, "%w", errors.New("invalid config"))
				}}, nil
			}}, runner.TerraformPlanFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := state(t)
			if _, err := New(tt.engine).Run(t.Context(), st); runner.ReasonOf(err) != tt.want {
				t.Errorf("err %v, want %s", err, tt.want)
			}
			if st.Plan != nil {
				t.Error("a failed plan left a plan in the state")
			}
		})
	}
}

// TestPrepareOpensTheWorkspaceAheadOfTheTurn: once the contract is
// resolved, Prepare renders the root and opens its workspace (run locks,
// terraform init) in the background; the stage's turn takes that
// workspace over instead of opening another, and leaves it open for the
// run. Before the contract is resolved Prepare starts nothing.
func TestPrepareOpensTheWorkspaceAheadOfTheTurn(t *testing.T) {
	saved := &runner.SavedPlan{JSON: []byte(`{"format_version":"1.2"}`), Engine: "terraform 1.11.4"}
	for _, resolved := range []bool{true, false} {
		st := state(t)
		ws := &runnertest.Workspace{PlanFunc: func(context.Context, string) (*runner.SavedPlan, error) { return saved, nil }}
		opens := make(chan struct{}, 4)
		engine := &runnertest.Engine{
			RenderFunc: func(dir string, _ *runner.Contract, _ *runner.TargetStack) error { return os.MkdirAll(dir, 0o755) },
			OpenFunc: func(context.Context, string, string, *runner.Contract) (runner.Workspace, error) {
				opens <- struct{}{}
				return ws, nil
			},
		}
		s := New(engine)
		early := st
		if !resolved {
			// Resolved, but its change not named yet: an environment that
			// applied the change plans nothing, so nothing starts.
			early = &runner.State{RunDir: st.RunDir, Contract: st.Contract, Target: st.Target}
		}
		s.Prepare(t.Context(), early)
		s.Prepare(t.Context(), early) // offered again after the next stage
		res, err := s.Run(t.Context(), st)
		if err != nil || res.Verdict != runner.Pass {
			t.Fatalf("resolved %v: plan %+v, %v", resolved, res, err)
		}
		s.Abandon(st) // the run ends: nothing of it is left to abandon
		if len(opens) != 1 || st.Workspace != ws || ws.Closed {
			t.Errorf("resolved %v: opened %d times, the run's workspace %v, closed %v; want one open, left to the run", resolved, len(opens), st.Workspace == ws, ws.Closed)
		}
		if !resolved {
			s.Abandon(early)
		}
	}
}

// TestAbandonLetsGoOfWhatPrepareOpened: a run that ends before its plan
// (a pre-plan stage failed, the run was cancelled) has Abandon interrupt
// an open still under way and close one that finished, so its run locks
// are let go and no terraform outlives the run.
func TestAbandonLetsGoOfWhatPrepareOpened(t *testing.T) {
	t.Run("open finished", func(t *testing.T) {
		ws := &runnertest.Workspace{}
		engine := &runnertest.Engine{
			RenderFunc: func(string, *runner.Contract, *runner.TargetStack) error { return nil },
			OpenFunc:   func(context.Context, string, string, *runner.Contract) (runner.Workspace, error) { return ws, nil },
		}
		s, st := New(engine), state(t)
		s.Prepare(t.Context(), st)
		s.Abandon(st)
		if !ws.Closed || st.Workspace != nil {
			t.Errorf("closed %v, workspace left in the state %v", ws.Closed, st.Workspace != nil)
		}
	})
	t.Run("open under way", func(t *testing.T) {
		started, ended := make(chan struct{}), make(chan error, 1)
		engine := &runnertest.Engine{
			RenderFunc: func(string, *runner.Contract, *runner.TargetStack) error { return nil },
			OpenFunc: func(ctx context.Context, _, _ string, _ *runner.Contract) (runner.Workspace, error) {
				close(started)
				<-ctx.Done() // as terraform init waiting on a lock or a download
				ended <- ctx.Err()
				return nil, runner.Errorf(runner.TerraformInterrupted, "terraform init interrupted: %w", ctx.Err())
			},
		}
		s, st := New(engine), state(t)
		s.Prepare(t.Context(), st)
		<-started
		s.Abandon(st) // returns only once the open has ended
		select {
		case err := <-ended:
			if !errors.Is(err, context.Canceled) {
				t.Errorf("the open ended with %v, want it cancelled", err)
			}
		default:
			t.Error("Abandon returned while the open was still under way")
		}
	})
}
