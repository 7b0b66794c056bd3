package runner

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const digestD = "dddd1111bbbb2222cccc3333dddd4444eeee5555ffff6666aaaa7777bbbb8888"

// destroy plans digest as a destroy in env and runs the approvals stage
// and the gate, as `nova run --destroy` does; a pass completes the
// destroy.
func (w *world) destroy(env Environment, digest string, claims ...ApprovalClaim) (Outcome, *State) {
	w.t.Helper()
	st := &State{RunID: "destroy-" + string(env) + "-" + w.now.Format("0102T150405"), Contract: &Contract{ID: contractID, Environment: env},
		Plan: &Plan{Digest: digest, Operation: OperationDestroy}, Commit: "c0ffee", Operation: OperationDestroy}
	em := NewEmitter(w.rec, "urn:test", st.RunID, func() time.Time { return w.now })
	if _, err := em.Emit(w.t.Context(), EventPlanCreated, contractID, env, PlanRecord{Digest: digest, Operation: OperationDestroy}); err != nil {
		w.t.Fatal(err)
	}
	p := Pipeline{Events: em, Now: func() time.Time { return w.now }, Stages: []Stage{
		&ImportApprovals{Sources: []ApprovalSource{source(claims)}, Approvers: StaticApprovers{w.approvers}, Membership: w, Change: w, Claims: fakeClaims{}, Evidence: w},
		Gate{Evidence: w, Approvers: StaticApprovers{w.approvers}, Membership: w, Now: func() time.Time { return w.now }},
	}}
	out := p.Run(w.t.Context(), st)
	if out.Verdict == Pass {
		if _, err := em.Emit(w.t.Context(), EventApplyCompleted, contractID, env, map[string]any{"digest": digest, "applied": true, "operation": OperationDestroy}); err != nil {
			w.t.Fatal(err)
		}
	}
	w.now = w.now.Add(time.Minute)
	return out, st
}

