package audit

import (
	"encoding/json"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nova-platform/nova/runner"
)

// Record is one verified event and the evidence commit that added it: the
// two things every row of every table carries, so any row can be traced
// back to its signed file and checked again.
type Record struct {
	Event  runner.Event
	Commit string
}

// Drift event types, recorded by the drift check; handled here whatever
// package writes them.
const (
	eventDriftDetected = "nova.drift.detected"
	eventDriftClear    = "nova.drift.clear"
)

// Apply outcomes as the applies table names them.
const (
	ApplyApplied       = "applied"
	ApplyNoChanges     = "no-changes"
	ApplyFailed        = "failed"
	ApplyIndeterminate = "indeterminate"
)

// The fact tables. Column names are snake_case and stable: a BI tool's
// model is built on them. Each field's desc is its description in the
// table's JSON Schema (docs/export/<table>.schema.json), generated from
// these types.

// RunRow is one run: every event one execution of nova recorded for one
// contract.
type RunRow struct {
	RunID          string     `json:"run_id" desc:"The run's id (runid of its events)."`
	ContractID     string     `json:"contract_id" desc:"The contract the run was about (_none before one was known)."`
	Environment    string     `json:"environment" desc:"dev, qa, prod or dr; empty when the run never read a contract."`
	Kind           string     `json:"kind" desc:"pipeline (validate … apply), approval (nova approve/reject), resolution (nova evidence resolve) or other."`
	StartedAt      time.Time  `json:"started_at" desc:"Time of the run's first event."`
	EndedAt        time.Time  `json:"ended_at" desc:"Time of the run's last event."`
	Verdict        string     `json:"verdict" desc:"pass, fail, error or awaiting_approval: how the run ended."`
	Reason         string     `json:"reason" desc:"The reason code the run stopped with, empty on pass."`
	LastStage      string     `json:"last_stage" desc:"The last stage that recorded an event."`
	ContractDigest string     `json:"contract_digest" desc:"sha256 of the contract the run validated: one version of the contract across environments."`
	PlanDigest     string     `json:"plan_digest" desc:"The digest of the plan the run made or loaded, if any."`
	Commit         string     `json:"commit" desc:"The consumer commit that plan is bound to, empty when unknown (outside a git checkout)."`
	Change         string     `json:"change" desc:"The change that plan deploys (nova.change.identified: contract, stack and modules, engine), empty before changes were identified."`
	PlannedAt      *time.Time `json:"planned_at" desc:"When the run recorded nova.plan.created, null if it made no plan."`
	EventCount     int64      `json:"event_count" desc:"How many events the run recorded for this contract."`
	EventID        string     `json:"event_id" desc:"Id of the run's last event."`
	EvidenceCommit string     `json:"evidence_commit" desc:"The evidence commit that added the run's last event."`
}

// StageResultRow is one stage's recorded result.
type StageResultRow struct {
	EventID        string    `json:"event_id" desc:"Id of the stage's event."`
	EvidenceCommit string    `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string    `json:"run_id" desc:"The run the stage belongs to."`
	ContractID     string    `json:"contract_id" desc:"The contract."`
	Environment    string    `json:"environment" desc:"dev, qa, prod or dr."`
	Time           time.Time `json:"time" desc:"When the event was recorded."`
	EventType      string    `json:"event_type" desc:"The event's type (nova.run.failed for any failed stage)."`
	Stage          string    `json:"stage" desc:"schema, policy, nfr, confidence, plan, plan-policy, plan-confidence, bundle, approvals, gate or apply."`
	Verdict        string    `json:"verdict" desc:"pass, fail, error or awaiting_approval."`
	Summary        string    `json:"summary" desc:"The stage's one-line summary."`
	DurationMs     int64     `json:"duration_ms" desc:"How long the stage ran."`
	Reason         string    `json:"reason" desc:"The reason code of the stage's first finding, empty when it has none."`
	FindingCount   int64     `json:"finding_count" desc:"How many findings the stage reported."`
	PCRCount       int64     `json:"pcr_count" desc:"How many policy check results the stage recorded."`
}

// PCRRow is one policy check result (PolicyCheckResult).
type PCRRow struct {
	EventID        string    `json:"event_id" desc:"Id of the stage event that recorded the result."`
	EvidenceCommit string    `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string    `json:"run_id" desc:"The run."`
	ContractID     string    `json:"contract_id" desc:"The contract."`
	Environment    string    `json:"environment" desc:"dev, qa, prod or dr."`
	Time           time.Time `json:"time" desc:"When the event was recorded."`
	Stage          string    `json:"stage" desc:"The stage that evaluated the rule (policy, nfr, plan-policy)."`
	Engine         string    `json:"engine" desc:"rego, checkov, kyverno, nfr or plan."`
	RuleID         string    `json:"rule_id" desc:"The rule's id."`
	Severity       string    `json:"severity" desc:"critical, high, medium, low or info."`
	Result         string    `json:"result" desc:"pass, fail, skipped or error."`
	Message        string    `json:"message" desc:"What the rule found."`
	ResourceRef    string    `json:"resource_ref" desc:"What the result is about (contract, plan, a resource address)."`
	EvaluatedAt    time.Time `json:"evaluated_at" desc:"When the engine evaluated the rule."`
}

