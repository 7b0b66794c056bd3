// Package plan is the plan stage: it renders the target stack's root module,
// plans it, computes the plan digest and leaves a plan bundle for the apply
// stage (or the apply job).
package plan

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
)

// Stage is the plan stage.
type Stage struct {
	engine runner.Engine
	now    func() time.Time

	mu sync.Mutex
	// ahead holds, per run, the workspace Prepare is opening.
	ahead map[*runner.State]*opening
}

// opening is a run's root module rendered and its workspace opened (its
// run locks taken, terraform initialised) ahead of the stage's turn.
type opening struct {
	done   chan struct{}
	ws     runner.Workspace
	err    error
	cancel context.CancelFunc
}

var _ runner.Preparer = (*Stage)(nil)

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
	ws, err := s.workspace(ctx, st)
	if err != nil {
		return runner.Result{}, err
	}
	// The workspace stays open for the apply stage of this run: one init,
	// one read of the plan. The pipeline closes it.
	st.Workspace = ws
	planFile := filepath.Join(dir, bundle.PlanFile)
	sp, err := plan(ctx, ws, planFile, st.Operation)
	if err != nil {
		return runner.Result{}, err
	}
	if err := os.WriteFile(filepath.Join(dir, bundle.PlanJSONFile), append(sp.JSON, '\n'), 0o644); err != nil {
		return runner.Result{}, runner.Errorf(runner.TerraformShowFailed, "writing plan JSON: %w", err)
	}
	st.PlanJSON = sp.JSON
	// A merged commit that is the approved change binds the approved
	// plan's commit, so the same plan has the approved digest
	// (runner.MergeCheck); every other run binds its own.
	commit := st.DigestCommit()
	digest, err := sp.Digest(st.ContractDigest, commit)
	if err != nil {
		return runner.Result{}, err
	}
	m := bundle.Manifest{
		RunID: st.RunID, ContractID: st.Contract.ID, Environment: st.Contract.Environment, Stack: st.Target.Stack,
		ContractDigest: st.ContractDigest, Commit: commit, PlanDigest: digest, Engine: sp.Engine, ForgeRun: st.ForgeRun,
		HasChanges: sp.HasChanges, Changes: sp.Changes, CreatedAt: s.now().UTC(), Operation: st.Operation,
	}
	if err := bundle.WriteManifest(dir, m); err != nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "writing plan bundle manifest: %w", err)
	}
	st.Plan = &runner.Plan{
		Digest: digest, ContractDigest: st.ContractDigest, Commit: commit,
		HasChanges: sp.HasChanges, Changes: sp.Changes, Resources: sp.Resources, BundleDir: dir,
		// The engine's hash of the file its digest was derived from lets
		// this run's apply trust the file without reading it again.
		PlanFile: planFile, ForgeRun: st.ForgeRun, FileSHA256: sp.FileSHA256, Engine: sp.Engine, Operation: st.Operation,
	}
	summary := fmt.Sprintf("plan %s: %s", runner.ShortDigest(digest), Describe(sp.Changes))
	if !sp.HasChanges {
		summary = fmt.Sprintf("plan %s: no changes", runner.ShortDigest(digest))
	}
	if st.Operation.IsDestroy() {
		summary = "destroy " + summary
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: summary,
		Event:   runner.EventPlanCreated,
		Data:    runner.PlanRecord{Digest: digest, HasChanges: sp.HasChanges, Changes: sp.Changes, Resources: sp.Resources, BundleDir: dir, Commit: commit, Change: changeID(st), PullRequest: st.PullRequest, Engine: sp.Engine, Operation: st.Operation},
	}, nil
}

