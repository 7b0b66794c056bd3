package runner

import (
	"context"
	"errors"
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
	// SupersededBy is the merged commit the environment applied last,
	// when Commit is one of its ancestors: the run would go back.
	SupersededBy string `json:"supersededBy,omitempty"`
}

// ErrCommitUnknown is a commit the checkout does not hold, or whose
// history it holds only in part.
var ErrCommitUnknown = errors.New("commit not in the checkout")

// CommitHistory orders commits of the checkout's history.
type CommitHistory interface {
	// Precedes reports whether a is an ancestor of b other than b itself;
	// ErrCommitUnknown when the checkout cannot tell.
	Precedes(a, b string) (bool, error)
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
// one. It refuses nothing for being another plan: the gate applies only
// the approved digest, and says MERGE_PLAN_STALE with what changed when
// the plan is another. It refuses a merged commit that comes before the
// one the environment applied after its last merge (MERGE_SUPERSEDED):
// runs of two merges may start, or be re-run, in any order, and the later
// of them must not take the environment back.
type MergeCheck struct {
	Evidence EvidenceReader
	History  CommitHistory
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
	if s.Evidence == nil || s.History == nil {
		return Result{}, Errorf(InternalError, "the merge check of %s has no evidence or history to read", env)
	}
	events, err := s.Evidence.Chain(ctx, st.Contract.ID)
	if err != nil {
		return Result{}, err
	}
	rec := MergeRecord{Environment: env}
	if !env.Autonomous() {
		rec = FindApprovedPlan(events, env, st.Change.ID, st.PullRequest)
	}
	rec.Commit, rec.Change = st.Commit, st.Change.ID
	if rec.ApprovedPlan != "" && rec.ApprovedChange != rec.Change {
		rec.Changed = changedParts(approvedChangeRecord(events, rec.ApprovedChange), st.Change)
	}
	st.Merge = &rec
	if res, err := s.superseded(events, &rec); err != nil || res != nil {
		if res != nil {
			return *res, nil
		}
		return Result{}, err
	}
	if env.Autonomous() {
		return Result{Verdict: Pass, Summary: fmt.Sprintf("%s is autonomous: nothing was approved to compare with; the merged commit %s is applied", env, ShortDigest(rec.Commit)), Event: EventMergeChecked, Data: rec}, nil
	}
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
		if before := approvedBeforeLastApply(events, env, rec.Change); before != "" {
			summary = fmt.Sprintf("plan %s of this change was approved in %s before it last applied another (a merge ahead of this one), and counts no more: the merged commit is planned against what runs now, for approval", ShortDigest(before), env)
		}
	case rec.Same():
		summary = fmt.Sprintf("the merged commit %s is change %s, approved as plan %s (commit %s)", ShortDigest(rec.Commit), ShortDigest(rec.Change), ShortDigest(rec.ApprovedPlan), ShortDigest(rec.ApprovedCommit))
	default:
		summary = fmt.Sprintf("the merged commit %s is not the approved change %s: %s changed", ShortDigest(rec.Commit), ShortDigest(rec.ApprovedChange), strings.Join(rec.Changed, ", "))
	}
	return Result{Verdict: Pass, Summary: summary, Event: EventMergeChecked, Data: rec}, nil
}