// ConfidenceRow is one input of one confidence signal.
type ConfidenceRow struct {
	EventID        string    `json:"event_id" desc:"Id of the nova.confidence.computed event."`
	EvidenceCommit string    `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string    `json:"run_id" desc:"The run."`
	ContractID     string    `json:"contract_id" desc:"The contract."`
	Environment    string    `json:"environment" desc:"dev, qa, prod or dr."`
	Time           time.Time `json:"time" desc:"When the signal was computed."`
	Phase          string    `json:"phase" desc:"pre-plan or post-plan."`
	Score          float64   `json:"score" desc:"The signal's score, 0 to 1."`
	Band           string    `json:"band" desc:"pass, fail or blocked."`
	Threshold      float64   `json:"threshold" desc:"The environment's frozen threshold."`
	Input          string    `json:"input" desc:"schema, policy, nfr, tests, cost or provenance."`
	Value          float64   `json:"value" desc:"The input's value, 0 to 1."`
	Weight         float64   `json:"weight" desc:"The input's weight in the score."`
	Contribution   float64   `json:"contribution" desc:"value × weight."`
	Explanation    string    `json:"explanation" desc:"Why the input has its value."`
}

// DecisionRow is one automated decision and what became of it.
type DecisionRow struct {
	EventID        string     `json:"event_id" desc:"Id of the nova.ai.decision.made event."`
	EvidenceCommit string     `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string     `json:"run_id" desc:"The run that decided."`
	ContractID     string     `json:"contract_id" desc:"The contract."`
	Environment    string     `json:"environment" desc:"dev, qa, prod or dr."`
	Time           time.Time  `json:"time" desc:"When the decision was made."`
	DecisionID     string     `json:"decision_id" desc:"The decision's own id."`
	Phase          string     `json:"phase" desc:"pre-plan or post-plan."`
	ChosenAction   string     `json:"chosen_action" desc:"proceed, halt or block."`
	HumanOverride  bool       `json:"human_override" desc:"Whether a human overrode the decision."`
	Score          float64    `json:"score" desc:"The confidence score the decision was made on."`
	Band           string     `json:"band" desc:"pass, fail or blocked."`
	Threshold      float64    `json:"threshold" desc:"The environment's threshold."`
	Outcome        string     `json:"outcome" desc:"applied, rejected, failed, indeterminate (from the latest nova.decision.outcome), or pending."`
	OutcomeAt      *time.Time `json:"outcome_at" desc:"When the outcome was recorded, null while pending."`
	OutcomeEventID string     `json:"outcome_event_id" desc:"Id of the nova.decision.outcome event, empty while pending."`
	SettledBy      string     `json:"settled_by" desc:"Id of the event the outcome was read from (apply, failure, rejection, resolution)."`
	OutcomeReason  string     `json:"outcome_reason" desc:"The reason code that came with the outcome, if any."`
}

