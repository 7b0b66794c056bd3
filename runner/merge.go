package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// Applying after merge: a pull request's run plans and gates a guarded
// environment, and its approval is of that plan's digest; the run on the
// push to the default branch (the merged commit) plans again and applies
// only the exact approved plan. The digest binds the commit, and the
// merged commit is never the pull request's, so the merged run binds its
// plan to the approved plan's commit, and only when the merged checkout is
// the same change (the contract's content, the stack's and modules'
// digests, the engine version): the digest then equals the approved one
// exactly when Terraform plans the same resources, outputs, configuration
// and variables. Anything else (another change, or the same change planned
// against state that moved) gets a digest nobody approved, and the gate
// holds it as MERGE_PLAN_STALE.

// MergeRecord is the data of nova.merge.checked: the merged commit's
// change against the plan approved for the environment before the merge.
type MergeRecord struct {
	Environment Environment `json:"environment"`
	// Commit is the merged commit the run checked out; Change its change.
	Commit string `json:"commit"`
	Change string `json:"change"`
	// ApprovedPlan is the environment's approved plan (empty: none since
	// it last applied), with the commit and change it was planned from.
	ApprovedPlan   string `json:"approvedPlan,omitempty"`
	ApprovedCommit string `json:"approvedCommit,omitempty"`
	ApprovedChange string `json:"approvedChange,omitempty"`
	// Changed names what differs between the approved change and the
	// merged one: "contract", a "stack:…"/"module:…" of the registry, or
	// "engine (a → b)". Empty when they are the same change.
	Changed []string `json:"changed,omitempty"`
}

// Same is true when the merged commit is the change that was approved:
// the plan then binds the approved plan's commit.
func (m *MergeRecord) Same() bool {
	return m != nil && m.ApprovedPlan != "" && m.Change == m.ApprovedChange
}

// stale is why digest, the merged run's plan, is not the approved plan;
// empty when nothing was approved to compare with.
func (m *MergeRecord) stale(digest string) string {
	switch {
	case m == nil || m.ApprovedPlan == "":
		return ""
	case !m.Same():
		what := strings.Join(m.Changed, ", ")
		if what == "" {
			what = "the change"
		}
		return fmt.Sprintf("the merged commit %s is not what was approved in %s: %s changed after plan %s (change %s, now %s) was approved; plan %s waits for a new approval",
			ShortDigest(m.Commit), m.Environment, what, ShortDigest(m.ApprovedPlan), ShortDigest(m.ApprovedChange), ShortDigest(m.Change), ShortDigest(digest))
	case digest != m.ApprovedPlan:
		return fmt.Sprintf("the merged commit %s is the approved change %s, but its plan %s is not the approved plan %s: what runs in %s moved since the approval (state, providers); plan %s waits for a new approval",
			ShortDigest(m.Commit), ShortDigest(m.Change), ShortDigest(digest), ShortDigest(m.ApprovedPlan), m.Environment, ShortDigest(digest))
	}
	return ""
}

// DigestCommit is the commit the run's plan digest binds: the approved
// plan's when the run is the merge of that very change, else the run's own.
func (st *State) DigestCommit() string {
	if st.Merge.Same() {
		return st.Merge.ApprovedCommit
	}
	return st.Commit
}

// MergeCheck is the stage after the change is identified in a run on the
// merged commit (`nova run --merged`): it finds the plan approved for the
// environment before the merge and compares its change with the merged
// one. It refuses nothing itself: the gate applies only the approved
// digest, and says MERGE_PLAN_STALE with what changed when the plan is another.
type MergeCheck struct {
	Evidence EvidenceReader
}

var _ Stage = (*MergeCheck)(nil)

// Name implements Stage.
func (*MergeCheck) Name() string { return "merge" }

