package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/gitea"
	"github.com/nova-platform/nova/runner/github"
	"github.com/nova-platform/nova/runner/local"
)

// forgeAdapters are the forge's implementations of runner's ports for one
// repository and, when the event names one, one pull request. Which ones
// exist depends on the forge and the event; the gate and the reporting
// use what is there.
type forgeAdapters struct {
	// approvers reads the approver config from the trusted base, once;
	// trusted reads other files there (a deleted contract).
	approvers runner.ApproversReader
	trusted   runner.TrustedBase
	// verifier is what the forge says of a commit's signature.
	verifier   runner.CommitVerifier
	sources    []runner.ApprovalSource
	membership runner.TeamMembership
	change     runner.ChangeReader
	commenter  runner.PullRequestCommenter
	// thread is the pull request's comments as the commenter keeps them,
	// for a summary spread over several comments.
	thread   *runner.KeptThread
	statuses runner.StatusSetter
	// statusLister reads a commit's statuses, so a job setting many skips
	// those already set (runner.KeptStatuses).
	statusLister runner.StatusLister
	// checks holds each contract's detail when a summary comment stands
	// for many (GitHub only: Gitea has no check runs).
	checks      runner.CheckRunReporter
	deployments runner.Deployments
	issues      runner.IssueTracker
	// pullStates tells whether the pull request holding a locked
	// environment is still open.
	pullStates runner.PullRequestStates
}

// connectForge builds the adapters of the forge nova runs in. Outside a
// forge, or without a token, there are none: approvals then come only from
// what is already in the evidence (local claims).
func connectForge(ctx context.Context, cfg Config) (*forgeAdapters, error) {
	fc := cfg.ForgeAPI
	if cfg.Forge == NoForge || fc.Token == "" || fc.Owner == "" {
		return &forgeAdapters{approvers: cfg.localApprovers()}, nil
	}
	a := &forgeAdapters{}
	var trusted runner.TrustedBase
	switch cfg.Forge {
	case GitHub:
		c, err := newGitHub(fc)
		if err != nil {
			return nil, err
		}
		statuses := c.Statuses()
		a.membership, a.statuses, a.deployments, a.issues, trusted, a.verifier = c.Teams(), statuses, c.Deployments(), c.Issues(), c.TrustedBase(), c
		a.statusLister, a.checks = statuses, c.CheckRuns()
		a.pullStates = c.PullRequestStates()
		if fc.RunID != 0 {
			a.sources = append(a.sources, c.EnvironmentApprovals())
		}
		if fc.PullRequest != 0 {
			a.sources = append(a.sources, eventSource(fc, runner.SourceGitHubComment)...)
			a.sources = append(a.sources, c.Reviews(), c.Comments())
			commenter := c.Commenter()
			a.change, a.commenter, a.thread = c.PullRequest(), commenter, commenter.Thread()
		}
	case Gitea:
		c, err := newGitea(ctx, fc)
		if err != nil {
			return nil, err
		}
		statuses := c.Statuses()
		a.membership, a.statuses, a.issues, trusted, a.verifier = c.Teams(), statuses, c.Issues(), c.TrustedBase(), c
		a.statusLister = statuses
		a.pullStates = c.PullRequestStates()
		if fc.PullRequest != 0 {
			pr := c.PullRequest()
			a.sources = append(a.sources, eventSource(fc, runner.SourceGiteaComment)...)
			a.sources = append(a.sources, c.Reviews(), c.Comments())
			a.change, a.commenter, a.thread = pr, pr, pr.Thread()
		}
	}
	if cfg.Command == "summary" {
		// It runs on no checkout: the shards read the approver groups
		// their rows name.
		return a, nil
	}
	path, err := local.RepoPath(cfg.Dir, firstNonEmpty(cfg.ApproversPath, runner.ApproversFile))
	if err != nil {
		return nil, runner.Errorf(runner.ApproversInvalid, "naming %s in the repository: %w", runner.ApproversFile, err)
	}
	a.approvers, a.trusted = &runner.ForgeApprovers{Base: trusted, Path: path}, trusted
	return a, nil
}

func newGitHub(fc ForgeConfig) (*github.Client, error) {
	return github.New(github.Config{APIURL: fc.APIURL, Token: fc.Token, Owner: fc.Owner, Repo: fc.Repo, PullRequest: int(fc.PullRequest), RunID: fc.RunID, Retry: fc.Retry})
}