// ApprovalRow is one human decision on a plan: an approval, a rejection,
// or an approval the gate refused (separation of duties).
type ApprovalRow struct {
	EventID        string     `json:"event_id" desc:"Id of the nova.approval.recorded, .rejected or .refused event."`
	EvidenceCommit string     `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string     `json:"run_id" desc:"The run that recorded it."`
	ContractID     string     `json:"contract_id" desc:"The contract."`
	Environment    string     `json:"environment" desc:"qa, prod or dr."`
	Decision       string     `json:"decision" desc:"approved, rejected or refused (an approval the gate did not accept)."`
	Approver       string     `json:"approver" desc:"Who decided (a forge login or a local approver)."`
	Group          string     `json:"group" desc:"The approver group the approver was found in."`
	PlanDigest     string     `json:"plan_digest" desc:"The plan the decision is bound to."`
	Source         string     `json:"source" desc:"Where the decision was found (github-environment, github-review, gitea-comment, local …)."`
	SourceRef      string     `json:"source_ref" desc:"The decision's id in its source."`
	Reason         string     `json:"reason" desc:"A rejection's reason, or a refusal's reason code."`
	RecordedAt     time.Time  `json:"recorded_at" desc:"When Nova recorded it."`
	DecidedAt      time.Time  `json:"decided_at" desc:"When the approver decided (the source's time, else recorded_at)."`
	RequestedAt    *time.Time `json:"requested_at" desc:"When approval of this plan was first requested, null if never."`
	WaitSeconds    *float64   `json:"wait_seconds" desc:"decided_at − requested_at in seconds, 0 when the decision came first; null without a request."`
}

// ApplyRow is one authorized apply and how it ended.
type ApplyRow struct {
	EventID           string     `json:"event_id" desc:"Id of the nova.apply.authorized event."`
	EvidenceCommit    string     `json:"evidence_commit" desc:"The evidence commit that added the authorization."`
	RunID             string     `json:"run_id" desc:"The run that authorized and applied."`
	ContractID        string     `json:"contract_id" desc:"The contract."`
	Environment       string     `json:"environment" desc:"dev, qa, prod or dr."`
	PlanDigest        string     `json:"plan_digest" desc:"The plan authorized."`
	ContractDigest    string     `json:"contract_digest" desc:"The contract version the run validated."`
	Commit            string     `json:"commit" desc:"The consumer commit the plan is bound to, empty when unknown."`
	Change            string     `json:"change" desc:"The change the plan deploys (nova.change.identified: contract, stack and modules, engine), empty before changes were identified."`
	Approver          string     `json:"approver" desc:"Who authorized it (autonomous in dev)."`
	AuthorizedAt      time.Time  `json:"authorized_at" desc:"When the gate authorized it."`
	Outcome           string     `json:"outcome" desc:"applied, no-changes, failed or indeterminate (an interrupted apply, or one whose run recorded no outcome)."`
	Reason            string     `json:"reason" desc:"The reason code of a failed or indeterminate apply."`
	EndedAt           *time.Time `json:"ended_at" desc:"When the outcome was recorded, null if none was."`
	OutcomeEventID    string     `json:"outcome_event_id" desc:"Id of the event recording the outcome."`
	DurationSeconds   *float64   `json:"duration_seconds" desc:"ended_at − authorized_at in seconds."`
	Resolution        string     `json:"resolution" desc:"For an indeterminate apply: applied or not-applied once an operator resolved it, else empty."`
	ResolvedAt        *time.Time `json:"resolved_at" desc:"When it was resolved."`
	ResolvedBy        string     `json:"resolved_by" desc:"Who resolved it."`
	ResolutionEventID string     `json:"resolution_event_id" desc:"Id of the nova.apply.resolved event."`
	Operation         string     `json:"operation" desc:"apply (create and update), or destroy: the plan destroyed the environment's deployment (see the decommissions table)."`
	RollbackTo        string     `json:"rollback_to" desc:"For a rollback (nova rollback): the earlier change the environment returns to, else empty."`
	Supersedes        string     `json:"supersedes" desc:"For a rollback: the change the environment ran before it, which it supersedes."`
}

// Operations as the applies table names them.
const (
	OperationApply   = "apply"
	OperationDestroy = "destroy"
)

// DecommissionRow is one completed destroy: the environment no longer
// runs the contract.
type DecommissionRow struct {
	EventID        string    `json:"event_id" desc:"Id of the nova.destroy.completed event."`
	EvidenceCommit string    `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string    `json:"run_id" desc:"The run that destroyed."`
	ContractID     string    `json:"contract_id" desc:"The contract."`
	Environment    string    `json:"environment" desc:"dev, qa, prod or dr."`
	DestroyedAt    time.Time `json:"destroyed_at" desc:"When the destroy was recorded complete."`
	PlanDigest     string    `json:"plan_digest" desc:"The destroy plan applied."`
	Change         string    `json:"change" desc:"The change the destroy took away (the environment's last applied change), empty when unknown."`
	Approvers      string    `json:"approvers" desc:"Who approved the destroy, comma-separated (autonomous in dev)."`
	StateRemoved   bool      `json:"state_removed" desc:"Whether the state itself was removed (the local backend's file); otherwise the backend keeps it, empty of resources."`
}

