package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func commentCases() map[string]runView {
	conf := &runner.Confidence{Phase: runner.PostPlan, Score: 0.15, Band: runner.BandPass, Threshold: 0.1,
		PerInput: map[string]runner.ConfidenceInput{"schema": {Value: 1, Weight: 0.15, Contribution: 0.15, Explanation: "complete"}}}
	digest := "9f2c1d0e7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a2b1c0d"
	stages := []stageView{
		{Stage: "schema", Verdict: runner.Pass, Summary: "contract valid for prod"},
		{Stage: "plan", Verdict: runner.Pass, Summary: "plan 9f2c1d0e7a6b: 1 to add, 1 to change, 0 to destroy"},
	}
	resources := []runner.ResourceChange{
		{Address: "module.message.terraform_data.greeting", Actions: []string{"create"}},
		{Address: "module.echo.terraform_data.echo", Actions: []string{"update"}},
	}
	changes := &runner.ChangeSummary{Add: 1, Change: 1}
	many := make([]runner.ResourceChange, 3000)
	for i := range many {
		many[i] = runner.ResourceChange{Address: fmt.Sprintf("module.fleet.aws_instance.node[%d]", i), Actions: []string{"create"}}
	}
	return map[string]runView{
		"pass": {Command: "run", Verdict: "pass", ContractID: contractUUID, Environment: "dev", PlanDigest: digest, Changes: changes, Resources: resources,
			Stages: append(stages, stageView{Stage: "apply", Verdict: runner.Pass, Summary: "applied plan 9f2c1d0e7a6b: 1 added, 1 changed, 0 destroyed"}), Confidence: conf},
		"fail": {Command: "plan", Verdict: "fail", Reason: string(runner.PolicyCriticalFail), ContractID: contractUUID, Environment: "dev",
			Stages: []stageView{{Stage: "schema", Verdict: runner.Pass, Summary: "contract valid"}, {Stage: "policy", Verdict: runner.Fail, Summary: "pre-plan: blocked by 1 critical failure(s) | pipes",
				Findings: []runner.Finding{{Reason: runner.PolicyCriticalFail, Message: "input audience holds a secret in plaintext"}}}},
			PCRs: []runner.PCR{
				{Engine: "rego", RuleID: "nova.secrets.plaintext", Severity: runner.Critical, Result: runner.PCRFail, ResourceRef: "contract:/inputs/audience", Message: "input audience holds a secret in plaintext (key-value-credential)"},
				{Engine: "rego", RuleID: "nova.tags.required", Severity: runner.Medium, Result: runner.PCRPass, Message: "ok"},
				{Engine: "checkov", RuleID: "CHECKOV_NOT_CONFIGURED", Severity: runner.Info, Result: runner.PCRSkipped, Message: "not installed"},
			}},
		"awaiting-approval": {Command: "run", Verdict: "awaiting_approval", Reason: string(runner.ApprovalRequired), ContractID: contractUUID, Environment: "prod", PlanDigest: digest, Changes: changes, Resources: resources,
			Stages: append(stages, stageView{Stage: "gate", Verdict: runner.AwaitingApproval, Summary: "approval required: prod needs a human approval of plan 9f2c1d0e7a6b",
				Findings: []runner.Finding{{Reason: runner.ApprovalRequired, Message: "environment prod requires an approval bound to plan digest " + digest + " from group sre"}}}), Confidence: conf},
		"ignored": {Command: "run", Verdict: "awaiting_approval", Reason: string(runner.ApprovalRequired), ContractID: contractUUID, Environment: "prod", PlanDigest: digest,
			Stages: append(stages, stageView{Stage: "approvals", Verdict: runner.Pass, Summary: "0 decision(s) on plan 9f2c1d0e7a6b imported for prod, 3 ignored"},
				stageView{Stage: "gate", Verdict: runner.AwaitingApproval, Summary: "approval required: prod needs a human approval of plan 9f2c1d0e7a6b",
					Findings: []runner.Finding{{Reason: runner.ApprovalRequired, Message: "environment prod requires an approval bound to plan digest " + digest + " from group sre"}}}),
			Ignored: []runner.IgnoredClaim{
				{Approver: "dev-author", Source: runner.SourceGiteaReview, SourceRef: "12", Reason: runner.ApproverNotEligible, Why: "dev-author wrote this change and may not approve it"},
				{Approver: "qa-lead", Source: runner.SourceGiteaComment, SourceRef: "31", Reason: runner.ApprovalClaimInvalid, Why: `unknown environment "production": name dev, qa, prod or dr`},
				{Approver: "sre-2", Source: runner.SourceGiteaComment, SourceRef: "33", Reason: runner.ApprovalClaimInvalid, Why: "the approval names 12 hex digits of the plan digest; name at least 32, or the whole digest, so it binds one plan"},
			}},
		// A plan of qa that qa does not run yet: its apply job comes next,
		// and may be held for the environment's reviewers, so the comment
		// says how to approve it already.
		"planned-guarded": {Command: "plan", Verdict: "pass", ContractID: contractUUID, Environment: "qa", PlanDigest: digest, Changes: changes, Resources: resources, Stages: stages},
		"receipt": {Command: "plan", Verdict: "pass", ContractID: contractUUID, Environment: "qa", Receipt: "0191a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d",
			Stages: []stageView{{Stage: "schema", Verdict: runner.Pass, Summary: "contract valid for qa"}, {Stage: "change", Verdict: runner.Pass, Summary: "qa applied change 06e7ff110884 before and nothing since: nothing to do"}}},
		"truncated": {Command: "plan", Verdict: "pass", ContractID: contractUUID, Environment: "dev", PlanDigest: digest, Changes: &runner.ChangeSummary{Add: 3000}, Resources: many, Stages: stages},
	}
}

