package runner

import (
	"context"
	"encoding/json"
	"time"
)

// EvidenceReader is what the gate and the apply job read from the evidence
// trail. The evidence repo implements it; the rules below decide from what
// it returns, so every forge and every store gives the same verdict.
type EvidenceReader interface {
	// Chain returns every event of the contract, oldest first. It returns
	// only a whole, verified chain (every event signed by a trusted key,
	// seq continuous, each preveventhash the hash of the event before) or
	// an error carrying the reason — never a shorter list, which would let
	// someone who can push but not sign hide an event the gate must see.
	Chain(ctx context.Context, contractID string) ([]Event, error)
}

// ApprovalRecord is the data of a nova.approval.recorded (or, with a
// reason, nova.approval.rejected) event: a human decision, imported from an
// approval source after its author was found eligible, bound to one plan
// digest.
type ApprovalRecord struct {
	ContractID  string      `json:"contractId,omitempty"`
	Environment Environment `json:"environment"`
	PlanDigest  string      `json:"planDigest"`
	Approver    string      `json:"approver"`
	// Group is the approver group the approver was found in.
	Group string `json:"group,omitempty"`
	// Source and SourceRef say where the decision was found (a workflow
	// run, a review, a comment, a signed claim) so it is imported once.
	Source    string     `json:"source,omitempty"`
	SourceRef string     `json:"sourceRef,omitempty"`
	At        *time.Time `json:"time,omitempty"`
	// Reason explains a rejection.
	Reason string `json:"reason,omitempty"`
	// Claim is a local approval's signed claim, kept so anyone can verify
	// the approver's signature later.
	Claim *SignedClaim `json:"claim,omitempty"`
}

// Approval is a recorded approval with the event that holds it.
type Approval struct {
	ApprovalRecord
	EventID string `json:"eventId"`
	Seq     int64  `json:"seq"`
	// Recorded is when the approval was imported.
	Recorded time.Time `json:"recorded"`
}

// decidedAt is when the approver decided: the source's time when it gave
// one, else when Nova recorded it.
func (a Approval) decidedAt() time.Time {
	if a.At != nil && !a.At.IsZero() {
		return *a.At
	}
	return a.Recorded
}

// Resolution is the data of a nova.apply.resolved event: what an operator
// established about an apply whose outcome Nova could not know.
type Resolution struct {
	// Outcome is ResolvedApplied or ResolvedNotApplied.
	Outcome string `json:"outcome"`
	Note    string `json:"note"`
	// Resolves is the id of the nova.apply.indeterminate event.
	Resolves string `json:"resolves"`
	// ResolvedBy is who established the outcome.
	ResolvedBy string `json:"resolvedBy"`
}

// Resolution outcomes.
const (
	ResolvedApplied    = "applied"
	ResolvedNotApplied = "not-applied"
)

// PlanRecord is the data the plan stage records with nova.plan.created:
// the digest approvals bind to and what the plan would change. It carries
// resource addresses and actions, never attribute values (which may be
// secrets).
type PlanRecord struct {
	Digest     string           `json:"digest"`
	HasChanges bool             `json:"hasChanges"`
	Changes    ChangeSummary    `json:"changes"`
	Resources  []ResourceChange `json:"resources,omitempty"`
	BundleDir  string           `json:"bundleDir"`
	// Commit is the consumer commit the plan is bound to (empty outside a
	// git checkout): what follows one change from dev to dr in an audit.
	Commit string `json:"commit,omitempty"`
	// Change is the change the plan deploys (ChangeRecord.ID).
	Change string `json:"change,omitempty"`
	// PullRequest is the pull request the plan was made for (0: none).
	PullRequest int64 `json:"pullRequest,omitempty"`
	// Engine is the engine that planned, at its exact version ("opentofu
	// 1.12.6"): the one the digest binds, and the only one that may apply.
	Engine string `json:"engine,omitempty"`
	// Operation is OperationDestroy for a destroy plan.
	Operation Operation `json:"operation,omitempty"`
}

// ResourceChange is one planned change, without its values.
type ResourceChange struct {
	Address string   `json:"address"`
	Actions []string `json:"actions"`
}

// DecodeEventData reads an event's data into v. Stage events wrap their
// payload in the pipeline's envelope ({"stage": …, "result": …}); events a
// stage asked for (EventSpec) and events written outside a pipeline carry
// it directly. Both are read here, so nobody else needs to know the
// envelope's keys.
func DecodeEventData(e Event, v any) error {
	data := e.Data
	var env StageEventData
	if json.Unmarshal(data, &env) == nil && env.Stage != "" && len(env.Result) > 0 {
		data = env.Result
	}
	return json.Unmarshal(data, v)
}

