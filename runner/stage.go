package runner

import (
	"context"
	"time"
)

// Verdict is what a stage concluded about the change.
type Verdict string

const (
	// Pass lets the run continue to the next stage.
	Pass Verdict = "pass"
	// Fail stops the run: the change was evaluated and found wanting.
	Fail Verdict = "fail"
	// AwaitingApproval stops the run until a human approves in the forge.
	AwaitingApproval Verdict = "awaiting_approval"
	// Errored stops the run: the stage could not evaluate at all. Stages do
	// not return it; the runner sets it when a stage returns an error.
	Errored Verdict = "error"
)

// Finding is one diagnostic a stage reports, always with a reason code.
type Finding struct {
	Reason  Reason `json:"reason"`
	Message string `json:"message"`
	// Field is the contract field the finding is about, as a JSON pointer.
	Field string `json:"field,omitempty"`
	// Location is file:line:col when the finding points into a file.
	Location string `json:"location,omitempty"`
}

// Result is what a stage returns: data, never rendered output.
type Result struct {
	Stage    string    `json:"stage"`
	Verdict  Verdict   `json:"verdict"`
	Summary  string    `json:"summary"`
	Findings []Finding `json:"findings,omitempty"`
	// PCRs are the policy records the stage produced (policy, nfr, plan).
	PCRs     []PCR         `json:"pcrs,omitempty"`
	Duration time.Duration `json:"-"`
	// Event is the CloudEvents type recorded when the verdict is pass or
	// awaiting approval; a fail or error is always recorded as
	// nova.run.failed so consumers need to watch one type for failures.
	Event string `json:"-"`
	// Data is the stage's typed payload, recorded as the event's data.
	Data any `json:"data,omitempty"`
	// Also lists further events the stage's decision implies, recorded in
	// order right after the stage's own event, even when the stage returns
	// an error alongside.
	Also []EventSpec `json:"-"`
	// Done, on a pass, ends the run there: what the later stages would do
	// is already done (a plan that was applied before).
	Done bool `json:"-"`
}

// EventSpec is an event a stage asks the runner to record.
type EventSpec struct {
	Type string
	Data any
}

// Stage is one step of the pipeline. An error means the stage could not
// evaluate at all (a tool missing, I/O failing); a failing verdict is a
// Result with Verdict Fail and findings.
type Stage interface {
	Name() string
	Run(ctx context.Context, st *State) (Result, error)
}

// Preparer is a stage that can start, before its turn, work that decides
// nothing (it readies what the stage then uses), so the stages before it
// overlap that work instead of preceding it. The plan stage is one: it
// initialises terraform in the run's own root module while the pre-plan
// stages judge the contract, and plans only in its turn, once they passed.
type Preparer interface {
	Stage
	// Prepare is offered the state after each stage that passes; it starts
	// at most once per state, when the state holds what it needs, and
	// returns at once.
	Prepare(ctx context.Context, st *State)
	// Abandon stops and waits for what Prepare started for st, and lets go
	// of what it holds, unless the stage's Run took it over. The pipeline
	// calls it as the run ends, however it ends.
	Abandon(st *State)
}

// State is what stages share within one run. Each stage reads what earlier
// stages produced and adds its own part.
type State struct {
	RunID string
	// Dir is the consumer checkout; ContractPath is relative to it.
	Dir          string
	ContractPath string
	// EnvOverride replaces the contract's environment when set (--env).
	EnvOverride Environment
	// EngineOverride replaces the contract's engine when set (--engine).
	EngineOverride string
	// Commit is the consumer commit being deployed; it is bound into the
	// plan digest so an approval cannot be replayed on other code.
	Commit string
	// RunDir holds this run's artefacts: events, the plan bundle, logs.
	RunDir string
	// ForgeRun is the forge's workflow run executing this run, if any;
	// plans record it so an environment approval of that workflow run
	// binds to its own bundle only.
	ForgeRun string
	// PullRequest is the forge's pull request the run is for, 0 when
	// none: the authorization records it, so the evidence says which
	// pull request holds an environment (PullRequestLock).
	PullRequest int64

	Contract       *Contract
	ContractDigest string
	// ContractContent digests the contract as written, environment
	// included: unlike ContractDigest (of the contract as read for this
	// run's environment), the same in every environment it is promoted
	// to.
	ContractContent string
	Target          *TargetStack
	// Change is the change the run deploys (IdentifyChange).
	Change *ChangeRecord
	// DeletedContract is the contract as the trusted base holds it, when
	// the checkout no longer has it (a change that deleted it): the schema
	// stage reads it instead, and only a destroy may run on it.
	DeletedContract []byte
	// Operation is what the run was asked to do: OperationDestroy plans
	// and applies the contract's destroy (`--destroy`, or a bundle
	// planned so); empty creates and updates.
	Operation Operation
	// Rollback is set when the run rolls its environment back to an
	// earlier change (`nova rollback`): what it returns to and what it
	// supersedes. The authorization carries it.
	Rollback *RollbackRecord
	// Merge is set in a run on the merged commit (`nova run --merged`):
	// the plan approved before the merge and how the merged change
	// compares with it (merge.go).
	Merge *MergeRecord
	// UntilMerge holds a guarded environment's run at the gate: its plan
	// is approved on the pull request and applied after the merge.
	UntilMerge bool
	// Completed names the stages that have passed so far, in order; later
	// stages use it to tell "evaluated, nothing found" from "never ran".
	Completed []string
	// PCRs accumulates every policy record of the run, in stage order.
	PCRs []PCR
	// Cost is the monthly cost estimate, when the NFR stage could make one.
	Cost *CostEstimate
	// Confidence is the latest confidence signal (post-plan replaces
	// pre-plan).
	Confidence *Confidence
	// PlanJSON is `terraform show -json` of the saved plan, for plan-level
	// rules.
	PlanJSON      []byte
	Plan          *Plan
	Authorization *Authorization
	// Workspace is the engine's workspace opened for this run's plan, kept
	// open from plan (or bundle) to apply so terraform is initialised and
	// the plan read once; the pipeline closes it when the run ends.
	Workspace Workspace
	// Receipt is the nova.apply.completed of an earlier run that applied
	// this very plan: a replay answers with it and applies nothing.
	Receipt *Event
	// Drift is what `nova drift` found.
	Drift *DriftRecord
}

