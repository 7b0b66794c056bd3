package main

import (
	"context"
	"slices"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/apply"
	"github.com/nova-platform/nova/stages/plan"
	"github.com/nova-platform/nova/stages/schema"
)

// destroyStages are the stages of `nova plan --destroy` and `nova run
// --destroy`: the contract validated (it says what to render and which
// state to destroy), what the environment runs read from the evidence,
// the destroy planned, and for run the gate and the apply. Policy, NFRs
// and confidence judge what a change would deploy; a destroy deploys
// nothing, so its approvers judge it. `nova apply` of a destroy bundle
// needs nothing of its own: the bundle says it is a destroy.
func (w wiring) destroyStages(ctx context.Context, reg *registry.Registry) ([]runner.Stage, error) {
	// A broken approver config stops the destroy before it plans, as it
	// stops a change's run.
	if _, err := w.approversCheck().Check(ctx); err != nil {
		return nil, err
	}
	engine, err := w.terraformEngine(reg)
	if err != nil {
		return nil, err
	}
	planned := slices.Concat([]runner.Stage{schema.New(reg), w.change(reg, engine)}, w.lock(), []runner.Stage{plan.New(engine)})
	if w.cfg.Command == "plan" {
		return planned, nil
	}
	return slices.Concat(planned, w.gate(), []runner.Stage{apply.New(engine)}), nil
}