// DriftRow is one drift check's finding.
type DriftRow struct {
	EventID        string    `json:"event_id" desc:"Id of the nova.drift.detected or nova.drift.clear event."`
	EvidenceCommit string    `json:"evidence_commit" desc:"The evidence commit that added the event."`
	RunID          string    `json:"run_id" desc:"The run."`
	ContractID     string    `json:"contract_id" desc:"The contract."`
	Environment    string    `json:"environment" desc:"dev, qa, prod or dr."`
	Time           time.Time `json:"time" desc:"When drift was checked."`
	State          string    `json:"state" desc:"detected or clear."`
	ResourceCount  *int64    `json:"resource_count" desc:"How many resources drifted, null when the event does not say."`
	Summary        string    `json:"summary" desc:"The check's summary."`
	Reasons        string    `json:"reasons" desc:"Reason codes the event carries, separated by ;."`
}

// Tables are the fact tables of a set of verified events.
type Tables struct {
	Runs         []RunRow
	StageResults []StageResultRow
	PCRs         []PCRRow
	Confidence   []ConfidenceRow
	Decisions    []DecisionRow
	Approvals    []ApprovalRow
	Applies      []ApplyRow
	Drift        []DriftRow
	BreakGlass   []BreakGlassRow
	// Decommissions are the completed destroys.
	Decommissions []DecommissionRow
}

// Table is one fact table as export writes it.
type Table struct {
	Name        string
	Description string
	Rows        any // a slice of one of the row types
}

// List returns the tables in export order, with their file names.
func (t *Tables) List() []Table {
	return []Table{
		{"runs", "One row per run of nova for a contract.", t.Runs},
		{"stage_results", "One row per recorded stage result.", t.StageResults},
		{"pcrs", "One row per policy check result.", t.PCRs},
		{"confidence", "One row per input of each confidence signal.", t.Confidence},
		{"decisions", "One row per automated decision, with its outcome.", t.Decisions},
		{"approvals", "One row per approval, rejection or refused approval.", t.Approvals},
		{"applies", "One row per authorized apply, with its outcome and resolution.", t.Applies},
		{"drift", "One row per drift check finding.", t.Drift},
		{"break_glass", "One row per break-glass request, from request to post-incident review.", t.BreakGlass},
		{"decommissions", "One row per completed destroy of a contract's environment.", t.Decommissions},
	}
}

