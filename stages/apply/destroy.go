package apply

import (
	"context"
	"fmt"

	"github.com/nova-platform/nova/runner"
)

// destroy applies an authorized destroy plan and then, only once
// terraform reported it complete and the state holds no resource, removes
// the state. An interrupted destroy is indeterminate like any apply: the
// state stays, and the gate refuses the next plan until someone resolves
// it.
func (s *Stage) destroy(ctx context.Context, st *runner.State, ws runner.Workspace, planFile string, changes runner.ChangeSummary, hasChanges bool) (runner.Result, error) {
	digest := st.Authorization.Digest
	remover, ok := ws.(runner.StateRemover)
	if !ok {
		// Checked before terraform runs: a destroy whose state could not
		// be dealt with after would leave the environment in between.
		return runner.Result{}, runner.Errorf(runner.InternalError, "the engine cannot remove a destroyed environment's state")
	}
	if hasChanges {
		if err := ws.Apply(ctx, planFile); err != nil {
			if r := runner.ReasonOf(err); r == runner.TerraformInterrupted || r == runner.TerraformTimeout {
				return indeterminate(digest, err)
			}
			return runner.Result{}, err
		}
	}
	removal, err := remover.RemoveState(ctx)
	if err != nil {
		if r := runner.ReasonOf(err); r == runner.TerraformInterrupted || r == runner.TerraformTimeout {
			// Terraform said the destroy went through, and nothing could
			// confirm what the state holds: unknown, never guessed.
			return indeterminate(digest, err)
		}
		return runner.Result{}, err
	}
	done := runner.DestroyedRecord{Environment: st.Contract.Environment, Digest: digest, Change: st.Authorization.Change,
		StateRemoved: removal.Removed, State: removal.Note}
	summary := fmt.Sprintf("destroyed with plan %s: %d destroyed; state removed", runner.ShortDigest(digest), changes.Destroy)
	if !removal.Removed {
		summary = fmt.Sprintf("destroyed with plan %s: %d destroyed; %s", runner.ShortDigest(digest), changes.Destroy, removal.Note)
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: summary,
		Event:   runner.EventApplyCompleted,
		Data:    Data{Digest: digest, Applied: hasChanges, Changes: changes, Engine: st.Plan.Engine, Operation: runner.OperationDestroy},
		Also:    []runner.EventSpec{{Type: runner.EventDestroyCompleted, Data: done}},
	}, nil
}
