package runner

import (
	"context"
	"fmt"
	"time"
)

// The ports below are what stages need from the world outside Nova. Each is
// declared here, where it is consumed, and kept to the few methods its
// stage calls; the adapters in runner's subpackages implement them and
// action/ wires one to each stage.

// CommitVerifier tells what is known about a commit's signature (the
// provenance input). The local implementation asks git; a forge adapter can
// ask the forge.
type CommitVerifier interface {
	VerifyCommit(ctx context.Context, dir, commit string) (CommitSignature, error)
}

// Engine is the infrastructure engine (Terraform) as the plan and apply
// stages use it: render a target stack into a root module, and open that
// module for planning and applying.
type Engine interface {
	// Render writes the root module of target, deployed for contract c,
	// into dir, with a copy of every module it uses. It replaces what dir
	// held before.
	Render(dir string, c *Contract, target *TargetStack) error
	// Open initialises the rendered root module in dir for c's backend;
	// the engine's output goes to the run's log under runDir. Close the
	// workspace when done.
	Open(ctx context.Context, dir, runDir string, c *Contract) (Workspace, error)
}

// Workspace is an initialised root module.
type Workspace interface {
	// Plan saves a plan to planFile and reads it back.
	Plan(ctx context.Context, planFile string) (*SavedPlan, error)
	// Show reads a saved plan.
	Show(ctx context.Context, planFile string) (*SavedPlan, error)
	// RefreshPlan saves a refresh-only plan to planFile and reads it back:
	// what changed outside the engine, proposing nothing (SavedPlan.Drift).
	RefreshPlan(ctx context.Context, planFile string) (*SavedPlan, error)
	// Apply applies exactly the saved plan in planFile.
	Apply(ctx context.Context, planFile string) error
	// Outputs reads the root module's outputs after an apply.
	Outputs(ctx context.Context) (map[string]OutputValue, error)
	Close() error
}

// SavedPlan is a saved plan as the engine reads it back. Every decision
// about it (its digest, whether applying it changes anything) is made from
// the engine's machine-readable form, never from human output.
type SavedPlan struct {
	// Content is what the plan digest covers.
	Content PlanContent
	// JSON is the canonical machine-readable plan, for plan-level rules.
	JSON []byte
	// HasChanges is true when applying the plan changes a resource or an
	// output.
	HasChanges bool
	Changes    ChangeSummary
	Resources  []ResourceChange
	// Drift lists what the plan's refresh found changed outside the engine
	// (DriftOutside), and each resource the plan would change to match the
	// configuration (DriftConfiguration), with attribute names only.
	Drift []DriftedResource
	// FileSHA256 is the hash of the plan file Content was read from, when
	// the engine knows they are the same bytes (the file did not change
	// while it was read); empty when it cannot vouch for that.
	FileSHA256 string
	// Engine is the engine that read the plan, at its exact version
	// ("opentofu 1.12.6"): what made it and what would apply it.
	Engine string
}

// Digest is the plan digest binding this plan to its engine, the contract
// and commit.
func (p *SavedPlan) Digest(contractDigest, commit string) (string, error) {
	d, err := PlanDigest(p.Content, p.Engine, contractDigest, commit)
	if err != nil {
		return "", Errorf(InternalError, "computing plan digest: %w", err)
	}
	return d, nil
}

// OutputValue is one root module output after an apply.
type OutputValue struct {
	Value     any
	Sensitive bool
}

// CostEstimator prices a change (infracost). It never fails a run: an
// estimate that cannot be made is returned as skipped, with the reason.
type CostEstimator interface {
	Estimate(ctx context.Context, st *State) CostReport
}

// CostReport is one estimate with what explains it.
type CostReport struct {
	Estimate CostEstimate
	// Detail explains a skipped or failed estimate.
	Detail string
	// Priced says what was priced: "plan" or "root module".
	Priced string
	// Diff is the monthly difference the change makes, when known.
	Diff *float64
}

// StateLock keeps two runs from planning or applying one contract and
// environment at once. A run takes it before terraform first touches the
// state and holds it until the run ends, so a second run waits for the
// first one's whole span — plan, gate, apply and the recorded outcome —
// rather than for one terraform command: the gate would otherwise find the
// first run's authorization without an outcome and refuse the second as
// APPLY_INDETERMINATE, which it is not.
type StateLock interface {
	// Lock takes the lock of req.Key for req.Holder and returns the
	// function that releases it. When another holder has it, Lock waits up
	// to req.Wait (0: not at all) and then fails with STATE_LOCKED naming
	// that holder; a lock it cannot take or check at all is
	// STATE_LOCK_FAILED.
	Lock(ctx context.Context, req LockRequest) (release func() error, err error)
}

// LockRequest asks for one state lock.
type LockRequest struct {
	// Key names the contract and environment: "<contractId>/<env>".
	Key    string
	Holder LockHolder
	Wait   time.Duration
	// Waiting, when set, is told who holds the lock before Lock starts to
	// wait for it, so a run that seems stuck says what it waits for.
	Waiting func(holder string)
}

// LockHolder is who holds a state lock: enough to find the run (its id in
// the evidence, its process on its host) and to decide whether it is
// still alive.
type LockHolder struct {
	RunID string    `json:"runId"`
	PID   int       `json:"pid"`
	Host  string    `json:"host"`
	Since time.Time `json:"since"`
}

func (h LockHolder) String() string {
	s := fmt.Sprintf("run %s (pid %d on %s", orUnknown(h.RunID), h.PID, orUnknown(h.Host))
	if !h.Since.IsZero() {
		s += ", since " + h.Since.UTC().Format(time.RFC3339)
	}
	return s + ")"
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}
