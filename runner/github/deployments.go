package github

import (
	"context"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Deployments records Nova's applies as GitHub deployments, so the
// environment's page shows what was deployed, when, and how it went.
type Deployments struct{ c *Client }

var _ runner.Deployments = (*Deployments)(nil)

// Deployments records deployments and their progress.
func (c *Client) Deployments() *Deployments { return &Deployments{c: c} }

// StartDeployment creates a deployment of commit to env. It never merges
// the default branch in (auto_merge false) and requires no status checks
// (required_contexts []): Nova has already decided, and a deployment
// GitHub refused for a pending check would only hide that decision.
func (d *Deployments) StartDeployment(ctx context.Context, commit string, env runner.Environment, description string) (int64, error) {
	if commit == "" || env == "" {
		return 0, runner.Errorf(runner.InternalError, "github: a deployment needs a commit and an environment")
	}
	dep, _, err := d.c.gh.Repositories.CreateDeployment(ctx, d.c.owner, d.c.repo, &gh.DeploymentRequest{
		Ref:              gh.String(commit),
		Environment:      gh.String(string(env)),
		AutoMerge:        gh.Bool(false),
		RequiredContexts: &[]string{},
		Description:      gh.String(description),
	})
	if err != nil {
		return 0, d.c.fail(ctx, err, permDeploymentsW, "creating a deployment of %s to %s", commit, env)
	}
	if dep.GetID() == 0 {
		return 0, runner.Errorf(runner.ForgeAPIFailed, "creating a deployment of %s to %s: GitHub returned no deployment id", commit, env)
	}
	return dep.GetID(), nil
}

// SetDeploymentState records a deployment's progress.
func (d *Deployments) SetDeploymentState(ctx context.Context, id int64, state runner.DeploymentState, description string) error {
	switch state {
	case runner.DeploymentInProgress, runner.DeploymentSuccess, runner.DeploymentFailure, runner.DeploymentInactive:
	default:
		return runner.Errorf(runner.InternalError, "github: deployment state %q is not in_progress, success, failure or inactive", state)
	}
	_, _, err := d.c.gh.Repositories.CreateDeploymentStatus(ctx, d.c.owner, d.c.repo, id, &gh.DeploymentStatusRequest{
		State:       gh.String(string(state)),
		Description: gh.String(truncate(description, maxDescription)),
	})
	if err != nil {
		return d.c.fail(ctx, err, permDeploymentsW, "setting deployment %d to %s", id, state)
	}
	return nil
}