func TestGateDestroyRules(t *testing.T) {
	tests := []struct {
		name string
		// config replaces the world's approver config when set.
		config string
		// qaApproved has qa-lead approve the contract in qa first.
		qaApproved bool
		// destroyed are the environments destroyed before, in order.
		destroyed []Environment
		env       Environment
		claims    []ApprovalClaim
		verdict   Verdict
		reason    Reason
		approvers []string
		// say is in the gate's message.
		say []string
	}{
		{name: "prod with one approver waits for a second", env: Prod,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1")},
			verdict: AwaitingApproval, reason: DestroyNeedsMoreApprovals, say: []string{"needs 2 distinct approvers", "only sre-oncall counts"}},
		{name: "the same approver twice counts once", env: Prod,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("sre-oncall", Prod, digestD, "r2")},
			verdict: AwaitingApproval, reason: DestroyNeedsMoreApprovals},
		{name: "the same approver in another case counts once", env: Prod,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("SRE-Oncall", Prod, digestD, "r2")},
			verdict: AwaitingApproval, reason: DestroyNeedsMoreApprovals},
		{name: "prod with two distinct approvers", env: Prod,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("sre-2", Prod, digestD, "r2")},
			verdict: Pass, approvers: []string{"sre-oncall", "sre-2"}},
		{name: "a team member counts as a distinct approver", env: Prod,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("sre-team-member", Prod, digestD, "r2")},
			verdict: Pass, approvers: []string{"sre-oncall", "sre-team-member"}},
		{name: "the qa approver does not count in prod", env: Prod, qaApproved: true,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("qa-lead", Prod, digestD, "r2")},
			verdict: AwaitingApproval, reason: DestroyNeedsMoreApprovals, say: []string{"qa-lead approved this contract in qa", "only sre-oncall counts"}},
		{name: "the qa approver alone is refused", env: Prod, qaApproved: true,
			claims:  []ApprovalClaim{claim("qa-lead", Prod, digestD, "r1")},
			verdict: AwaitingApproval, reason: SeparationOfDutiesViolation, say: []string{"separation of duties", "none counts yet"}},
		{name: "approvals of another plan do not count", env: Prod,
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("sre-2", Prod, digestA, "r2")},
			verdict: AwaitingApproval, reason: DestroyNeedsMoreApprovals},
		{name: "no approval at all", env: Prod,
			verdict: AwaitingApproval, reason: ApprovalRequired, say: []string{"needs 2 distinct approvers"}},
		{name: "qa waits while prod runs the contract", env: QA,
			claims:  []ApprovalClaim{claim("qa-lead", QA, digestD, "r1")},
			verdict: Fail, reason: DestroyOrderViolation, say: []string{"prod runs change"}},
		{name: "dev waits while qa runs the contract", env: Dev, destroyed: []Environment{Prod},
			verdict: Fail, reason: DestroyOrderViolation, say: []string{"qa runs change"}},
		{name: "qa needs one approver once prod is destroyed", env: QA, destroyed: []Environment{Prod},
			claims:  []ApprovalClaim{claim("qa-lead", QA, digestD, "r1")},
			verdict: Pass, approvers: []string{"qa-lead"}},
		{name: "dev is autonomous once qa is destroyed", env: Dev, destroyed: []Environment{Prod, QA},
			verdict: Pass},
		{name: "prod needs what the config says", env: Prod,
			config:  "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-oncall, sre-2, sre-3]}\ndestroyApprovals: {prod: 3}\n",
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1"), claim("sre-2", Prod, digestD, "r2")},
			verdict: AwaitingApproval, reason: DestroyNeedsMoreApprovals, say: []string{"needs 3 distinct approvers"}},
		{name: "prod may be lowered to one approver", env: Prod,
			config:  "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-oncall]}\ndestroyApprovals: {prod: 1}\n",
			claims:  []ApprovalClaim{claim("sre-oncall", Prod, digestD, "r1")},
			verdict: Pass, approvers: []string{"sre-oncall"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t)
			if tt.config != "" {
				cfg, err := ParseApprovers([]byte(tt.config))
				if err != nil {
					t.Fatal(err)
				}
				w.approvers = cfg
			}
			if tt.qaApproved {
				w.change = "change-2"
				w.applied(Dev, "change-2")
				if out, _ := w.run(QA, digestA, "", claim("qa-lead", QA, digestA, "qa")); out.Verdict != Pass {
					t.Fatalf("qa approval: %s %s", out.Verdict, out.Reason)
				}
			}
			for i, env := range tt.destroyed {
				if !w.decommission(env, i) {
					t.Fatalf("destroying %s first failed", env)
				}
			}
			start := len(w.rec.events)
			out, st := w.destroy(tt.env, digestD, tt.claims...)
			if out.Verdict != tt.verdict || (tt.reason != "" && out.Reason != tt.reason) {
				t.Fatalf("verdict %s %s, want %s %s\n%+v", out.Verdict, out.Reason, tt.verdict, tt.reason, out.Results[len(out.Results)-1].Findings)
			}
			last := out.Results[len(out.Results)-1]
			for _, s := range tt.say {
				if len(last.Findings) == 0 || !strings.Contains(last.Findings[0].Message, s) {
					t.Errorf("the gate's message does not say %q: %+v", s, last.Findings)
				}
			}
			if tt.verdict != Pass {
				if st.Authorization != nil {
					t.Errorf("authorized %+v", st.Authorization)
				}
				if countType(w.rec.events[start:], EventApplyAuthorized) != 0 {
					t.Error("an authorization was recorded")
				}
				return
			}
			a := st.Authorization
			if a == nil || a.Operation != OperationDestroy || !cmp.Equal(a.Approvers, tt.approvers) || len(a.Approvals) != len(tt.approvers) {
				t.Fatalf("authorization %+v, want a destroy approved by %v", a, tt.approvers)
			}
			if es := SummarizeGate(w.rec.events).Env(tt.env); es.LastApplied != nil || es.Destroyed == nil || len(es.Applied) != 0 {
				t.Errorf("after the destroy %s still counts as running the contract: %+v", tt.env, es)
			}
		})
	}
}

// decommission destroys env with approvals enough, the ith time.
func (w *world) decommission(env Environment, i int) bool {
	w.t.Helper()
	digest := strings.Repeat(string(rune('0'+i)), 64)
	claims := []ApprovalClaim{claim("sre-oncall", env, digest, "d1"), claim("sre-2", env, digest, "d2")}
	if env == QA {
		claims = []ApprovalClaim{claim("qa-2", env, digest, "d1")}
	}
	out, _ := w.destroy(env, digest, claims...)
	return out.Verdict == Pass
}

