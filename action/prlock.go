package main

import (
	"github.com/nova-platform/nova/runner"
)

// lock is the pull request lock of the run's environment, right after
// the change is named (an environment that applied the change answers
// with its receipt first, and a receipt changes nothing): a pull
// request's run in an environment another open pull request holds stops
// there, before it plans. Runs without a pull request have no lock stage
// and take no hold. Nor does a run whose --env names an environment that
// is not locked (--env may only raise the contract's), which would only
// record that it is not.
func (w wiring) lock() []runner.Stage {
	pr := w.cfg.ForgeAPI.PullRequest
	if pr <= 0 || (w.cfg.EnvOverride != "" && !w.cfg.EnvOverride.LockedPerPullRequest()) {
		return nil
	}
	return []runner.Stage{&runner.PullRequestLock{PullRequest: pr, States: w.forge.pullStates, Evidence: w.evidence}}
}