// ByContract splits the tables into one set per contract, in one pass:
// measuring each contract over the whole tables would grow with contracts
// times rows.
func (t *Tables) ByContract() map[string]*Tables {
	out := map[string]*Tables{}
	of := func(c string) *Tables {
		if out[c] == nil {
			out[c] = &Tables{}
		}
		return out[c]
	}
	for _, r := range t.Runs {
		of(r.ContractID).Runs = append(of(r.ContractID).Runs, r)
	}
	for _, r := range t.StageResults {
		of(contractOrNone(r.ContractID)).StageResults = append(of(contractOrNone(r.ContractID)).StageResults, r)
	}
	for _, r := range t.PCRs {
		of(contractOrNone(r.ContractID)).PCRs = append(of(contractOrNone(r.ContractID)).PCRs, r)
	}
	for _, r := range t.Confidence {
		of(contractOrNone(r.ContractID)).Confidence = append(of(contractOrNone(r.ContractID)).Confidence, r)
	}
	for _, r := range t.Decisions {
		of(contractOrNone(r.ContractID)).Decisions = append(of(contractOrNone(r.ContractID)).Decisions, r)
	}
	for _, r := range t.Approvals {
		of(contractOrNone(r.ContractID)).Approvals = append(of(contractOrNone(r.ContractID)).Approvals, r)
	}
	for _, r := range t.Applies {
		of(contractOrNone(r.ContractID)).Applies = append(of(contractOrNone(r.ContractID)).Applies, r)
	}
	for _, r := range t.BreakGlass {
		of(r.ContractID).BreakGlass = append(of(r.ContractID).BreakGlass, r)
	}
	for _, r := range t.Drift {
		of(contractOrNone(r.ContractID)).Drift = append(of(contractOrNone(r.ContractID)).Drift, r)
	}
	for _, r := range t.Decommissions {
		of(contractOrNone(r.ContractID)).Decommissions = append(of(contractOrNone(r.ContractID)).Decommissions, r)
	}
	return out
}

// Build derives the fact tables from verified records, each contract's
// events in chain order (as the evidence index holds them).
func Build(records []Record) *Tables {
	t := &Tables{}
	var chain []Record
	for i, r := range records {
		chain = append(chain, r)
		if i == len(records)-1 || records[i+1].Event.ContractID != r.Event.ContractID {
			t.addChain(chain)
			chain = chain[:0]
		}
	}
	return t
}

// chainState is what reading one contract's chain keeps between events.
type chainState struct {
	runs      map[string]int // run id → index in t.Runs
	decisions map[string]int // decision event id → index in t.Decisions
	// applies maps "run env" to the run's open apply row.
	applies map[string]int
	// requested is the first approval request per "env digest".
	requested map[string]time.Time
}

func (t *Tables) addChain(chain []Record) {
	s := &chainState{runs: map[string]int{}, decisions: map[string]int{}, applies: map[string]int{}, requested: map[string]time.Time{}}
	for _, r := range chain {
		t.addEvent(s, r)
	}
	t.BreakGlass = append(t.BreakGlass, breakGlassRows(chain)...)
	// An authorization whose run recorded no outcome: nobody knows how far
	// the apply got, as the gate sees it.
	for _, i := range s.applies {
		if t.Applies[i].Outcome == "" {
			t.Applies[i].Outcome = ApplyIndeterminate
		}
	}
}

