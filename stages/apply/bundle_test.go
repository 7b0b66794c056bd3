package apply

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
	"github.com/nova-platform/nova/runner/runnertest"
)

func writeBundle(t *testing.T, m bundle.Manifest) string {
	t.Helper()
	dir := bundle.Dir(t.TempDir())
	if err := os.MkdirAll(filepath.Join(dir, bundle.RootDir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.PlanFile), []byte("plan"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := bundle.WriteManifest(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

// cleared is the evidence of a plan that passed its run's evaluation.
func cleared(t *testing.T, digest string) []runner.Event {
	t.Helper()
	data := func(stage string, v any) json.RawMessage {
		raw, _ := json.Marshal(v)
		out, _ := json.Marshal(runner.StageEventData{Stage: stage, Verdict: runner.Pass, Result: raw})
		return out
	}
	return []runner.Event{
		{Type: runner.EventPlanCreated, Environment: "dev", RunID: "r1", Data: data("plan", runner.PlanRecord{Digest: digest})},
		{Type: runner.EventConfidenceComputed, Environment: "dev", RunID: "r1", Data: data("plan-confidence", runner.Confidence{Phase: runner.PostPlan, Band: runner.BandPass})},
	}
}

// savedPlan is what the fake engine reads back from a bundle's tfplan.
var savedPlan = runner.PlanContent{ResourceChanges: []any{map[string]any{"address": "x"}}}

// engine is the engine the fake workspace reads plans with.
const engine = "terraform 1.11.4"

func TestBundle(t *testing.T) {
	pd, err := runner.PlanDigest(savedPlan, engine, "cd", "commit")
	if err != nil {
		t.Fatal(err)
	}
	base := bundle.Manifest{RunID: "r1", ContractID: "c-1", Environment: runner.Dev, ContractDigest: "cd", Commit: "commit", PlanDigest: pd, Engine: engine, HasChanges: true}
	tests := []struct {
		name       string
		mutate     func(*bundle.Manifest)
		evidence   func(t *testing.T) []runner.Event
		wantReason runner.Reason
		// runs is the engine this apply runs, when not the contract's
		// default.
		runs string
	}{
		{"cleared plan loads", nil, func(t *testing.T) []runner.Event { return cleared(t, pd) }, "", ""},
		{"the saved plan is not the one planned", func(m *bundle.Manifest) { m.PlanDigest = "pd-swapped" }, func(t *testing.T) []runner.Event { return cleared(t, "pd-swapped") }, runner.PlanDigestMismatch, ""},
		{"another contract's bundle", func(m *bundle.Manifest) { m.ContractID = "c-2" }, nil, runner.PlanBundleMismatch, ""},
		{"another environment", func(m *bundle.Manifest) { m.Environment = runner.QA }, nil, runner.PlanBundleMismatch, ""},
		{"another contract version", func(m *bundle.Manifest) { m.ContractDigest = "changed" }, nil, runner.PlanBundleMismatch, ""},
		{"another commit", func(m *bundle.Manifest) { m.Commit = "older" }, nil, runner.PlanBundleMismatch, ""},
		{"plan never cleared", nil, func(t *testing.T) []runner.Event { return cleared(t, "another-digest") }, runner.PlanNotCleared, ""},
		// Approving a Terraform plan never authorises an OpenTofu apply.
		{"planned by terraform, the contract now on opentofu", nil, nil, runner.EngineChangedSincePlan, runner.EngineOpenTofu},
		{"planned by opentofu, the contract now on terraform", func(m *bundle.Manifest) { m.Engine = "opentofu 1.12.6" }, nil, runner.EngineChangedSincePlan, ""},
		{"another contract's bundle, by another engine", func(m *bundle.Manifest) { m.ContractID, m.Engine = "c-2", "opentofu 1.12.6" }, nil, runner.PlanBundleMismatch, ""},
		{"planned by another terraform version", func(m *bundle.Manifest) { m.Engine = "terraform 1.5.7" }, func(t *testing.T) []runner.Event { return cleared(t, pd) }, runner.EngineChangedSincePlan, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := base
			if tt.mutate != nil {
				tt.mutate(&m)
			}
			dir := writeBundle(t, m)
			chain := runnertest.Chain(func(context.Context, string) ([]runner.Event, error) {
				if tt.evidence == nil {
					t.Error("evidence read for a bundle that does not match the run")
					return nil, nil
				}
				return tt.evidence(t), nil
			})
			st := &runner.State{Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev, Engine: tt.runs}, ContractDigest: "cd", Commit: "commit"}
			ws := &runnertest.Workspace{ShowFunc: func(context.Context, string) (*runner.SavedPlan, error) {
				return &runner.SavedPlan{Content: savedPlan, HasChanges: true, FileSHA256: "5a7ed91a", Engine: engine}, nil
			}}
			res, err := (&Bundle{Dir: dir, Evidence: chain, Engine: runnertest.Opening(ws)}).Run(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantReason == "" {
				if res.Verdict != runner.Pass || st.Plan == nil || st.Plan.Digest != pd || st.Plan.BundleDir != dir || st.Plan.FileSHA256 != "5a7ed91a" {
					t.Errorf("result %+v, plan %+v", res, st.Plan)
				}
				return
			}
			if res.Verdict != runner.Fail || res.Findings[0].Reason != tt.wantReason || st.Plan != nil {
				t.Errorf("result %+v, plan %+v; want a fail with %s and no plan", res, st.Plan, tt.wantReason)
			}
		})
	}
	t.Run("a replay of an applied plan answers with its receipt", func(t *testing.T) {
		dir := writeBundle(t, base)
		receipt := runner.Event{ID: "receipt-1", Type: runner.EventApplyCompleted, Environment: "dev", RunID: "r1"}
		raw, _ := json.Marshal(runner.StageEventData{Stage: "apply", Verdict: runner.Pass, Result: json.RawMessage(`{"digest":"` + pd + `","applied":true}`)})
		receipt.Data = raw
		chain := runnertest.Chain(func(context.Context, string) ([]runner.Event, error) {
			return append(cleared(t, pd), receipt), nil
		})
		st := &runner.State{Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev}, ContractDigest: "cd", Commit: "commit"}
		res, err := (&Bundle{Dir: dir, Evidence: chain, Engine: &runnertest.Engine{}}).Run(t.Context(), st)
		if err != nil || res.Verdict != runner.Pass || !res.Done || st.Receipt == nil || st.Receipt.ID != "receipt-1" {
			t.Errorf("replay: %+v %v, receipt %v; want a finished pass with receipt-1 and no engine call", res, err, st.Receipt)
		}
	})
	t.Run("unreadable evidence is an error", func(t *testing.T) {
		dir := writeBundle(t, base)
		chain := runnertest.Chain(func(context.Context, string) ([]runner.Event, error) {
			return nil, runner.Errorf(runner.EvidenceSignatureInvalid, "forged")
		})
		st := &runner.State{Contract: &runner.Contract{ID: "c-1", Environment: runner.Dev}, ContractDigest: "cd", Commit: "commit"}
		if _, err := (&Bundle{Dir: dir, Evidence: chain}).Run(t.Context(), st); runner.ReasonOf(err) != runner.EvidenceSignatureInvalid {
			t.Errorf("err %v, want %s", err, runner.EvidenceSignatureInvalid)
		}
	})
}
