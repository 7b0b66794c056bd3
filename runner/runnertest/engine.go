// Package runnertest holds hand-written fakes of runner's ports for the
// tests of the stages that consume them: structs of function fields, so a
// test states only the behaviour it is about.
package runnertest

import (
	"context"
	"errors"

	"github.com/nova-platform/nova/runner"
)

// Engine is a runner.Engine made of functions; a nil function fails the
// call, so a test notices a call it did not expect.
type Engine struct {
	RenderFunc func(dir string, c *runner.Contract, target *runner.TargetStack) error
	OpenFunc   func(ctx context.Context, dir, runDir string, c *runner.Contract) (runner.Workspace, error)
}

var _ runner.Engine = (*Engine)(nil)

var errUnexpected = errors.New("unexpected call")

// Render implements runner.Engine.
func (e *Engine) Render(dir string, c *runner.Contract, target *runner.TargetStack) error {
	if e.RenderFunc == nil {
		return errUnexpected
	}
	return e.RenderFunc(dir, c, target)
}

// Open implements runner.Engine.
func (e *Engine) Open(ctx context.Context, dir, runDir string, c *runner.Contract) (runner.Workspace, error) {
	if e.OpenFunc == nil {
		return nil, errUnexpected
	}
	return e.OpenFunc(ctx, dir, runDir, c)
}

// Workspace is a runner.Workspace made of functions that records which
// calls were made.
type Workspace struct {
	PlanFunc    func(ctx context.Context, planFile string) (*runner.SavedPlan, error)
	ShowFunc    func(ctx context.Context, planFile string) (*runner.SavedPlan, error)
	ApplyFunc   func(ctx context.Context, planFile string) error
	OutputsFunc func(ctx context.Context) (map[string]runner.OutputValue, error)
	// RefreshFunc answers RefreshPlan.
	RefreshFunc func(ctx context.Context, planFile string) (*runner.SavedPlan, error)
	// PlanDestroyFunc and RemoveStateFunc answer a destroy's calls.
	PlanDestroyFunc func(ctx context.Context, planFile string) (*runner.SavedPlan, error)
	RemoveStateFunc func(ctx context.Context) (runner.StateRemoval, error)

	Calls  []string
	Closed bool
}

var (
	_ runner.Workspace      = (*Workspace)(nil)
	_ runner.DestroyPlanner = (*Workspace)(nil)
	_ runner.StateRemover   = (*Workspace)(nil)
)

// PlanDestroy implements runner.DestroyPlanner.
func (w *Workspace) PlanDestroy(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	w.Calls = append(w.Calls, "plan-destroy")
	if w.PlanDestroyFunc == nil {
		return nil, errUnexpected
	}
	return w.PlanDestroyFunc(ctx, planFile)
}

// RemoveState implements runner.StateRemover.
func (w *Workspace) RemoveState(ctx context.Context) (runner.StateRemoval, error) {
	w.Calls = append(w.Calls, "remove-state")
	if w.RemoveStateFunc == nil {
		return runner.StateRemoval{}, errUnexpected
	}
	return w.RemoveStateFunc(ctx)
}

// Plan implements runner.Workspace.
func (w *Workspace) Plan(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	w.Calls = append(w.Calls, "plan")
	if w.PlanFunc == nil {
		return nil, errUnexpected
	}
	return w.PlanFunc(ctx, planFile)
}

// Show implements runner.Workspace.
func (w *Workspace) Show(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	w.Calls = append(w.Calls, "show")
	if w.ShowFunc == nil {
		return nil, errUnexpected
	}
	return w.ShowFunc(ctx, planFile)
}

// RefreshPlan implements runner.Workspace.
func (w *Workspace) RefreshPlan(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	w.Calls = append(w.Calls, "refresh")
	if w.RefreshFunc == nil {
		return nil, errUnexpected
	}
	return w.RefreshFunc(ctx, planFile)
}

// Apply implements runner.Workspace.
func (w *Workspace) Apply(ctx context.Context, planFile string) error {
	w.Calls = append(w.Calls, "apply")
	if w.ApplyFunc == nil {
		return errUnexpected
	}
	return w.ApplyFunc(ctx, planFile)
}

// Outputs implements runner.Workspace.
func (w *Workspace) Outputs(ctx context.Context) (map[string]runner.OutputValue, error) {
	w.Calls = append(w.Calls, "outputs")
	if w.OutputsFunc == nil {
		return nil, errUnexpected
	}
	return w.OutputsFunc(ctx)
}

// Close implements runner.Workspace.
func (w *Workspace) Close() error {
	w.Closed = true
	return nil
}

// Opening returns an Engine whose Open hands out ws.
func Opening(ws *Workspace) *Engine {
	return &Engine{OpenFunc: func(context.Context, string, string, *runner.Contract) (runner.Workspace, error) { return ws, nil }}
}

// Chain is a runner.EvidenceReader made of a function.
type Chain func(ctx context.Context, contractID string) ([]runner.Event, error)

var _ runner.EvidenceReader = Chain(nil)

// Chain implements runner.EvidenceReader.
func (f Chain) Chain(ctx context.Context, contractID string) ([]runner.Event, error) {
	return f(ctx, contractID)
}