// Plan is what the plan stage produced and the apply stage consumes.
type Plan struct {
	Digest         string        `json:"digest"`
	ContractDigest string        `json:"contractDigest"`
	Commit         string        `json:"commit"`
	HasChanges     bool          `json:"hasChanges"`
	Changes        ChangeSummary `json:"changes"`
	// Resources lists the planned changes by address, without values.
	Resources []ResourceChange `json:"resources,omitempty"`
	BundleDir string           `json:"bundleDir"`
	// PlanFile is the engine's saved plan inside the bundle: what an
	// authorization's attestation names as its subject.
	PlanFile string `json:"planFile"`
	// ForgeRun is the workflow run that made the plan, when known.
	ForgeRun string `json:"forgeRun,omitempty"`
	// FileSHA256 is the hash of PlanFile when its digest was derived from
	// it in this process: apply can then trust the file by its hash
	// instead of reading the plan again.
	FileSHA256 string `json:"-"`
	// Engine is the engine that planned, at its exact version ("opentofu
	// 1.12.6"); the digest binds it.
	Engine string `json:"engine"`
	// Operation is OperationDestroy for a destroy plan; the digest binds
	// it, so approving an update never authorises a destroy.
	Operation Operation `json:"operation,omitempty"`
}

// ChangeSummary counts resource changes by action, as Terraform reports them.
type ChangeSummary struct {
	Add     int `json:"add"`
	Change  int `json:"change"`
	Destroy int `json:"destroy"`
	Replace int `json:"replace"`
}

// Authorization is the gate's decision that a plan digest may be applied.
type Authorization struct {
	Digest      string      `json:"digest"`
	Environment Environment `json:"environment"`
	// Approver is "autonomous" for dev, otherwise the forge identity.
	Approver string `json:"approver"`
	// Approvals are the nova.approval.recorded events that authorize.
	Approvals []string `json:"approvals,omitempty"`
	// Change is the change the plan deploys (ChangeRecord.ID): once the
	// apply completes, the environment has applied it.
	Change string `json:"change,omitempty"`
	// PullRequest is the pull request whose run was authorized (0: none);
	// once the apply completes, it holds a locked environment.
	PullRequest int64 `json:"pullRequest,omitempty"`
	// BreakGlass is the nova.breakglass.granted event the plan was
	// authorized under, when the grant stood in for approvals.
	BreakGlass string `json:"breakGlass,omitempty"`
	// Operation is OperationDestroy when the authorized plan destroys the
	// contract's environment; Approvers then names every distinct
	// approver the destroy counted (Approver is the first of them).
	Operation Operation `json:"operation,omitempty"`
	Approvers []string  `json:"approvers,omitempty"`
	// Rollback is set when the plan rolls the environment back to an
	// earlier change (nova.rollback.requested has the rest).
	Rollback *RollbackRef `json:"rollback,omitempty"`
}

// CostEstimate is a monthly cost estimate of the planned change.
type CostEstimate struct {
	// Skipped is true when no estimate could be made (no estimator or no
	// credentials); Monthly is then meaningless.
	Skipped  bool    `json:"skipped"`
	Monthly  float64 `json:"monthly"`
	Currency string  `json:"currency,omitempty"`
	Reason   Reason  `json:"reason,omitempty"`
}

// Confidence is the confidence signal: a weighted score of six inputs
// against the environment's frozen threshold.
type Confidence struct {
	Phase       Phase                      `json:"phase"`
	Score       float64                    `json:"score"`
	Band        Band                       `json:"band"`
	Threshold   float64                    `json:"threshold"`
	PerInput    map[string]ConfidenceInput `json:"perInput"`
	ReasonCodes []Reason                   `json:"reasonCodes"`
	// BreakGlass is the grant (nova.breakglass.granted event) under which
	// a score below the threshold was accepted; the gate then insists the
	// grant still holds.
	BreakGlass string `json:"breakGlass,omitempty"`
}

// ConfidenceInput is one input's part of the score.
type ConfidenceInput struct {
	Value        float64  `json:"value"`
	Weight       float64  `json:"weight"`
	Contribution float64  `json:"contribution"`
	Explanation  string   `json:"explanation"`
	Reasons      []Reason `json:"reasons,omitempty"`
}

// Band is the confidence verdict.
type Band string

const (
	BandPass    Band = "pass"
	BandFail    Band = "fail"
	BandBlocked Band = "blocked"
)

// CommitSignature is what is known about the deployed commit's signature.
type CommitSignature string

const (
	CommitVerified   CommitSignature = "verified"
	CommitUnverified CommitSignature = "signed-unverified"
	CommitUnsigned   CommitSignature = "unsigned"
	CommitInvalid    CommitSignature = "invalid"
	CommitUnknown    CommitSignature = "unknown"
)
