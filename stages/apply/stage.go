// Package apply holds the stages that end a run: loading a plan bundle made
// by an earlier `nova plan`, and applying exactly the plan the gate
// authorized.
package apply

import (
	"context"
	"fmt"
	"path/filepath"
	"sort"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/plan"
)

// Stage applies the authorized plan.
type Stage struct{ cfg plan.Config }

var _ runner.Stage = (*Stage)(nil)

// New returns the apply stage; it shares the plan stage's configuration so
// that both initialise the same backend.
func New(cfg plan.Config) *Stage { return &Stage{cfg: cfg} }

// Name implements runner.Stage.
func (*Stage) Name() string { return "apply" }

// Data is what the stage records in its event.
type Data struct {
	Digest  string               `json:"digest"`
	Applied bool                 `json:"applied"`
	Changes runner.ChangeSummary `json:"changes"`
	// Outputs holds the root outputs Terraform does not mark sensitive.
	Outputs map[string]any `json:"outputs,omitempty"`
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
	_, backendConfig, err := s.cfg.Backend(st.Contract)
	if err != nil {
		return runner.Result{}, err
	}
	ws, closeLog, err := plan.OpenWorkspace(filepath.Join(st.Plan.BundleDir, plan.RootDir), st.RunDir, s.cfg.Terraform)
	if err != nil {
		return runner.Result{}, err
	}
	defer closeLog()
	if err := ws.Init(ctx, backendConfig); err != nil {
		return runner.Result{}, err
	}
	// The authorization names a digest, not a file: re-derive the digest
	// from the saved plan itself so a swapped or altered tfplan is refused.
	planFile := filepath.Join(st.Plan.BundleDir, plan.PlanFile)
	p, err := ws.ShowPlan(ctx, planFile)
	if err != nil {
		return runner.Result{}, err
	}
	digest, err := plan.Digest(p, st.ContractDigest, st.Commit)
	if err != nil {
		return runner.Result{}, err
	}
	if digest != auth.Digest {
		return runner.Result{
			Verdict: runner.Fail,
			Summary: fmt.Sprintf("saved plan hashes to %s, authorized was %s", runner.ShortDigest(digest), runner.ShortDigest(auth.Digest)),
			Findings: []runner.Finding{{Reason: runner.PlanDigestMismatch,
				Message: fmt.Sprintf("the saved plan in %s hashes to %s, but %s was authorized; nothing was applied", st.Plan.BundleDir, digest, auth.Digest)}},
		}, nil
	}
	changes, _ := plan.Summarize(p)
	if !plan.HasChanges(p) {
		return runner.Result{
			Verdict: runner.Pass,
			Summary: fmt.Sprintf("plan %s has no changes; nothing to apply", runner.ShortDigest(digest)),
			Event:   runner.EventApplyCompleted,
			Data:    Data{Digest: digest, Applied: false, Changes: changes},
		}, nil
	}
	if err := ws.Apply(ctx, planFile); err != nil {
		if runner.ReasonOf(err) == runner.TerraformInterrupted {
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
	public := map[string]any{}
	names := make([]string, 0, len(outputs))
	for name := range outputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if o := outputs[name]; !o.Sensitive {
			public[name] = o.Value
		}
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("applied plan %s: %d added, %d changed, %d destroyed", runner.ShortDigest(digest), changes.Add, changes.Change, changes.Destroy),
		Event:   runner.EventApplyCompleted,
		Data:    Data{Digest: digest, Applied: true, Changes: changes, Outputs: public},
	}, nil
}

// indeterminate records that the apply's outcome is unknown: terraform was
// interrupted mid-apply or its result could not be read. It is never
// reported as completed or failed by guess, and the gate refuses further
// applies of the contract until an operator resolves it.
func indeterminate(digest string, cause error) (runner.Result, error) {
	return runner.Result{Also: []runner.EventSpec{{
			Type: runner.EventApplyIndeterminate,
			Data: map[string]string{"digest": digest, "cause": cause.Error()},
		}}},
		runner.Errorf(runner.ApplyIndeterminate, "the outcome of applying plan %s is unknown: %w", runner.ShortDigest(digest), cause)
}

// Bundle loads the plan bundle of an earlier `nova plan` into the run, for
// `nova apply` in a separate job. It refuses a bundle made for another
// contract, environment, contract content or commit.
type Bundle struct {
	// Dir is the bundle; empty means the newest one for the contract under
	// the checkout's .nova/runs.
	Dir string
	// RunsDir is where to look when Dir is empty.
	RunsDir string
	// Records proves that the plan passed its evaluation. A bundle is
	// written before the plan-level rules run, so on its own it proves
	// nothing.
	Records PlanRecords
}

// PlanRecords answers from the evidence whether a plan digest passed the
// plan-level policy and confidence of the run that made it.
type PlanRecords interface {
	PlanCleared(ctx context.Context, contractID string, env runner.Environment, digest string) (bool, error)
}

var _ runner.Stage = (*Bundle)(nil)

// Name implements runner.Stage.
func (*Bundle) Name() string { return "bundle" }

// Run implements runner.Stage.
func (b *Bundle) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "bundle reached without a validated contract")
	}
	dir := b.Dir
	if dir == "" {
		var err error
		if dir, err = plan.LatestBundle(b.RunsDir, st.Contract.ID, st.Contract.Environment); err != nil {
			return runner.Result{}, err
		}
	}
	m, err := plan.ReadManifest(dir)
	if err != nil {
		return runner.Result{}, err
	}
	var mismatches []runner.Finding
	check := func(what, got, want string) {
		if got != want {
			mismatches = append(mismatches, runner.Finding{Reason: runner.PlanBundleMismatch,
				Message: fmt.Sprintf("bundle %s was planned for %s %q, this run has %q", dir, what, got, want)})
		}
	}
	check("contract", m.ContractID, st.Contract.ID)
	check("environment", string(m.Environment), string(st.Contract.Environment))
	check("contract digest", m.ContractDigest, st.ContractDigest)
	check("commit", m.Commit, st.Commit)
	if len(mismatches) > 0 {
		return runner.Result{Verdict: runner.Fail, Summary: mismatches[0].Message, Findings: mismatches}, nil
	}
	if b.Records == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "bundle stage has no evidence to check the plan against")
	}
	cleared, err := b.Records.PlanCleared(ctx, st.Contract.ID, st.Contract.Environment, m.PlanDigest)
	if err != nil {
		return runner.Result{}, err
	}
	if !cleared {
		msg := fmt.Sprintf("plan %s (run %s) has no passing plan-level policy and confidence in the evidence; run `nova plan` again and apply a plan that passed", m.PlanDigest, m.RunID)
		return runner.Result{Verdict: runner.Fail, Summary: "plan not cleared: " + runner.ShortDigest(m.PlanDigest),
			Findings: []runner.Finding{{Reason: runner.PlanNotCleared, Message: msg}}}, nil
	}
	st.Plan = &runner.Plan{
		Digest: m.PlanDigest, ContractDigest: m.ContractDigest, Commit: m.Commit,
		HasChanges: m.HasChanges, Changes: m.Changes, BundleDir: dir,
	}
	return runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("loaded plan %s from %s (run %s)", runner.ShortDigest(m.PlanDigest), dir, m.RunID),
		Event:   runner.EventPlanLoaded,
		Data:    m,
	}, nil
}