// Prepare implements runner.Preparer. Once the contract and its target
// stack are resolved, the root module is rendered and its workspace
// opened (the run locks taken, terraform initialised) while the pre-plan
// stages judge the contract: init only readies the run's own copy of the
// root module (its modules and providers, the backend's configuration),
// and the plan, the first command that reads the state or decides
// anything, waits for the stage's turn, after those stages passed.
func (s *Stage) Prepare(ctx context.Context, st *runner.State) {
	// Not before the change is identified: a change the environment has
	// applied ends the run there, with nothing to plan.
	if st.Contract == nil || st.Target == nil || st.Change == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.ahead[st]; ok {
		return
	}
	ctx, cancel := context.WithCancel(ctx)
	o := &opening{done: make(chan struct{}), cancel: cancel}
	if s.ahead == nil {
		s.ahead = map[*runner.State]*opening{}
	}
	s.ahead[st] = o
	contract, target, runDir := st.Contract, st.Target, st.RunDir
	go func() {
		defer close(o.done)
		o.ws, o.err = s.open(ctx, contract, target, runDir)
	}()
}

// Abandon implements runner.Preparer: a run that ends before its plan
// interrupts the init Prepare started, waits for it, and lets go of the
// run locks.
func (s *Stage) Abandon(st *runner.State) {
	o := s.take(st)
	if o == nil {
		return
	}
	o.cancel()
	<-o.done
	if o.ws != nil {
		_ = o.ws.Close()
	}
}

// take removes and returns what Prepare started for st, if anything.
func (s *Stage) take(st *runner.State) *opening {
	s.mu.Lock()
	defer s.mu.Unlock()
	o := s.ahead[st]
	delete(s.ahead, st)
	return o
}

// workspace is the run's workspace: the one Prepare opened, once it is
// open, or one opened now. A workspace taken over is never cancelled
// through Prepare's context: it holds the run locks until the pipeline
// closes it.
func (s *Stage) workspace(ctx context.Context, st *runner.State) (runner.Workspace, error) {
	if o := s.take(st); o != nil {
		<-o.done
		return o.ws, o.err
	}
	return s.open(ctx, st.Contract, st.Target, st.RunDir)
}

// open renders the run's root module and opens its workspace.
func (s *Stage) open(ctx context.Context, c *runner.Contract, target *runner.TargetStack, runDir string) (runner.Workspace, error) {
	root := filepath.Join(bundle.Dir(runDir), bundle.RootDir)
	if err := s.engine.Render(root, c, target); err != nil {
		return nil, err
	}
	return s.engine.Open(ctx, root, runDir, c)
}

// plan saves the run's plan to planFile: a destroy plan when the run
// destroys. The operation goes into the plan's digested content, so the
// digest of a destroy is never that of an update.
func plan(ctx context.Context, ws runner.Workspace, planFile string, op runner.Operation) (*runner.SavedPlan, error) {
	if !op.IsDestroy() {
		return ws.Plan(ctx, planFile)
	}
	dp, ok := ws.(runner.DestroyPlanner)
	if !ok {
		return nil, runner.Errorf(runner.InternalError, "the engine cannot plan a destroy")
	}
	sp, err := dp.PlanDestroy(ctx, planFile)
	if err != nil {
		return nil, err
	}
	// Policy and confidence do not judge a destroy: what it may do is
	// checked here instead. A plan -destroy only ever deletes; one that
	// would create or change anything is not the plan that was asked for.
	if sp.Changes.Add > 0 || sp.Changes.Change > 0 {
		return nil, runner.Errorf(runner.TerraformPlanFailed, "the destroy plan would also create %d and change %d resource(s); nothing was planned for approval", sp.Changes.Add, sp.Changes.Change)
	}
	sp.Content.Operation = op
	return sp, nil
}

// Describe renders a change summary the way Terraform does.
func Describe(c runner.ChangeSummary) string {
	s := fmt.Sprintf("%d to add, %d to change, %d to destroy", c.Add, c.Change, c.Destroy)
	if c.Replace > 0 {
		s += fmt.Sprintf(" (%d replaced)", c.Replace)
	}
	return s
}

func changeID(st *runner.State) string {
	if st.Change == nil {
		return ""
	}
	return st.Change.ID
}
