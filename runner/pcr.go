package runner

import (
	"context"
	"encoding/json"
	"time"
)

// Severity ranks a policy finding. Penalties in the confidence signal and
// the block-on-any-critical rule key off it.
type Severity string

const (
	Critical Severity = "critical"
	High     Severity = "high"
	Medium   Severity = "medium"
	Low      Severity = "low"
	Info     Severity = "info"
)

// Severities lists every severity, most severe first.
var Severities = []Severity{Critical, High, Medium, Low, Info}

// Outcome of one evaluated rule.
type PCRResult string

const (
	PCRPass    PCRResult = "pass"
	PCRFail    PCRResult = "fail"
	PCRSkipped PCRResult = "skipped"
	PCRError   PCRResult = "error"
)

// Engine families recorded in PCR.Engine.
const (
	EngineRego    = "rego"
	EngineCheckov = "checkov"
	EngineKyverno = "kyverno"
	EngineNFR     = "nfr"
	EnginePlan    = "plan"
)

// PCR (PolicyCheckResult) is one normalized record per evaluated rule,
// whatever engine produced it. The field set is the published contract
// (docs/pcr.schema.json); engines never extend it.
type PCR struct {
	ContractID  string    `json:"contractId"`
	EvaluatedAt time.Time `json:"evaluatedAt"`
	Engine      string    `json:"engine"`
	RuleID      string    `json:"ruleId"`
	Severity    Severity  `json:"severity"`
	Result      PCRResult `json:"result"`
	Message     string    `json:"message"`
	// Evidence is what the rule looked at, enough to reproduce the
	// decision; never secret values.
	Evidence    json.RawMessage `json:"evidence,omitempty"`
	ResourceRef string          `json:"resourceRef,omitempty"`
}

// Phase says which payload a policy evaluation saw.
type Phase string

const (
	// PrePlan rules see the contract and the target stack.
	PrePlan Phase = "pre-plan"
	// PostPlan rules also see Terraform's plan JSON; they can only block or
	// lower the confidence score, never raise it.
	PostPlan Phase = "post-plan"
)

// PolicyPayload is what engines evaluate.
type PolicyPayload struct {
	Phase    Phase        `json:"phase"`
	Contract *Contract    `json:"contract"`
	Target   *TargetStack `json:"target"`
	// Plan is `terraform show -json` output; nil before the plan stage.
	Plan json.RawMessage `json:"plan,omitempty"`
}

// PolicyEngine evaluates a payload into PCRs. An engine that is not
// Configured still runs and reports one skipped PCR, so that an absent
// engine is visible rather than a silent pass.
type PolicyEngine interface {
	Name() string
	Configured() bool
	Evaluate(ctx context.Context, payload PolicyPayload) ([]PCR, error)
}