// Run implements Stage.
func (s *MergeCheck) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil || st.Change == nil {
		return Result{}, Errorf(InternalError, "merge check reached without an identified change")
	}
	env := st.Contract.Environment
	if env.Autonomous() {
		return Result{Verdict: Pass, Summary: fmt.Sprintf("%s is autonomous: nothing was approved to compare with", env)}, nil
	}
	if s.Evidence == nil {
		return Result{}, Errorf(InternalError, "the merge check of %s has no evidence to read the approved plan from", env)
	}
	events, err := s.Evidence.Chain(ctx, st.Contract.ID)
	if err != nil {
		return Result{}, err
	}
	rec := FindApprovedPlan(events, env, st.Change.ID, st.PullRequest)
	rec.Commit, rec.Change = st.Commit, st.Change.ID
	if rec.ApprovedPlan != "" && rec.ApprovedChange != rec.Change {
		rec.Changed = changedParts(approvedChangeRecord(events, rec.ApprovedChange), st.Change)
	}
	st.Merge = &rec
	if st.Plan != nil && st.Plan.Commit != st.DigestCommit() {
		// A bundle planned elsewhere (`nova apply --merged`): it must be
		// bound to what this merge binds, or it is not the plan approved
		// for this merged change.
		msg := fmt.Sprintf("plan %s was made from commit %s, the merged commit %s binds %s: plan the merged commit (`nova plan --merged`) and apply that bundle", ShortDigest(st.Plan.Digest), ShortDigest(st.Plan.Commit), ShortDigest(rec.Commit), ShortDigest(st.DigestCommit()))
		return Result{Verdict: Fail, Summary: msg, Findings: []Finding{{Reason: MergePlanStale, Message: msg}}, Event: EventMergeChecked, Data: rec}, nil
	}
	var summary string
	switch {
	case rec.ApprovedPlan == "":
		summary = fmt.Sprintf("no plan of %s was approved since it last applied: the merged commit is planned for approval", env)
	case rec.Same():
		summary = fmt.Sprintf("the merged commit %s is change %s, approved as plan %s (commit %s)", ShortDigest(rec.Commit), ShortDigest(rec.Change), ShortDigest(rec.ApprovedPlan), ShortDigest(rec.ApprovedCommit))
	default:
		summary = fmt.Sprintf("the merged commit %s is not the approved change %s: %s changed", ShortDigest(rec.Commit), ShortDigest(rec.ApprovedChange), strings.Join(rec.Changed, ", "))
	}
	return Result{Verdict: Pass, Summary: summary, Event: EventMergeChecked, Data: rec}, nil
}

// FindApprovedPlan is the plan of env approved since env last applied (a
// destroy's plans aside) that the merge is compared with: the one of
// change whose approval was recorded last, else, when no plan of change
// was approved, the one approved last of pull request pr (0: of any),
// what the merge then differs from. Another pull request's approved plan
// never stands in for this one's. Its Commit and Change are the caller's
// to fill in.
func FindApprovedPlan(events []Event, env Environment, change string, pr int64) MergeRecord {
	after := approvedAfter(SummarizeGate(events), env)
	plans := map[string]PlanRecord{}
	var approved, ofPR, ofChange string
	for _, e := range events {
		switch e.Type {
		case EventPlanCreated:
			var p PlanRecord
			if Environment(e.Environment) == env && DecodeEventData(e, &p) == nil && !p.Operation.IsDestroy() {
				plans[p.Digest] = p
			}
		case EventApprovalRecorded:
			// The environment as the approval's data names it, as the
			// gate counts it.
			var a ApprovalRecord
			if DecodeEventData(e, &a) != nil || a.Environment != env || e.Seq <= after {
				continue
			}
			if p, ok := plans[a.PlanDigest]; ok {
				approved = a.PlanDigest
				if p.PullRequest == pr {
					ofPR = a.PlanDigest
				}
				if p.Change == change {
					ofChange = a.PlanDigest
				}
			}
		}
	}
	switch {
	case ofChange != "":
		approved = ofChange
	case pr != 0 && ofPR != "":
		approved = ofPR
	}
	if approved == "" {
		return MergeRecord{Environment: env}
	}
	p := plans[approved]
	return MergeRecord{Environment: env, ApprovedPlan: p.Digest, ApprovedCommit: p.Commit, ApprovedChange: p.Change}
}

// approvedChangeRecord is what identified change id, from the chain.
func approvedChangeRecord(events []Event, id string) *ChangeRecord {
	for _, e := range slices.Backward(events) {
		if e.Type != EventChangeIdentified {
			continue
		}
		var c ChangeRecord
		if DecodeEventData(e, &c) == nil && c.ID == id {
			return &c
		}
	}
	return nil
}

// changedParts names what differs between two changes.
func changedParts(was, now *ChangeRecord) []string {
	if was == nil {
		return []string{"the change (the approved one is not identified in the evidence)"}
	}
	var out []string
	if was.Contract != now.Contract {
		out = append(out, "contract")
	}
	var keys []string
	for k := range was.Content {
		keys = append(keys, k)
	}
	for k := range now.Content {
		if _, ok := was.Content[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if was.Content[k] != now.Content[k] {
			out = append(out, k)
		}
	}
	if was.Engine != now.Engine {
		out = append(out, fmt.Sprintf("engine (%s → %s)", was.Engine, now.Engine))
	}
	return out
}