// TestGateRefusesAfterAnInterruptedDestroy: a destroy whose end nobody
// knows blocks the environment as an apply does, leaves it running the
// contract, and a resolution that finds it applied decommissions it.
func TestGateRefusesAfterAnInterruptedDestroy(t *testing.T) {
	w := newWorld(t)
	em := NewEmitter(w.rec, "urn:test", "destroy-killed", func() time.Time { return w.now })
	auth := Authorization{Digest: digestD, Environment: Prod, Approver: "sre-oncall", Approvers: []string{"sre-oncall", "sre-2"}, Operation: OperationDestroy, Change: w.change}
	for _, e := range []EventSpec{
		{EventApplyAuthorized, auth},
		{EventApplyIndeterminate, map[string]string{"digest": digestD, "cause": "killed", "reason": string(TerraformInterrupted)}},
	} {
		if _, err := em.Emit(t.Context(), e.Type, contractID, Prod, e.Data); err != nil {
			t.Fatal(err)
		}
	}
	out, st := w.destroy(Prod, digestB, claim("sre-oncall", Prod, digestB, "r1"), claim("sre-2", Prod, digestB, "r2"))
	if out.Verdict != Fail || out.Reason != ApplyIndeterminate || st.Authorization != nil {
		t.Fatalf("destroy after an interrupted one: %s %s", out.Verdict, out.Reason)
	}
	if out, _ := w.destroy(QA, digestB, claim("qa-lead", QA, digestB, "r3")); out.Reason != DestroyOrderViolation {
		t.Errorf("qa destroy while prod's destroy is unknown: %s %s", out.Verdict, out.Reason)
	}
	if es := SummarizeGate(w.rec.events).Env(Prod); es.LastApplied == nil || es.Destroyed != nil {
		t.Fatalf("an interrupted destroy counted as done: %+v", es)
	}
	res := NewEmitter(w.rec, "urn:test", "resolve", func() time.Time { return w.now })
	if _, err := res.Emit(t.Context(), EventApplyResolved, contractID, Prod, Resolution{Outcome: ResolvedApplied, ResolvedBy: "sre-oncall", Note: "state empty"}); err != nil {
		t.Fatal(err)
	}
	if es := SummarizeGate(w.rec.events).Env(Prod); es.LastApplied != nil || es.Destroyed == nil || es.Open != nil {
		t.Fatalf("a destroy resolved as applied still runs: %+v", es)
	}
}

func TestIdentifyDestroy(t *testing.T) {
	w := newWorld(t)
	for _, tt := range []struct {
		env     Environment
		done    bool
		reason  Reason
		receipt bool
	}{
		{env: Prod, receipt: true},
		{env: DR, done: true, reason: DestroyNothingApplied},
	} {
		st := &State{Contract: &Contract{ID: contractID, Environment: tt.env}, Target: &TargetStack{}, ContractContent: "c", Operation: OperationDestroy}
		res, err := (&IdentifyChange{Evidence: w}).Run(t.Context(), st)
		if err != nil {
			t.Fatal(err)
		}
		var rec DestroyRecord
		rec, _ = res.Data.(DestroyRecord)
		if res.Verdict != Pass || res.Done != tt.done || res.Event != EventDestroyIdentified || (rec.Receipt != "") != tt.receipt || rec.NothingApplied != tt.done {
			t.Errorf("%s: %+v", tt.env, res)
		}
		if tt.reason != "" && (len(res.Findings) != 1 || res.Findings[0].Reason != tt.reason) {
			t.Errorf("%s: findings %+v, want %s", tt.env, res.Findings, tt.reason)
		}
		if st.Change != nil {
			t.Errorf("%s: a destroy identified a change to deploy: %+v", tt.env, st.Change)
		}
		if tt.done && strings.Contains(res.Summary, "was destroyed") {
			t.Errorf("%s never ran the contract, and the destroy says it was destroyed: %s", tt.env, res.Summary)
		}
	}

	// Once destroyed, the environment's destroy does nothing, and says
	// which destroy took the change away: a forge's comment on it is
	// this summary.
	if !w.decommission(Prod, 0) {
		t.Fatal("destroying prod failed")
	}
	destroyed := SummarizeGate(w.rec.events).Env(Prod).Destroyed
	if destroyed == nil {
		t.Fatal("the gate summary shows no destroy of prod")
	}
	st := &State{Contract: &Contract{ID: contractID, Environment: Prod}, Target: &TargetStack{}, ContractContent: "c", Operation: OperationDestroy}
	res, err := (&IdentifyChange{Evidence: w}).Run(t.Context(), st)
	if err != nil {
		t.Fatal(err)
	}
	if !res.Done || len(res.Findings) != 1 || res.Findings[0].Reason != DestroyNothingApplied {
		t.Errorf("identifying prod's destroy after it completed: %+v", res)
	}
	if !strings.Contains(res.Summary, "was destroyed in prod") || !strings.Contains(res.Summary, destroyed.Event) {
		t.Errorf("identifying prod's destroy after it completed says %q, want that prod was destroyed by %s", res.Summary, destroyed.Event)
	}
}