const contractUUID = "0c0ffee0-1111-4222-8333-444455556666"

func TestPullRequestComment(t *testing.T) {
	for name, v := range commentCases() {
		t.Run(name, func(t *testing.T) {
			body, err := renderComment(v, "sre", "https://github.com/org/repo/actions/runs/42")
			if err != nil {
				t.Fatal(err)
			}
			if n := utf8.RuneCountInString(body); n > 65536 {
				t.Errorf("the comment holds %d characters, more than a comment may", n)
			}
			if !strings.Contains(body, commentMarker(v.ContractID, v.Environment)) {
				t.Error("the comment lacks its marker")
			}
			golden(t, filepath.Join("comment", name), ".md", body)
		})
	}
}

// TestRunViewListsIgnoredDecisions: what the approvals stage did not count
// reaches the run's view, which the comment is rendered from.
func TestRunViewListsIgnoredDecisions(t *testing.T) {
	ignored := []runner.IgnoredClaim{{Approver: "olga", Source: runner.SourceGiteaReview, SourceRef: "7", Reason: runner.ApproverNotEligible, Why: "olga is not in approver group qa"}}
	out := runner.Outcome{Verdict: runner.AwaitingApproval, Results: []runner.Result{
		{Stage: "approvals", Verdict: runner.Pass, Data: runner.ApprovalCheck{Environment: runner.QA, Ignored: ignored}},
		{Stage: "gate", Verdict: runner.AwaitingApproval},
	}}
	var stdout strings.Builder
	rep := newReporter(Config{Command: "run"}, Env{Stdout: &stdout, Stderr: &stdout})
	v := rep.finish(out, &runner.State{}, "")
	if diff := cmp.Diff(ignored, v.Ignored); diff != "" {
		t.Errorf("ignored (-want +got):\n%s", diff)
	}
}

// TestCommitStatusSaysWhatRuns: an environment's status is success only
// once it runs the change, applied now or before (a receipt); a plan it
// does not run yet leaves it pending, dev's as much as a guarded one's.
func TestCommitStatusSaysWhatRuns(t *testing.T) {
	tests := []struct {
		name      string
		v         runView
		state     runner.CommitState
		statusFor string
	}{
		{"applied", runView{Command: "apply", Verdict: "pass", Environment: "qa"}, runner.StateSuccess, "nova apply: pass"},
		{"run applied", runView{Command: "run", Verdict: "pass", Environment: "dev"}, runner.StateSuccess, "nova run: pass"},
		{"planned dev", runView{Command: "plan", Verdict: "pass", Environment: "dev", PlanDigest: "ab"}, runner.StatePending, "nova plan: pass (not applied yet)"},
		{"planned qa", runView{Command: "plan", Verdict: "pass", Environment: "qa", PlanDigest: "ab"}, runner.StatePending, "nova plan: pass (not applied yet)"},
		{"receipt", runView{Command: "plan", Verdict: "pass", Environment: "qa", Receipt: "e1"}, runner.StateSuccess, "nova plan: pass (applied before; nothing to do)"},
		{"run receipt", runView{Command: "run", Verdict: "pass", Environment: "prod", Receipt: "e1"}, runner.StateSuccess, "nova run: pass (applied before; nothing to do)"},
		{"waiting", runView{Command: "apply", Verdict: "awaiting_approval", Reason: "APPROVAL_REQUIRED", Environment: "qa"}, runner.StatePending, "nova apply: awaiting_approval (APPROVAL_REQUIRED)"},
		{"waiting on a plan", runView{Command: "run", Verdict: "awaiting_approval", Reason: "APPROVAL_REQUIRED", Environment: "prod", PlanDigest: strings.Repeat("0123456789abcdef", 4)}, runner.StatePending, "nova run: awaiting_approval, plan 0123456789abcdef0123456789abcdef (APPROVAL_REQUIRED)"},
		{"plan failed", runView{Command: "plan", Verdict: "fail", Reason: "POLICY_CRITICAL_FAIL", Environment: "qa"}, runner.StateFailure, "nova plan: fail (POLICY_CRITICAL_FAIL)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := commitState(tt.v); got != tt.state {
				t.Errorf("state %q, want %q", got, tt.state)
			}
			if got := statusLine(tt.v); got != tt.statusFor {
				t.Errorf("description %q, want %q", got, tt.statusFor)
			}
		})
	}
}

// TestCommentNamesADestroy: approvers see from the comment's plan line
// that what they are asked to approve destroys the environment.
func TestCommentNamesADestroy(t *testing.T) {
	v := runView{Command: "run", Verdict: string(runner.AwaitingApproval), ContractID: "c-1", Environment: "prod",
		PlanDigest: strings.Repeat("d", 64), Changes: &runner.ChangeSummary{Destroy: 2}}
	for _, op := range []runner.Operation{"", runner.OperationDestroy} {
		v.Operation = op
		body, err := renderComment(v, "sre", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(body, "**Destroy plan** `"+v.PlanDigest+"`"); got != op.IsDestroy() {
			t.Errorf("operation %q: the comment names a destroy: %v\n%s", op, got, body)
		}
	}
}