func (t *Tables) addEvent(s *chainState, r Record) {
	e := r.Event
	t.run(s, r)
	var stage runner.StageEventData
	isStage := json.Unmarshal(e.Data, &stage) == nil && stage.Stage != ""
	if isStage {
		row := StageResultRow{
			EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment, Time: e.Time,
			EventType: e.Type, Stage: stage.Stage, Verdict: string(stage.Verdict), Summary: stage.Summary, DurationMs: stage.DurationMs,
			FindingCount: int64(len(stage.Findings)), PCRCount: int64(len(stage.PCRs)),
		}
		if len(stage.Findings) > 0 {
			row.Reason = string(stage.Findings[0].Reason)
		}
		t.StageResults = append(t.StageResults, row)
		for _, p := range stage.PCRs {
			t.PCRs = append(t.PCRs, PCRRow{
				EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment, Time: e.Time,
				Stage: stage.Stage, Engine: p.Engine, RuleID: p.RuleID, Severity: string(p.Severity), Result: string(p.Result),
				Message: p.Message, ResourceRef: p.ResourceRef, EvaluatedAt: p.EvaluatedAt.UTC(),
			})
		}
	}
	switch e.Type {
	case runner.EventConfidenceComputed:
		var c runner.Confidence
		if runner.DecodeEventData(e, &c) == nil {
			for _, name := range sortedInputs(c.PerInput) {
				in := c.PerInput[name]
				t.Confidence = append(t.Confidence, ConfidenceRow{
					EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment, Time: e.Time,
					Phase: string(c.Phase), Score: c.Score, Band: string(c.Band), Threshold: c.Threshold,
					Input: name, Value: in.Value, Weight: in.Weight, Contribution: in.Contribution, Explanation: in.Explanation,
				})
			}
		}
	case runner.EventDecisionMade:
		var d struct {
			DecisionID    string            `json:"decisionId"`
			Phase         string            `json:"phase"`
			ChosenAction  string            `json:"chosenAction"`
			HumanOverride bool              `json:"humanOverride"`
			Confidence    runner.Confidence `json:"confidence"`
		}
		_ = json.Unmarshal(e.Data, &d)
		s.decisions[e.ID] = len(t.Decisions)
		t.Decisions = append(t.Decisions, DecisionRow{
			EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment, Time: e.Time,
			DecisionID: d.DecisionID, Phase: d.Phase, ChosenAction: d.ChosenAction, HumanOverride: d.HumanOverride,
			Score: d.Confidence.Score, Band: string(d.Confidence.Band), Threshold: d.Confidence.Threshold, Outcome: "pending",
		})
	case runner.EventDecisionOutcome:
		var o runner.OutcomeRecord
		if json.Unmarshal(e.Data, &o) == nil {
			if i, ok := s.decisions[o.Decision]; ok {
				d := &t.Decisions[i]
				d.Outcome, d.OutcomeAt, d.OutcomeEventID, d.SettledBy, d.OutcomeReason = string(o.Outcome), timePtr(e.Time), e.ID, o.SettledBy, string(o.Reason)
			}
		}
	case runner.EventApprovalRequested:
		var q runner.RequestRecord
		if runner.DecodeEventData(e, &q) == nil {
			key := e.Environment + " " + q.PlanDigest
			if _, ok := s.requested[key]; !ok {
				s.requested[key] = e.Time
			}
		}
	case runner.EventApprovalRecorded, runner.EventApprovalRejected:
		var a runner.ApprovalRecord
		if runner.DecodeEventData(e, &a) == nil {
			row := ApprovalRow{
				EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment,
				Decision: "approved", Approver: a.Approver, Group: a.Group, PlanDigest: a.PlanDigest, Source: a.Source, SourceRef: a.SourceRef,
				Reason: a.Reason, RecordedAt: e.Time, DecidedAt: e.Time,
			}
			if e.Type == runner.EventApprovalRejected {
				row.Decision = "rejected"
			}
			if a.At != nil && !a.At.IsZero() {
				row.DecidedAt = a.At.UTC()
			}
			if req, ok := s.requested[e.Environment+" "+a.PlanDigest]; ok {
				// An approver can decide before the gate asks (while the
				// plan job still runs), and a claim's time has whole
				// seconds only: neither is a negative wait.
				row.RequestedAt = timePtr(req)
				row.WaitSeconds = floatPtr(max(0, row.DecidedAt.Sub(req).Seconds()))
			}
			t.Approvals = append(t.Approvals, row)
		}
	case runner.EventApprovalRefused:
		var f runner.RefusalRecord
		if runner.DecodeEventData(e, &f) == nil {
			for _, who := range slices.Compact(slices.Sorted(slices.Values(f.Approvers))) {
				t.Approvals = append(t.Approvals, ApprovalRow{
					EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment,
					Decision: "refused", Approver: who, PlanDigest: f.PlanDigest, Reason: string(f.Reason), RecordedAt: e.Time, DecidedAt: e.Time,
				})
			}
		}
	case runner.EventApplyAuthorized:
		var a runner.Authorization
		if runner.DecodeEventData(e, &a) == nil {
			s.applies[e.RunID+" "+e.Environment] = len(t.Applies)
			op := OperationApply
			if a.Operation.IsDestroy() {
				op = OperationDestroy
			}
			t.Applies = append(t.Applies, ApplyRow{
				EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment,
				PlanDigest: a.Digest, ContractDigest: t.Runs[s.runs[e.RunID]].ContractDigest, Commit: t.Runs[s.runs[e.RunID]].Commit, Change: a.Change, Approver: a.Approver, AuthorizedAt: e.Time,
				Operation: op,
			})
			if len(a.Approvers) > 0 {
				t.Applies[len(t.Applies)-1].Approver = strings.Join(a.Approvers, ", ")
			}
			if r := a.Rollback; r != nil {
				t.Applies[len(t.Applies)-1].RollbackTo, t.Applies[len(t.Applies)-1].Supersedes = r.Target, r.Supersedes
			}
		}
	case runner.EventApplyCompleted:
		var c struct {
			Applied bool `json:"applied"`
		}
		if a := t.openApply(s, e); a != nil && runner.DecodeEventData(e, &c) == nil {
			a.Outcome = ApplyApplied
			if !c.Applied {
				a.Outcome = ApplyNoChanges
			}
			a.ended(e)
		}
	case runner.EventApplyIndeterminate:
		if a := t.openApply(s, e); a != nil {
			a.Outcome, a.Reason = ApplyIndeterminate, string(runner.ApplyIndeterminate)
			a.ended(e)
		}
	case runner.EventRunFailed:
		if a := t.openApply(s, e); a != nil && stage.Stage == "apply" {
			a.Outcome = ApplyFailed
			if len(stage.Findings) > 0 {
				a.Reason = string(stage.Findings[0].Reason)
			}
			if a.Reason == string(runner.ApplyIndeterminate) {
				a.Outcome = ApplyIndeterminate
			}
			a.ended(e)
		}
	case runner.EventApplyResolved:
		var res runner.Resolution
		if runner.DecodeEventData(e, &res) == nil {
			if a := t.resolvedApply(e.Environment, e.ContractID, res.Resolves); a != nil {
				a.Resolution, a.ResolvedAt, a.ResolvedBy, a.ResolutionEventID = res.Outcome, timePtr(e.Time), res.ResolvedBy, e.ID
			}
		}
	case eventDriftDetected, eventDriftClear:
		t.Drift = append(t.Drift, driftRow(r))
	case runner.EventDestroyCompleted:
		var d runner.DestroyedRecord
		if runner.DecodeEventData(e, &d) == nil {
			row := DecommissionRow{EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment,
				DestroyedAt: e.Time, PlanDigest: d.Digest, Change: d.Change, StateRemoved: d.StateRemoved}
			if i, ok := s.applies[e.RunID+" "+e.Environment]; ok {
				row.Approvers = t.Applies[i].Approver
			}
			t.Decommissions = append(t.Decommissions, row)
		}
	}
}