func newGitea(ctx context.Context, fc ForgeConfig) (*gitea.Client, error) {
	return gitea.New(ctx, gitea.Config{URL: fc.ServerURL, Token: fc.Token, Owner: fc.Owner, Repo: fc.Repo, PullRequest: fc.PullRequest, Retry: fc.Retry})
}

// forgeTrustedBase is the forge's trusted base alone: what reads the
// keyless signers before the rest of the forge is wired (connectForge).
func forgeTrustedBase(ctx context.Context, forge Forge, fc ForgeConfig) (runner.TrustedBase, error) {
	switch forge {
	case GitHub:
		c, err := newGitHub(fc)
		if err != nil {
			return nil, err
		}
		return c.TrustedBase(), nil
	case Gitea:
		c, err := newGitea(ctx, fc)
		if err != nil {
			return nil, err
		}
		return c.TrustedBase(), nil
	}
	return nil, runner.Errorf(runner.ConfigInvalid, "no forge API to read the trusted base through")
}

// eventSource is the comment the event delivered, when it delivered one.
func eventSource(fc ForgeConfig, source string) []runner.ApprovalSource {
	if fc.Comment == nil {
		return nil
	}
	return []runner.ApprovalSource{eventComment{comment: fc.Comment, source: source}}
}

// forgeReport publishes a finished run where people look: one comment per
// contract and environment on the pull request, a commit status, and on
// GitHub a deployment for an apply. A failure to publish is reported but
// never changes the run's verdict, which the evidence already holds.
type forgeReport struct {
	cfg          Config
	forge        *forgeAdapters
	warn         io.Writer
	deploymentID int64
	// summarized says a summary comment of the job stands for this run:
	// its own detail goes to a check run (GitHub) instead of a comment.
	summarized bool
}

// authorized starts the deployment of an authorized apply.
func (r *forgeReport) authorized(ctx context.Context, st *runner.State) {
	if r.cfg.Check || r.forge.deployments == nil || st.Authorization == nil || st.Plan == nil {
		return
	}
	id, err := r.forge.deployments.StartDeployment(ctx, r.commit(), st.Authorization.Environment, "nova apply of plan "+runner.ShortDigest(st.Plan.Digest))
	if err != nil {
		fmt.Fprintf(r.warn, "nova: could not record the deployment on the forge: %v\n", err)
		return
	}
	r.deploymentID = id
	r.deployment(ctx, runner.DeploymentInProgress, "applying plan "+runner.ShortDigest(st.Plan.Digest))
}

func (r *forgeReport) deployment(ctx context.Context, state runner.DeploymentState, description string) {
	if r.deploymentID == 0 {
		return
	}
	if err := r.forge.deployments.SetDeploymentState(ctx, r.deploymentID, state, description); err != nil {
		fmt.Fprintf(r.warn, "nova: could not update the deployment on the forge: %v\n", err)
	}
}

// finished publishes the outcome. A drift check has its own place, the
// drift issue (drift): its verdict is about what runs, not about the
// commit, whose status and comment belong to the change's runs.
func (r *forgeReport) finished(ctx context.Context, v runView) {
	if v.ContractID == "" || r.cfg.Command == "drift" || r.cfg.Check {
		return
	}
	switch {
	case r.deploymentID == 0:
	case v.Verdict == string(runner.Pass):
		r.deployment(ctx, runner.DeploymentSuccess, "applied")
	case v.Reason == string(runner.ApplyIndeterminate):
		r.deployment(ctx, runner.DeploymentFailure, "outcome unknown: record it with `nova evidence resolve`")
	default:
		r.deployment(ctx, runner.DeploymentFailure, "failed: "+v.Reason)
	}
	if r.forge.statuses != nil && r.commit() != "" {
		s := runner.CommitStatus{Context: fmt.Sprintf("nova/%s/%s", v.ContractID, v.Environment), State: commitState(v), Description: statusLine(v), TargetURL: r.runURL()}
		if err := r.forge.statuses.SetStatus(ctx, r.commit(), s); err != nil {
			fmt.Fprintf(r.warn, "nova: could not set the commit status: %v\n", err)
		}
	}
	if r.summarized {
		r.checkRun(ctx, v)
		return
	}
	if r.forge.commenter != nil {
		group := ""
		if waitsForApproval(v) && r.forge.approvers != nil {
			if cfg, err := r.forge.approvers.Approvers(ctx); err == nil {
				group = cfg.GroupFor(runner.Environment(v.Environment))
			}
		}
		body, err := renderComment(v, group, r.runURL())
		if err == nil {
			err = r.forge.commenter.UpsertComment(ctx, commentMarker(v.ContractID, v.Environment), body)
		}
		if err != nil {
			fmt.Fprintf(r.warn, "nova: could not update the pull request comment: %v\n", err)
		}
	}
}