// superseded refuses the merged commit when it comes before the one the
// environment applied after its last merge; nil when it does not.
func (s *MergeCheck) superseded(events []Event, rec *MergeRecord) (*Result, error) {
	applied := LastMergedApplied(events, rec.Environment)
	if applied == "" || strings.EqualFold(applied, rec.Commit) {
		return nil, nil
	}
	// The usual order first: the merged commit comes after the applied
	// one, which a walk from it finds soon; the other way round the walk
	// goes through all of the applied commit's history.
	after, err := s.History.Precedes(applied, rec.Commit)
	if err == nil && after {
		return nil, nil
	}
	var older bool
	if err == nil {
		older, err = s.History.Precedes(rec.Commit, applied)
	}
	if errors.Is(err, ErrCommitUnknown) {
		return nil, Errorf(MergeOrderUnknown, "%s applied the merged commit %s last, and the checkout cannot tell whether %s comes before it (%w): fetch the default branch's history (actions/checkout fetch-depth: 0); nothing was planned or applied", rec.Environment, ShortDigest(applied), ShortDigest(rec.Commit), err)
	}
	if err != nil {
		return nil, Errorf(InternalError, "reading the order of commits %s and %s: %w", ShortDigest(rec.Commit), ShortDigest(applied), err)
	}
	if !older {
		return nil, nil
	}
	rec.SupersededBy = applied
	msg := fmt.Sprintf("the merged commit %s comes before %s, which %s applied after a later merge: applying it would take %s back, so nothing is planned or applied (to return %s to an earlier change, use nova rollback)", ShortDigest(rec.Commit), ShortDigest(applied), rec.Environment, rec.Environment, rec.Environment)
	return &Result{Verdict: Fail, Summary: msg, Findings: []Finding{{Reason: MergeSuperseded, Message: msg}}, Event: EventMergeChecked, Data: *rec}, nil
}

// LastMergedApplied is the merged commit of env's latest apply made by a
// run on a merged commit (one that recorded nova.merge.checked before
// completing its apply); empty when there is none.
func LastMergedApplied(events []Event, env Environment) string {
	merged := map[string]string{}
	var last string
	for _, e := range events {
		if Environment(e.Environment) != env {
			continue
		}
		switch e.Type {
		case EventMergeChecked:
			var m MergeRecord
			if DecodeEventData(e, &m) == nil && m.Commit != "" {
				merged[e.RunID] = m.Commit
			}
		case EventApplyCompleted:
			if c, ok := merged[e.RunID]; ok {
				last = c
			}
		}
	}
	return last
}

// QueueCheck is the stage of `nova run --merge-queue`, on a merge queue's
// commit (GitHub's merge_group): the commit the queue would merge is
// compared with the change approved in the environment on the pull
// request, as the merged run will compare it. When the queue's commit is
// another change (a pull request ahead in the queue changed the contract,
// the stack, a module or the engine), the merged run would only wait for a
// new approval, so the check fails with MERGE_PLAN_STALE, naming what
// moved, and the queue drops the entry before it merges. It reads the
// evidence and decides nothing: the run that applies after the merge
// checks everything again, from the default branch's workflow.
type QueueCheck struct {
	Evidence EvidenceReader
}

var _ Stage = (*QueueCheck)(nil)

// Name implements Stage.
func (*QueueCheck) Name() string { return "merge-queue" }

// Run implements Stage.
func (s *QueueCheck) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil || st.Change == nil {
		return Result{}, Errorf(InternalError, "merge queue check reached without an identified change")
	}
	env := st.Contract.Environment
	if env.Autonomous() {
		return Result{Verdict: Pass, Summary: fmt.Sprintf("%s is autonomous: it applies what merges, nothing was approved to compare with", env)}, nil
	}
	if s.Evidence == nil {
		return Result{}, Errorf(InternalError, "the merge queue check of %s has no evidence to read the approved plan from", env)
	}
	events, err := s.Evidence.Chain(ctx, st.Contract.ID)
	if err != nil {
		return Result{}, err
	}
	rec, pr := findApprovedPlan(events, env, st.Change.ID, st.PullRequest)
	rec.Commit, rec.Change = st.Commit, st.Change.ID
	ofThis := "since it last applied"
	if st.PullRequest != 0 {
		ofThis = fmt.Sprintf("for pull request #%d since it last applied", st.PullRequest)
	}
	switch {
	case rec.Same():
		return Result{Verdict: Pass, Summary: fmt.Sprintf("the queue's commit %s is change %s, approved in %s as plan %s: once merged, that plan is applied if it plans the same", ShortDigest(rec.Commit), ShortDigest(rec.Change), env, ShortDigest(rec.ApprovedPlan)), Event: EventMergeChecked, Data: rec}, nil
	case rec.ApprovedPlan == "" || (st.PullRequest != 0 && pr != st.PullRequest):
		return Result{Verdict: Pass, Summary: fmt.Sprintf("nothing was approved in %s %s: once merged, the commit is planned there and waits for approval", env, ofThis)}, nil
	}
	rec.Changed = changedParts(approvedChangeRecord(events, rec.ApprovedChange), st.Change)
	what := strings.Join(rec.Changed, ", ")
	msg := fmt.Sprintf("the merge queue's commit %s is not what was approved in %s: %s changed after plan %s (change %s, now %s) was approved; merged, it would wait for a new approval: bring the pull request up to date with what merges before it and have it approved again",
		ShortDigest(rec.Commit), env, what, ShortDigest(rec.ApprovedPlan), ShortDigest(rec.ApprovedChange), ShortDigest(rec.Change))
	return Result{Verdict: Fail, Summary: msg, Findings: []Finding{{Reason: MergePlanStale, Message: msg}}, Event: EventMergeChecked, Data: rec}, nil
}