// run adds e to its run's row.
func (t *Tables) run(s *chainState, r Record) {
	e := r.Event
	i, ok := s.runs[e.RunID]
	if !ok {
		i = len(t.Runs)
		s.runs[e.RunID] = i
		t.Runs = append(t.Runs, RunRow{RunID: e.RunID, ContractID: contractOrNone(e.ContractID), StartedAt: e.Time, Kind: "other", Verdict: string(runner.Pass)})
	}
	run := &t.Runs[i]
	run.EndedAt, run.EventID, run.EvidenceCommit = e.Time, e.ID, r.Commit
	run.EventCount++
	if run.Environment == "" {
		run.Environment = e.Environment
	}
	var stage runner.StageEventData
	if json.Unmarshal(e.Data, &stage) == nil && stage.Stage != "" {
		run.LastStage = stage.Stage
		switch {
		case e.Type == runner.EventRunFailed:
			run.Verdict = string(stage.Verdict)
			if len(stage.Findings) > 0 {
				run.Reason = string(stage.Findings[0].Reason)
			}
		case stage.Verdict == runner.AwaitingApproval:
			run.Verdict = string(runner.AwaitingApproval)
			if len(stage.Findings) > 0 {
				run.Reason = string(stage.Findings[0].Reason)
			}
		}
	}
	switch e.Type {
	case runner.EventContractValidated:
		run.Kind = "pipeline"
		var v struct {
			ContractDigest string `json:"contractDigest"`
		}
		if runner.DecodeEventData(e, &v) == nil {
			run.ContractDigest = v.ContractDigest
		}
	case runner.EventPlanCreated:
		var p runner.PlanRecord
		if runner.DecodeEventData(e, &p) == nil {
			run.PlanDigest, run.Commit, run.Change, run.PlannedAt = p.Digest, p.Commit, p.Change, timePtr(e.Time)
		}
	case runner.EventPlanLoaded:
		// The bundle's manifest, as the bundle stage records it.
		var p struct {
			PlanDigest string `json:"planDigest"`
			Commit     string `json:"commit"`
		}
		if runner.DecodeEventData(e, &p) == nil && run.PlanDigest == "" {
			run.PlanDigest, run.Commit = p.PlanDigest, p.Commit
		}
	case runner.EventApprovalChecked, runner.EventApprovalRecorded, runner.EventApprovalRejected:
		if run.Kind == "other" {
			run.Kind = "approval"
		}
	case runner.EventApplyResolved:
		if run.Kind == "other" {
			run.Kind = "resolution"
		}
	}
}