// checkRun publishes the run's report, as its comment would have shown
// it, as a check run of the commit.
func (r *forgeReport) checkRun(ctx context.Context, v runView) {
	if r.forge.checks == nil || r.commit() == "" {
		return
	}
	group := ""
	if waitsForApproval(v) && r.forge.approvers != nil {
		if cfg, err := r.forge.approvers.Approvers(ctx); err == nil {
			group = cfg.GroupFor(runner.Environment(v.Environment))
		}
	}
	body, err := renderComment(v, group, r.runURL())
	if err == nil {
		// The marker finds a comment; a check run is found by its name.
		body = strings.TrimPrefix(strings.TrimPrefix(body, commentMarker(v.ContractID, v.Environment)), "\n")
		err = r.forge.checks.ReportCheckRun(ctx, r.commit(), runner.CheckRun{
			Name: fmt.Sprintf("nova/%s/%s", v.ContractID, v.Environment), State: commitState(v),
			Title: statusLine(v), Summary: body, DetailsURL: r.runURL(),
		})
	}
	if err != nil && !errors.Is(err, github.ErrCheckRunsRefused) {
		// Said once: the adapter asks no more after a refusal.
		fmt.Fprintf(r.warn, "nova: could not publish the check run of %s (its report stays in the job summary): %v\n", v.ContractID, err)
	}
}

// commit is where statuses and deployments go: the pull request's head
// (what reviewers see), else the commit the run planned.
func (r *forgeReport) commit() string {
	if r.cfg.ForgeAPI.HeadSHA != "" {
		return r.cfg.ForgeAPI.HeadSHA
	}
	return r.cfg.Commit
}

func (r *forgeReport) runURL() string {
	return runURL(r.cfg.Forge, r.cfg.ForgeAPI)
}

// runURL is where the forge's web UI shows this workflow run: GitHub
// addresses a run by its id; Gitea by its index among the repository's
// runs (GITHUB_RUN_NUMBER there), while its GITHUB_RUN_ID counts the runs
// of the whole instance and names another repository's run, or none.
func runURL(forge Forge, fc ForgeConfig) string {
	n := fc.RunID
	if forge == Gitea {
		n = fc.RunNumber
	}
	if fc.ServerURL == "" || fc.Owner == "" || fc.Repo == "" || n <= 0 {
		return ""
	}
	return fmt.Sprintf("%s/%s/%s/actions/runs/%d", fc.ServerURL, url.PathEscape(fc.Owner), url.PathEscape(fc.Repo), n)
}

// commitState is the state of the environment's commit status: success
// once the environment runs the change (applied now, or before: a
// receipt), pending while it waits for an approval or for its apply.
func commitState(v runView) runner.CommitState {
	switch runner.Verdict(v.Verdict) {
	case runner.Pass:
		if notApplied(v) {
			return runner.StatePending
		}
		return runner.StateSuccess
	case runner.AwaitingApproval:
		return runner.StatePending
	case runner.Fail:
		return runner.StateFailure
	}
	return runner.StateError
}

func statusLine(v runView) string {
	s := fmt.Sprintf("nova %s: %s", v.Command, v.Verdict)
	if waitsForApproval(v) && len(v.PlanDigest) >= runner.MinDigestPrefix {
		// Enough of the digest to approve by: where the change is
		// reported in one summary read from the statuses (Gitea's
		// fan-out), no comment of the contract's own shows it.
		s += ", plan " + v.PlanDigest[:runner.MinDigestPrefix]
	}
	switch {
	case v.Receipt != "":
		s += " (applied before; nothing to do)"
	case notApplied(v):
		s += " (not applied yet)"
	}
	if v.Reason != "" {
		s += " (" + v.Reason + ")"
	}
	return s
}
