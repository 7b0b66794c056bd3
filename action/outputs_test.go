package main

import (
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// golden compares got with testdata/<dir>/want<ext>, rewriting it with
// -update.
func golden(t *testing.T, dir, ext, got string) {
	t.Helper()
	path := filepath.Join("testdata", dir, "want"+ext)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: go test ./action -run %s -update", err, t.Name())
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s differs (-want +got):\n%s\nif the change is intended: go test ./action -run %s -update", path, diff, t.Name())
	}
}

func TestJobSummary(t *testing.T) {
	conf := &runner.Confidence{Phase: runner.PostPlan, Score: 0.912, Band: runner.BandPass, Threshold: 0.5,
		PerInput: map[string]runner.ConfidenceInput{
			"schema": {Value: 1, Weight: 0.15, Contribution: 0.15, Explanation: "all recommended fields set"},
			"policy": {Value: 0.95, Weight: 0.25, Contribution: 0.2375, Explanation: "1 medium finding"},
		}}
	stages := func(last stageView) []stageView {
		return []stageView{
			{Stage: "schema", Verdict: runner.Pass, Summary: "contract valid for dev", DurationMs: 4},
			{Stage: "policy", Verdict: runner.Pass, Summary: "pre-plan: 12 pass, 1 fail (1 medium), 2 skipped, 0 error", DurationMs: 31},
			last,
		}
	}
	cases := map[string]runView{
		"pass": {Command: "run", Verdict: "pass", ContractID: "0c0ffee0-1111-4222-8333-444455556666", Environment: "dev", PlanDigest: "9f2c1d0e",
			Stages:     stages(stageView{Stage: "apply", Verdict: runner.Pass, Summary: "applied plan 9f2c1d0e: 1 added, 0 changed, 0 destroyed", DurationMs: 812}),
			Confidence: conf},
		"fail": {Command: "plan", Verdict: "fail", Reason: string(runner.PolicyCriticalFail), ContractID: "0c0ffee0-1111-4222-8333-444455556666", Environment: "dev",
			Stages: stages(stageView{Stage: "nfr", Verdict: runner.Fail, Summary: "blocked | by a critical finding", DurationMs: 3,
				Findings: []runner.Finding{{Reason: runner.PolicyCriticalFail, Message: "plaintext secret in\ninputs.audience", Location: ".nova/contract.yml:6:13"}}})},
		"awaiting-approval": {Command: "run", Verdict: "awaiting_approval", Reason: string(runner.ApprovalRequired), ContractID: "0c0ffee0-1111-4222-8333-444455556666", Environment: "prod", PlanDigest: "9f2c1d0e",
			Stages: stages(stageView{Stage: "gate", Verdict: runner.AwaitingApproval, Summary: "approval required: prod needs a human approval of plan 9f2c1d0e",
				Findings: []runner.Finding{{Reason: runner.ApprovalRequired, Message: "environment prod requires an approval bound to plan digest 9f2c1d0e"}}}),
			Confidence: conf},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			golden(t, filepath.Join("summary", name), ".md", summaryMarkdown(v))
		})
	}
}