// openApply is the apply row e's run authorized in e's environment and
// has not ended yet.
func (t *Tables) openApply(s *chainState, e runner.Event) *ApplyRow {
	i, ok := s.applies[e.RunID+" "+e.Environment]
	if !ok || t.Applies[i].EndedAt != nil {
		return nil
	}
	return &t.Applies[i]
}

// resolvedApply is the apply a resolution settles: the one whose
// authorization or indeterminate outcome it names, else the latest
// unresolved indeterminate apply of the environment.
func (t *Tables) resolvedApply(env, contract, resolves string) *ApplyRow {
	var latest *ApplyRow
	for i := len(t.Applies) - 1; i >= 0; i-- {
		a := &t.Applies[i]
		if a.ContractID != contract || a.Environment != env {
			continue
		}
		if a.EventID == resolves || a.OutcomeEventID == resolves {
			return a
		}
		if latest == nil && a.Resolution == "" && (a.Outcome == ApplyIndeterminate || a.Outcome == "") {
			latest = a
		}
	}
	return latest
}

func (a *ApplyRow) ended(e runner.Event) {
	a.EndedAt, a.OutcomeEventID = timePtr(e.Time), e.ID
	a.DurationSeconds = floatPtr(e.Time.Sub(a.AuthorizedAt).Seconds())
}

// driftRow reads a drift event leniently: the drift check's data may grow,
// and what it does not say is left null or empty.
func driftRow(r Record) DriftRow {
	e := r.Event
	row := DriftRow{EventID: e.ID, EvidenceCommit: r.Commit, RunID: e.RunID, ContractID: e.ContractID, Environment: e.Environment, Time: e.Time, State: "detected"}
	if e.Type == eventDriftClear {
		row.State = "clear"
	}
	var d struct {
		Summary     string            `json:"summary"`
		Resources   []json.RawMessage `json:"resources"`
		Drifted     []json.RawMessage `json:"drifted"`
		Count       *int64            `json:"count"`
		ReasonCodes []string          `json:"reasonCodes"`
		Findings    []runner.Finding  `json:"findings"`
	}
	var stage runner.StageEventData
	if json.Unmarshal(e.Data, &stage) == nil && stage.Stage != "" {
		row.Summary = stage.Summary
		for _, f := range stage.Findings {
			d.ReasonCodes = append(d.ReasonCodes, string(f.Reason))
		}
	}
	if runner.DecodeEventData(e, &d) == nil {
		if d.Summary != "" {
			row.Summary = d.Summary
		}
		switch {
		case d.Count != nil:
			row.ResourceCount = d.Count
		case d.Resources != nil:
			n := int64(len(d.Resources))
			row.ResourceCount = &n
		case d.Drifted != nil:
			n := int64(len(d.Drifted))
			row.ResourceCount = &n
		}
		for _, f := range d.Findings {
			d.ReasonCodes = append(d.ReasonCodes, string(f.Reason))
		}
	}
	row.Reasons = strings.Join(slices.Compact(slices.Sorted(slices.Values(d.ReasonCodes))), ";")
	return row
}

func sortedInputs(m map[string]runner.ConfidenceInput) []string {
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

func contractOrNone(id string) string {
	if id == "" {
		return "_none"
	}
	return id
}

func timePtr(t time.Time) *time.Time { t = t.UTC(); return &t }
func floatPtr(f float64) *float64    { return &f }
