// Package apply holds the stages that end a run: loading a plan bundle made
// by an earlier `nova plan`, and applying exactly the plan the gate
// authorized.
package apply

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
)

// Stage applies the authorized plan.
type Stage struct{ engine runner.Engine }

var _ runner.Stage = (*Stage)(nil)

// New returns the apply stage; it must be given the plan stage's engine so
// that both initialise the same backend.
func New(engine runner.Engine) *Stage { return &Stage{engine: engine} }

// Name implements runner.Stage.
func (*Stage) Name() string { return "apply" }

// Data is what the stage records in its event.
type Data struct {
	Digest  string               `json:"digest"`
	Applied bool                 `json:"applied"`
	Changes runner.ChangeSummary `json:"changes"`
	// Engine is the engine, at its exact version, that applied (or found
	// nothing to apply): the one that planned.
	Engine string `json:"engine,omitempty"`
	// Outputs holds a digest ("sha256:<hex>" of the canonical JSON) of
	// each root output Terraform does not mark sensitive. Events are kept
	// forever and output values may be credentials a module returns: the
	// digest lets anyone holding the value check it, and tells nobody else
	// what it is.
	Outputs map[string]string `json:"outputs,omitempty"`
	// Operation is runner.OperationDestroy when the plan applied was a
	// destroy.
	Operation runner.Operation `json:"operation,omitempty"`
}

// Run implements runner.Stage.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil || st.Plan == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "apply reached without a plan")
	}
	auth := st.Authorization
	if auth == nil || auth.Digest != st.Plan.Digest || auth.Environment != st.Contract.Environment {
		return runner.Result{
			Verdict:  runner.Fail,
			Summary:  "no authorization for this plan digest",
			Findings: []runner.Finding{{Reason: runner.ApprovalRequired, Message: fmt.Sprintf("plan %s has not been authorized for %s", st.Plan.Digest, st.Contract.Environment)}},
		}, nil
	}
	planFile := filepath.Join(st.Plan.BundleDir, bundle.PlanFile)
	ws, changes, hasChanges, res, err := s.verified(ctx, st, planFile, auth.Digest)
	if ws == nil {
		return res, err
	}
	digest := auth.Digest
	if st.Plan.Operation.IsDestroy() {
		return s.destroy(ctx, st, ws, planFile, changes, hasChanges)
	}
	if !hasChanges {
		return runner.Result{
			Verdict: runner.Pass,
			Summary: fmt.Sprintf("plan %s has no changes; nothing to apply", runner.ShortDigest(digest)),
			Event:   runner.EventApplyCompleted,
			Data:    Data{Digest: digest, Applied: false, Changes: changes, Engine: st.Plan.Engine},
		}, nil
	}
	if err := ws.Apply(ctx, planFile); err != nil {
		// A timeout interrupts terraform like a cancellation does: how far
		// it got is unknown, whatever the clock says.
		if r := runner.ReasonOf(err); r == runner.TerraformInterrupted || r == runner.TerraformTimeout {
			return indeterminate(digest, err)
		}
		return runner.Result{}, err
	}
	outputs, err := ws.Outputs(ctx)
	if err != nil {
		// Terraform said it applied, but nothing can confirm what: the
		// outcome is recorded as unknown, never guessed.
		return indeterminate(digest, err)
	}
	public := map[string]string{}
	for name, o := range outputs {
		if o.Sensitive {
			continue
		}
		d, err := runner.Digest(o.Value)
		if err != nil {
			return indeterminate(digest, fmt.Errorf("hashing output %s: %w", name, err))
		}
		public[name] = "sha256:" + d
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("applied plan %s: %d added, %d changed, %d destroyed", runner.ShortDigest(digest), changes.Add, changes.Change, changes.Destroy),
		Event:   runner.EventApplyCompleted,
		Data:    Data{Digest: digest, Applied: true, Changes: changes, Outputs: public, Engine: st.Plan.Engine},
	}, nil
}

// verified returns the workspace to apply from and what the plan changes,
// once the saved plan is known to be the authorized one: by its file hash
// when this process derived the digest from that very file (the run that
// planned, or the bundle stage), else by reading the plan and deriving the
// digest again. Without a workspace, res and err say why not.
func (s *Stage) verified(ctx context.Context, st *runner.State, planFile, authorized string) (runner.Workspace, runner.ChangeSummary, bool, runner.Result, error) {
	if ws := st.Workspace; ws != nil && st.Plan.FileSHA256 != "" {
		if sum, err := runner.HashFile(planFile); err == nil && sum == st.Plan.FileSHA256 && st.Plan.Digest == authorized {
			return ws, st.Plan.Changes, st.Plan.HasChanges, runner.Result{}, nil
		}
	}
	ws := st.Workspace
	if ws == nil {
		var err error
		if ws, err = s.engine.Open(ctx, filepath.Join(st.Plan.BundleDir, bundle.RootDir), st.RunDir, st.Contract); err != nil {
			return nil, runner.ChangeSummary{}, false, runner.Result{}, err
		}
		st.Workspace = ws
	}
	// The authorization names a digest, not a file: re-derive the digest
	// from the saved plan itself so a swapped or altered tfplan is refused.
	sp, err := ws.Show(ctx, planFile)
	if err != nil {
		return nil, runner.ChangeSummary{}, false, runner.Result{}, err
	}
	if res, changed := engineChanged(st.Plan.Engine, sp.Engine, st.Plan.BundleDir); changed {
		return nil, runner.ChangeSummary{}, false, res, nil
	}
	sp.Content.Operation = st.Plan.Operation
	digest, err := sp.Digest(st.ContractDigest, st.DigestCommit())
	if err != nil {
		return nil, runner.ChangeSummary{}, false, runner.Result{}, err
	}
	if digest != authorized {
		return nil, runner.ChangeSummary{}, false, runner.Result{
			Verdict: runner.Fail,
			Summary: fmt.Sprintf("saved plan hashes to %s, authorized was %s", runner.ShortDigest(digest), runner.ShortDigest(authorized)),
			Findings: []runner.Finding{{Reason: runner.PlanDigestMismatch,
				Message: fmt.Sprintf("the saved plan in %s hashes to %s, but %s was authorized; nothing was applied", st.Plan.BundleDir, digest, authorized)}},
		}, nil
	}
	return ws, sp.Changes, sp.HasChanges, runner.Result{}, nil
}

// indeterminate records that the apply's outcome is unknown: terraform was
// interrupted (cancelled, or timed out) mid-apply or its result could not
// be read; the event names the cause's reason code. It is never
// reported as completed or failed by guess, and the gate refuses further
// applies of the contract until an operator resolves it.
func indeterminate(digest string, cause error) (runner.Result, error) {
	return runner.Result{Also: []runner.EventSpec{{
			Type: runner.EventApplyIndeterminate,
			Data: map[string]string{"digest": digest, "cause": cause.Error(), "reason": string(runner.ReasonOf(cause))},
		}}},
		runner.Errorf(runner.ApplyIndeterminate, "the outcome of applying plan %s is unknown: %w", runner.ShortDigest(digest), cause)
}
