// Package policy is the policy stage: it runs every configured policy engine
// over the contract and target stack (pre-plan) or the plan JSON
// (post-plan), validates every record the engines return against the
// published PCR schema, and evaluates the meta-policy block-on-any-critical
// over the merged records.
//
// Non-critical failures never stop the run: they lower the confidence score
// later. Only a critical failure does, through the meta-policy.
package policy

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
)

// Stage evaluates one phase's policies.
type Stage struct {
	engines []runner.PolicyEngine
	phase   runner.Phase
	now     func() time.Time
}

var _ runner.Stage = (*Stage)(nil)

// Option configures a Stage.
type Option func(*Stage)

// WithClock sets the clock that stamps evaluatedAt; tests pin it.
func WithClock(now func() time.Time) Option { return func(s *Stage) { s.now = now } }

// New returns the policy stage for phase, running engines in order.
func New(engines []runner.PolicyEngine, phase runner.Phase, opts ...Option) *Stage {
	s := &Stage{engines: engines, phase: phase, now: time.Now}
	for _, o := range opts {
		o(s)
	}
	return s
}

// Name implements runner.Stage: "policy" before plan, "plan-policy" after.
func (s *Stage) Name() string {
	if s.phase == runner.PostPlan {
		return "plan-policy"
	}
	return "policy"
}

// Data is what the stage records in its event.
type Data struct {
	Phase  runner.Phase  `json:"phase"`
	Counts runner.Counts `json:"counts"`
}

// validEngines are the engine families a PCR may name; an engine outside
// them could not even report its own failure as a valid record.
var validEngines = map[string]bool{
	runner.EngineRego: true, runner.EngineCheckov: true, runner.EngineKyverno: true,
	runner.EngineNFR: true, runner.EnginePlan: true,
}

// Run implements runner.Stage.
func (s *Stage) Run(ctx context.Context, st *runner.State) (runner.Result, error) {
	if st.Contract == nil || st.Target == nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "%s stage ran before the contract was resolved", s.Name())
	}
	payload := runner.PolicyPayload{Phase: s.phase, Contract: st.Contract, Target: st.Target}
	scope := "contract"
	if s.phase == runner.PostPlan {
		if len(st.PlanJSON) == 0 {
			return runner.Result{}, runner.Errorf(runner.InternalError, "%s stage ran without a plan", s.Name())
		}
		payload.Plan, scope = st.PlanJSON, "plan"
	}
	now := s.now().UTC()
	var all []runner.PCR
	for _, eng := range s.engines {
		name := eng.Name()
		if !validEngines[name] {
			return runner.Result{}, runner.Errorf(runner.InternalError, "policy engine %q is not one of rego, checkov, kyverno, nfr, plan", name)
		}
		pcrs, err := evaluate(ctx, eng, payload)
		all = append(all, runner.NormalizePCRs(name, pcrs, st.Contract.ID, now, jsonschema.ValidatePCR)...)
		if err != nil {
			if ctx.Err() != nil {
				return runner.Result{}, runner.Errorf(runner.RunCancelled, "evaluating policy engine %s: %w", name, ctx.Err())
			}
			all = append(all, engineError(name, err, st.Contract.ID, now))
		}
	}
	meta, crit, err := evaluateMeta(ctx, all, scope, st.Contract.ID, now)
	if err != nil {
		return runner.Result{}, runner.Errorf(runner.PolicyEngineError, "%w", err)
	}
	all = append(all, meta)
	st.PCRs = append(st.PCRs, all...)
	counts := runner.CountPCRs(all)
	res := runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("%s: %s", s.phase, counts.String()),
		PCRs:    all,
		Event:   runner.EventPolicyEvaluated,
		Data:    Data{Phase: s.phase, Counts: counts},
	}
	if len(crit) > 0 {
		res.Verdict = runner.Fail
		res.Summary = fmt.Sprintf("%s: blocked by %d critical failure(s); %s", s.phase, len(crit), counts.String())
		f := runner.Finding{Reason: runner.PolicyCriticalFail, Message: meta.Message}
		if ptr, ok := strings.CutPrefix(crit[0].ResourceRef, "contract:"); ok {
			f.Field = ptr
		}
		res.Findings = []runner.Finding{f}
	}
	return res, nil
}

// evaluate runs one engine; a panicking engine is an engine error like any
// other, never a crash of the run.
func evaluate(ctx context.Context, eng runner.PolicyEngine, payload runner.PolicyPayload) (pcrs []runner.PCR, err error) {
	defer func() {
		if r := recover(); r != nil {
			pcrs, err = nil, fmt.Errorf("engine panicked: %v", r)
		}
	}()
	return eng.Evaluate(ctx, payload)
}

// engineError turns an engine's error into its error record. An error that
// carries a reason code (a consumer policy that does not compile) keeps it.
func engineError(engine string, err error, contractID string, now time.Time) runner.PCR {
	reason := runner.ReasonOf(err)
	if reason == runner.InternalError {
		reason = runner.PolicyEngineError
	}
	return runner.PCR{
		ContractID:  contractID,
		EvaluatedAt: now,
		Engine:      engine,
		RuleID:      string(reason),
		Severity:    runner.High,
		Result:      runner.PCRError,
		Message:     fmt.Sprintf("%s engine: %v", engine, err),
		Evidence:    runner.PCREvidence(reason, map[string]any{"engine": engine}),
	}
}
