// Package drift is the stage of `nova drift`: it compares a contract's
// live infrastructure with what was last applied to its environment and
// records nova.drift.detected or nova.drift.clear.
package drift

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// Stage is the drift check.
type Stage struct {
	engine   runner.Engine
	evidence runner.EvidenceReader
}

var _ runner.Stage = (*Stage)(nil)

// New returns the drift stage. The evidence says what was last applied,
// which the configuration check compares against.
func New(engine runner.Engine, evidence runner.EvidenceReader) *Stage {
	return &Stage{engine: engine, evidence: evidence}
}

// Name implements runner.Stage.
func (*Stage) Name() string { return "drift" }

// Run implements runner.Stage. Drift found is a verdict (DRIFT_DETECTED,
// exit 1), recorded with nova.drift.detected; anything that keeps the
// check from finishing is an error (exit 2): Nova could not tell.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil || st.Target == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "drift reached without a resolved contract")
	}
	c := st.Contract
	dir := filepath.Join(st.RunDir, "drift")
	root := filepath.Join(dir, "root")
	if err := s.engine.Render(root, c, st.Target); err != nil {
		return runner.Result{}, err
	}
	// The workspace holds the run lock until the run ends, so the check
	// never reads a state an apply is halfway through.
	ws, err := s.engine.Open(ctx, root, st.RunDir, c)
	if err != nil {
		return runner.Result{}, err
	}
	st.Workspace = ws
	refreshed, err := ws.RefreshPlan(ctx, filepath.Join(dir, "refresh.tfplan"))
	if err != nil {
		return runner.Result{}, err
	}
	rec := runner.DriftRecord{}
	for _, d := range refreshed.Drift {
		if d.Kind == runner.DriftOutside {
			rec.Resources = append(rec.Resources, d)
		}
	}
	if err := s.configuration(ctx, st, ws, filepath.Join(dir, "configuration.tfplan"), &rec); err != nil {
		return runner.Result{}, err
	}
	rec.Drifted = len(rec.Resources) > 0
	st.Drift = &rec
	if !rec.Drifted {
		summary := "no drift: nothing changed outside Terraform"
		if rec.ConfigurationChecked {
			summary += ", and everything matches the configuration last applied"
		}
		return runner.Result{Verdict: runner.Pass, Summary: summary, Event: runner.EventDriftClear, Data: rec}, nil
	}
	var findings []runner.Finding
	for _, d := range rec.Resources {
		findings = append(findings, runner.Finding{Reason: runner.DriftDetected, Message: Describe(d)})
	}
	return runner.Result{
		Verdict:  runner.Fail,
		Summary:  fmt.Sprintf("drift: %d resource(s) no longer match what was applied", len(rec.Resources)),
		Findings: findings,
		Data:     rec,
		Also:     []runner.EventSpec{{Type: runner.EventDriftDetected, Data: rec}},
	}, nil
}

// configuration compares the state with the configuration last applied,
// when the contract still resolves to it; otherwise it says why not.
func (s *Stage) configuration(ctx context.Context, st *runner.State, ws runner.Workspace, planFile string, rec *runner.DriftRecord) error {
	env := st.Contract.Environment
	events, err := s.evidence.Chain(ctx, st.Contract.ID)
	if err != nil {
		return err
	}
	applied, run, ok := runner.AppliedTarget(events, env)
	if !ok {
		rec.Note = fmt.Sprintf("nothing was applied to %s yet, so only changes outside Terraform were looked for", env)
		return nil
	}
	current, err := runner.Digest(st.Target)
	if err != nil {
		return runner.Errorf(runner.InternalError, "hashing target stack: %w", err)
	}
	if current != applied {
		rec.Note = fmt.Sprintf("the contract changed since run %s applied it to %s; a change waiting to be applied is not drift, so only changes outside Terraform were looked for", run, env)
		return nil
	}
	sp, err := ws.Plan(ctx, planFile)
	if err != nil {
		return err
	}
	for _, d := range sp.Drift {
		if d.Kind == runner.DriftConfiguration {
			rec.Resources = append(rec.Resources, d)
		}
	}
	rec.ConfigurationChecked = true
	return nil
}

// Describe says what drifted about one resource, without values.
func Describe(d runner.DriftedResource) string {
	what := "changed outside Terraform"
	if d.Kind == runner.DriftConfiguration {
		what = "no longer matches the configuration last applied"
	}
	s := fmt.Sprintf("%s %s (%s)", d.Address, what, strings.Join(d.Actions, ", "))
	if len(d.Attributes) > 0 {
		s += ": " + strings.Join(d.Attributes, ", ")
	}
	return s
}