// FindApprovedPlan is the plan of env approved since env last applied (a
// destroy's plans aside) that the merge is compared with: the one of
// change whose approval was recorded last, else, when no plan of change
// was approved, the one approved last of pull request pr (0: of any),
// what the merge then differs from. Another pull request's approved plan
// never stands in for this one's. Its Commit and Change are the caller's
// to fill in.
func FindApprovedPlan(events []Event, env Environment, change string, pr int64) MergeRecord {
	rec, _ := findApprovedPlan(events, env, change, pr)
	return rec
}

// findApprovedPlan is FindApprovedPlan, with the pull request the plan was
// planned for.
func findApprovedPlan(events []Event, env Environment, change string, pr int64) (MergeRecord, int64) {
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
		return MergeRecord{Environment: env}, 0
	}
	p := plans[approved]
	return MergeRecord{Environment: env, ApprovedPlan: p.Digest, ApprovedCommit: p.Commit, ApprovedChange: p.Change}, p.PullRequest
}

// approvedBeforeLastApply is the plan of change approved last in env up
// to its latest apply; empty when none was.
func approvedBeforeLastApply(events []Event, env Environment, change string) string {
	after := approvedAfter(SummarizeGate(events), env)
	plans := map[string]bool{}
	var found string
	for _, e := range events {
		if e.Seq > after {
			break
		}
		switch e.Type {
		case EventPlanCreated:
			var p PlanRecord
			if Environment(e.Environment) == env && DecodeEventData(e, &p) == nil && p.Change == change && !p.Operation.IsDestroy() {
				plans[p.Digest] = true
			}
		case EventApprovalRecorded:
			var a ApprovalRecord
			if DecodeEventData(e, &a) == nil && a.Environment == env && plans[a.PlanDigest] {
				found = a.PlanDigest
			}
		}
	}
	return found
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

// MergedPullRequest ends a pull request's run (`--until-merge`) once the
// forge says the pull request is merged: what it merged is the merge
// workflow's (`nova run --merged`), and its head is history. A run on a
// merged pull request, started by a `/nova approve` comment on it, would
// otherwise plan the head again, in dev apply it over the merge, and put
// its plan on show for the pull request in its turn: re-run, the merged
// run's plan would be new again, and the comment approving it, made
// before, would not count. The caller asks the forge, and adds the stage
// only for a merged pull request.
type MergedPullRequest struct {
	PullRequest int64
}

var _ Stage = MergedPullRequest{}

// Name implements Stage.
func (MergedPullRequest) Name() string { return "merged" }

// Run implements Stage.
func (s MergedPullRequest) Run(context.Context, *State) (Result, error) {
	return Result{Verdict: Pass, Done: true, Summary: fmt.Sprintf("pull request #%d is merged: the merge workflow plans and applies its merged commit (nova run --merged), and imports the approvals commented here when it runs again; nothing is planned for its head", s.PullRequest)}, nil
}
