// Package plan is the plan stage: it renders the target stack's root module,
// plans it, computes the plan digest and leaves a plan bundle for the apply
// stage (or the apply job).
package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
)

// Stage is the plan stage.
type Stage struct {
	engine runner.Engine
	now    func() time.Time
}

var _ runner.Stage = (*Stage)(nil)

// Option configures a Stage.
type Option func(*Stage)

// WithClock sets the clock that stamps the bundle manifest.
func WithClock(now func() time.Time) Option { return func(s *Stage) { s.now = now } }

// New returns the plan stage planning with engine.
func New(engine runner.Engine, opts ...Option) *Stage {
	s := &Stage{engine: engine, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Name implements runner.Stage.
func (*Stage) Name() string { return "plan" }

// Run implements runner.Stage.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil || st.Target == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "plan reached without a resolved contract")
	}
	dir := bundle.Dir(st.RunDir)
	root := filepath.Join(dir, bundle.RootDir)
	if err := s.engine.Render(root, st.Contract, st.Target); err != nil {
		return runner.Result{}, err
	}
	ws, err := s.engine.Open(ctx, root, st.RunDir, st.Contract)
	if err != nil {
		return runner.Result{}, err
	}
	// The workspace stays open for the apply stage of this run: one init,
	// one read of the plan. The pipeline closes it.
	st.Workspace = ws
	planFile := filepath.Join(dir, bundle.PlanFile)
	sp, err := ws.Plan(ctx, planFile)
	if err != nil {
		return runner.Result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.PlanJSONFile), append(sp.JSON, '\n'), 0o644); err != nil {
		return runner.Result{}, runner.Errorf(runner.TerraformShowFailed, "writing plan JSON: %w", err)
	}
	st.PlanJSON = sp.JSON
	digest, err := sp.Digest(st.ContractDigest, st.Commit)
	if err != nil {
		return runner.Result{}, err
	}
	m := bundle.Manifest{
		RunID: st.RunID, ContractID: st.Contract.ID, Environment: st.Contract.Environment, Stack: st.Target.Stack,
		ContractDigest: st.ContractDigest, Commit: st.Commit, PlanDigest: digest, ForgeRun: st.ForgeRun,
		HasChanges: sp.HasChanges, Changes: sp.Changes, CreatedAt: s.now().UTC(),
	}
	if err := bundle.WriteManifest(dir, m); err != nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "writing plan bundle manifest: %w", err)
	}
	st.Plan = &runner.Plan{
		Digest: digest, ContractDigest: st.ContractDigest, Commit: st.Commit,
		HasChanges: sp.HasChanges, Changes: sp.Changes, Resources: sp.Resources, BundleDir: dir,
		// The engine's hash of the file its digest was derived from lets
		// this run's apply trust the file without reading it again.
		PlanFile: planFile, ForgeRun: st.ForgeRun, FileSHA256: sp.FileSHA256,
	}
	summary := fmt.Sprintf("plan %s: %s", runner.ShortDigest(digest), Describe(sp.Changes))
	if !sp.HasChanges {
		summary = fmt.Sprintf("plan %s: no changes", runner.ShortDigest(digest))
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: summary,
		Event:   runner.EventPlanCreated,
		Data:    runner.PlanRecord{Digest: digest, HasChanges: sp.HasChanges, Changes: sp.Changes, Resources: sp.Resources, BundleDir: dir, Commit: st.Commit},
	}, nil
}

// Describe renders a change summary the way Terraform does.
func Describe(c runner.ChangeSummary) string {
	s := fmt.Sprintf("%d to add, %d to change, %d to destroy", c.Add, c.Change, c.Destroy)
	if c.Replace > 0 {
		s += fmt.Sprintf(" (%d replaced)", c.Replace)
	}
	return s
}