func TestParseApproversDestroyApprovals(t *testing.T) {
	const groups = "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-oncall, sre-2]}\n"
	for _, tt := range []struct {
		name, yaml string
		want       map[Environment]int
		err        string
	}{
		{name: "defaults", yaml: groups, want: map[Environment]int{Dev: 0, QA: 1, Prod: 2, DR: 2}},
		{name: "a one-member group keeps the defaults valid", yaml: "groups:\n  qa: {members: [qa-lead]}\n  sre: {members: [sre-oncall]}\n", want: map[Environment]int{Prod: 2}},
		{name: "overridden", yaml: groups + "destroyApprovals: {qa: 1, prod: 1, dr: 2}\n", want: map[Environment]int{QA: 1, Prod: 1, DR: 2}},
		{name: "dev", yaml: groups + "destroyApprovals: {dev: 1}\n", err: `"dev" is not qa, prod or dr`},
		{name: "an unknown environment", yaml: groups + "destroyApprovals: {staging: 1}\n", err: `"staging" is not qa, prod or dr`},
		{name: "none", yaml: groups + "destroyApprovals: {prod: 0}\n", err: "want 1 to 10"},
		{name: "too many", yaml: groups + "destroyApprovals: {prod: 11}\n", err: "want 1 to 10"},
		{name: "more than the group has", yaml: groups + "destroyApprovals: {dr: 3}\n", err: "group sre has 2 member(s)"},
		{name: "not a number", yaml: groups + "destroyApprovals: {prod: two}\n", err: "cannot unmarshal"},
		{name: "misspelt", yaml: groups + "destroyApproval: {prod: 2}\n", err: "destroyApproval"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := ParseApprovers([]byte(tt.yaml))
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) || ReasonOf(err) != ApproversInvalid {
					t.Fatalf("error %v, want APPROVERS_INVALID saying %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for env, n := range tt.want {
				if got := cfg.DestroyApprovalsFor(env); got != n {
					t.Errorf("%s: %d approvers, want %d", env, got, n)
				}
			}
		})
	}
}

// TestPlanDigestBindsTheOperation: the same plan content digests
// differently as a destroy, and as an update exactly as it did before
// destroys existed.
func TestPlanDigestBindsTheOperation(t *testing.T) {
	content := PlanContent{ResourceChanges: []any{map[string]any{"address": "a", "change": map[string]any{"actions": []any{"delete"}}}}}
	update, err := PlanDigest(content, "terraform 1.11.4", "cd", "c0ffee")
	if err != nil {
		t.Fatal(err)
	}
	legacy, err := Digest(struct {
		ResourceChanges any    `json:"resource_changes"`
		OutputChanges   any    `json:"output_changes"`
		Configuration   any    `json:"configuration"`
		Variables       any    `json:"variables"`
		Engine          string `json:"engine"`
		ContractDigest  string `json:"contract_digest"`
		Commit          string `json:"commit"`
	}{content.ResourceChanges, nil, nil, nil, "terraform 1.11.4", "cd", "c0ffee"})
	if err != nil {
		t.Fatal(err)
	}
	if update != legacy {
		t.Errorf("an update's digest changed: %s, was %s", update, legacy)
	}
	content.Operation = OperationDestroy
	destroy, err := PlanDigest(content, "terraform 1.11.4", "cd", "c0ffee")
	if err != nil {
		t.Fatal(err)
	}
	if destroy == update {
		t.Error("a destroy plan digests like the update with the same content: approving one would authorise the other")
	}
}

// TestADeletedContractOnlyDestroys: the trusted base's copy of a deleted
// contract is read for its destroy; any other run of it stops at the
// change stage, before anything is planned.
func TestADeletedContractOnlyDestroys(t *testing.T) {
	w := newWorld(t)
	st := &State{Contract: &Contract{ID: contractID, Environment: QA}, Target: &TargetStack{}, ContractContent: "c", DeletedContract: []byte("id: x")}
	res, err := (&IdentifyChange{Evidence: w}).Run(t.Context(), st)
	if err != nil || res.Verdict != Fail || len(res.Findings) != 1 || res.Findings[0].Reason != ContractNotFound {
		t.Fatalf("an update of a deleted contract: %+v %v", res, err)
	}
	st.Operation = OperationDestroy
	if res, err := (&IdentifyChange{Evidence: w}).Run(t.Context(), st); err != nil || res.Verdict != Pass || res.Event != EventDestroyIdentified {
		t.Fatalf("the destroy of a deleted contract: %+v %v", res, err)
	}
}
