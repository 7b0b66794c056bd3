// Package confidence is the confidence stage: it scores a change from six
// canonical inputs (schema, policy, nfr, tests, cost, provenance) against
// the environment's frozen threshold, and explains the score.
package confidence

import (
	"context"
	"fmt"
	"slices"

	"github.com/google/uuid"

	"github.com/nova-platform/nova/runner"
)

// Stage computes the confidence signal.
type Stage struct {
	phase    runner.Phase
	verifier runner.CommitVerifier
	waiver   runner.BreakGlassWaiver
}

// Option configures the stage.
type Option func(*Stage)

// WithBreakGlass lets a break-glass grant that holds for the contract's
// environment accept a score below the threshold; never a blocked one.
func WithBreakGlass(w runner.BreakGlassWaiver) Option { return func(s *Stage) { s.waiver = w } }

var _ runner.Stage = (*Stage)(nil)

// New returns the confidence stage for a phase: pre-plan after the policy
// and nfr stages, post-plan after the plan-level policy stage.
func New(phase runner.Phase, verifier runner.CommitVerifier, opts ...Option) *Stage {
	s := &Stage{phase: phase, verifier: verifier}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Name implements runner.Stage.
func (s *Stage) Name() string {
	if s.phase == runner.PostPlan {
		return "plan-confidence"
	}
	return "confidence"
}

// Decision is the data of nova.ai.decision.made: the automated decision the
// score led to, so that a human override later can be recorded against it.
type Decision struct {
	DecisionID    string            `json:"decisionId"`
	Phase         runner.Phase      `json:"phase"`
	ChosenAction  string            `json:"chosenAction"`
	HumanOverride bool              `json:"humanOverride"`
	Confidence    runner.Confidence `json:"confidence"`
}

// Run implements runner.Stage.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	ev := Evidence{
		Phase:     s.phase,
		Contract:  st.Contract,
		Target:    st.Target,
		Completed: st.Completed,
		PCRs:      st.PCRs,
		Cost:      st.Cost,
		Commit:    CommitUnknown,
	}
	if st.Contract != nil && st.Contract.Validation != nil {
		v := st.Contract.Validation
		for _, r := range []struct{ field, path string }{
			{"unitTests", v.UnitTests}, {"integrationTests", v.IntegrationTests},
			{"e2eSuite", v.E2ESuite}, {"loadTest", v.LoadTest},
		} {
			if r.path != "" {
				ev.Reports = append(ev.Reports, ReadReport(st.Dir, r.field, r.path))
			}
		}
	}
	if s.verifier != nil && st.Commit != "" {
		state, err := s.verifier.VerifyCommit(ctx, st.Dir, st.Commit)
		if err != nil {
			return runner.Result{}, runner.Errorf(runner.ReasonOf(err), "verifying commit %s: %w", st.Commit, err)
		}
		ev.Commit = state
	}
	c := Compute(ev)
	if prev := st.Confidence; s.phase == runner.PostPlan && prev != nil && c.Band != runner.BandBlocked && prev.Score < c.Score {
		// Plan-level findings may only lower the score; whatever else
		// changed since pre-plan cannot buy it back.
		c.Score, c.Band = prev.Score, band(prev.Score, st.Contract.Environment)
	}
	if prev := st.Confidence; s.phase == runner.PostPlan && prev != nil && c.Score < prev.Score {
		c.ReasonCodes = append(c.ReasonCodes, runner.ConfidenceLoweredByPlan)
	}
	if c.Band == runner.BandFail && !slices.Contains(c.ReasonCodes, runner.ConfidenceInputMissing) && s.waiver != nil && st.Contract != nil {
		g, err := s.waiver.ActiveGrant(ctx, st.Contract.ID, st.Contract.Environment)
		if err != nil {
			return runner.Result{}, err
		}
		if g != nil {
			c.BreakGlass = g.Grant
		}
	}
	st.Confidence = &c

	res := runner.Result{
		Summary: fmt.Sprintf("score %.3f, threshold %.3f (%s): %s", c.Score, c.Threshold, envOf(st), c.Band),
		Event:   runner.EventConfidenceComputed,
		Data:    c,
		Also: []runner.EventSpec{{Type: runner.EventDecisionMade, Data: Decision{
			DecisionID: uuid.NewString(), Phase: s.phase, ChosenAction: action(c), HumanOverride: c.BreakGlass != "", Confidence: c,
		}}},
	}
	switch {
	case c.Band == runner.BandPass:
		res.Verdict = runner.Pass
	case c.BreakGlass != "":
		// The gate records the grant's use, and refuses the plan if the
		// grant has ended by then.
		res.Verdict = runner.Pass
		res.Summary += fmt.Sprintf("; BREAK-GLASS: accepted below the threshold under grant %s", c.BreakGlass)
	case slices.Contains(c.ReasonCodes, runner.ConfidenceInputMissing):
		res.Verdict = runner.Fail
		res.Summary = fmt.Sprintf("halted: input(s) %v missing", Missing(c))
		for _, name := range Missing(c) {
			res.Findings = append(res.Findings, runner.Finding{Reason: runner.ConfidenceInputMissing,
				Message: fmt.Sprintf("confidence input %s is missing: %s", name, c.PerInput[name].Explanation)})
		}
	case c.Band == runner.BandBlocked:
		res.Verdict = runner.Fail
		res.Findings = []runner.Finding{{Reason: runner.PolicyCriticalFail, Message: "a critical policy check failed; the change is blocked whatever its score"}}
	default:
		res.Verdict = runner.Fail
		res.Findings = []runner.Finding{{Reason: runner.ConfidenceBelowThreshold,
			Message: fmt.Sprintf("confidence %.3f is below the %s threshold %.3f", c.Score, envOf(st), c.Threshold)}}
	}
	return res, nil
}

// action names what the automated decision was, for the decision event.
func action(c runner.Confidence) string {
	switch {
	case c.Band == runner.BandPass:
		return "proceed"
	case c.Band == runner.BandBlocked:
		return "block"
	case c.BreakGlass != "":
		// A break-glass grant overrode the halt the score called for.
		return "proceed"
	}
	return "halt"
}

func envOf(st *runner.State) runner.Environment {
	if st.Contract == nil {
		return ""
	}
	return st.Contract.Environment
}
