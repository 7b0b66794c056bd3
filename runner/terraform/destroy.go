package terraform

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/runner"
)

var (
	_ runner.DestroyPlanner = (*workspace)(nil)
	_ runner.StateRemover   = (*workspace)(nil)
)

// PlanDestroy implements runner.DestroyPlanner.
func (w *workspace) PlanDestroy(ctx context.Context, planFile string) (*runner.SavedPlan, error) {
	changed, err := w.tf.PlanDestroy(ctx, planFile)
	return w.saved(ctx, planFile, changed, err)
}

// RemoveState implements runner.StateRemover. Terraform's word that the
// destroy completed is checked against the state itself before anything
// is removed: a state that still holds a resource is the only record of
// it, and stays.
func (w *workspace) RemoveState(ctx context.Context) (runner.StateRemoval, error) {
	st, err := w.tf.CurrentState(ctx)
	if err != nil {
		return runner.StateRemoval{}, err
	}
	if left := stateResources(st); len(left) > 0 {
		return runner.StateRemoval{}, runner.Errorf(runner.DestroyIncomplete, "the destroy completed, but the state still holds %d resource(s), first %s; the state is kept", len(left), left[0])
	}
	if w.statePath == "" {
		return runner.StateRemoval{Note: fmt.Sprintf("the %s backend keeps the state, which holds no resource", w.backend)}, nil
	}
	for _, p := range []string{w.statePath, w.statePath + ".backup"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return runner.StateRemoval{}, runner.Errorf(runner.DestroyIncomplete, "removing the destroyed state: %w", err)
		}
	}
	return runner.StateRemoval{Removed: true}, nil
}

// stateResources lists the addresses of the resources st holds, in every
// module.
func stateResources(st *tfjson.State) []string {
	if st == nil || st.Values == nil {
		return nil
	}
	var out []string
	var walk func(m *tfjson.StateModule)
	walk = func(m *tfjson.StateModule) {
		if m == nil {
			return
		}
		for _, r := range m.Resources {
			// Data sources are read, never created: nothing to destroy.
			if r.Mode == tfjson.ManagedResourceMode {
				out = append(out, r.Address)
			}
		}
		for _, c := range m.ChildModules {
			walk(c)
		}
	}
	walk(st.Values.RootModule)
	return out
}