// UnresolvedApply returns the event that leaves an apply in env with an
// outcome nobody knows, or nil. While one exists nothing may be applied
// there: the last apply may have changed the infrastructure, half or whole.
// It is
//
//   - a nova.apply.indeterminate (the apply was interrupted, or its result
//     could not be read), or
//   - a nova.apply.authorized that its run never followed with an outcome
//     (nova.apply.completed, or nova.run.failed for a reason other than an
//     unknown outcome): nova itself died mid-apply, killed or lost,
//
// and nothing later settles it but a nova.apply.resolved of the same
// environment (`nova evidence resolve`). Other environments have their
// own state and are not held.
func UnresolvedApply(events []Event, env Environment) *Event {
	var open *Event
	authorizedBy := ""
	for i := range events {
		e := &events[i]
		if e.Environment != string(env) {
			continue
		}
		switch e.Type {
		case EventApplyAuthorized:
			open, authorizedBy = e, e.RunID
		case EventApplyCompleted:
			if open != nil && open.Type == EventApplyAuthorized && e.RunID == authorizedBy {
				open = nil
			}
		case EventRunFailed:
			if open != nil && open.Type == EventApplyAuthorized && e.RunID == authorizedBy && !failedUnknown(*e) {
				// The run stopped with a verdict about its apply (refused,
				// or failed as terraform reported it): nothing is unknown.
				open = nil
			}
		case EventApplyIndeterminate:
			open = e
		case EventApplyResolved:
			open = nil
		}
	}
	return open
}

// failedUnknown reports whether a nova.run.failed says the apply's outcome
// is unknown; its nova.apply.indeterminate may not have been recorded.
func failedUnknown(e Event) bool {
	var d StageEventData
	if json.Unmarshal(e.Data, &d) != nil {
		return true // unreadable: assume the worst
	}
	for _, f := range d.Findings {
		if f.Reason == ApplyIndeterminate {
			return true
		}
	}
	return false
}

// AppliedReceipt returns the nova.apply.completed event that applied the
// plan with digest in env, or nil: replaying an applied plan answers with
// the original receipt instead of running it again.
func AppliedReceipt(events []Event, env Environment, digest string) *Event {
	for i := range events {
		e := &events[i]
		if e.Type != EventApplyCompleted || e.Environment != string(env) {
			continue
		}
		var r struct {
			Digest string `json:"digest"`
		}
		if DecodeEventData(*e, &r) == nil && r.Digest == digest {
			return e
		}
	}
	return nil
}

// PlanCleared reports whether events (one contract's chain) show that the
// plan with digest passed the whole evaluation of the run that made it: a
// nova.plan.created for digest in env, followed in the same run by a
// post-plan nova.confidence.computed in band pass, or in band fail accepted
// under a break-glass grant (the gate then insists that the grant still
// holds; a blocked score is never accepted). A plan bundle is written
// before the plan-level rules run, so its existence proves nothing; only
// the signed evidence does. A destroy plan is cleared by its
// nova.plan.created alone: a destroy is judged by its approvers, not by
// the policy and confidence of what it takes away, and nothing follows
// its plan that could fail it.
func PlanCleared(events []Event, env Environment, digest string) bool {
	run := ""
	for _, e := range events {
		if e.Environment != string(env) {
			continue
		}
		switch e.Type {
		case EventPlanCreated:
			var p PlanRecord
			if DecodeEventData(e, &p) == nil && p.Digest == digest {
				if p.Operation.IsDestroy() {
					return true
				}
				run = e.RunID
			}
		case EventConfidenceComputed:
			var c Confidence
			if run != "" && e.RunID == run && DecodeEventData(e, &c) == nil && c.Phase == PostPlan && (c.Band == BandPass || (c.Band == BandFail && c.BreakGlass != "")) {
				return true
			}
		}
	}
	return false
}

// PlanEvaluation returns what the run that made the plan with digest found
// about it: the policy records of all its stages and its post-plan
// confidence. An apply job working from a bundle is given them here, so its
// attestation and report bind the same verdicts the plan job reached.
func PlanEvaluation(events []Event, env Environment, digest string) ([]PCR, *Confidence) {
	run := ""
	for _, e := range events {
		if e.Type != EventPlanCreated || e.Environment != string(env) {
			continue
		}
		var p PlanRecord
		if DecodeEventData(e, &p) == nil && p.Digest == digest {
			run = e.RunID
		}
	}
	if run == "" {
		return nil, nil
	}
	var pcrs []PCR
	var conf *Confidence
	for _, e := range events {
		if e.RunID != run || e.Environment != string(env) {
			continue
		}
		var d StageEventData
		if json.Unmarshal(e.Data, &d) == nil {
			pcrs = append(pcrs, d.PCRs...)
		}
		var c Confidence
		if e.Type == EventConfidenceComputed && DecodeEventData(e, &c) == nil && c.Phase == PostPlan {
			conf = &c
		}
	}
	return pcrs, conf
}

// Approvals returns the approvals recorded in env, oldest first. An
// approval event whose data cannot be read is an error: the gate must not
// decide on part of the record.
func Approvals(events []Event, env Environment) ([]Approval, error) {
	var out []Approval
	for _, e := range events {
		if e.Type != EventApprovalRecorded {
			continue
		}
		var a ApprovalRecord
		if err := DecodeEventData(e, &a); err != nil {
			return nil, Errorf(EvidenceLayoutInvalid, "reading approval %s: %w", e.ID, err)
		}
		if a.Environment == env {
			out = append(out, Approval{ApprovalRecord: a, EventID: e.ID, Seq: e.Seq, Recorded: e.Time})
		}
	}
	return out, nil
}
