package jsonschema

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

const contractID = "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"

var now = time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)

func record() runner.PCR {
	return runner.PCR{
		Engine: runner.EngineCheckov, RuleID: "checkov.CKV_AWS_20", Severity: runner.High,
		Result: runner.PCRFail, Message: "bucket is public", ResourceRef: "aws_s3_bucket.b",
		Evidence: json.RawMessage(`{"file":"plan.json"}`),
	}
}

func TestNormalizeStampsValidRecords(t *testing.T) {
	got := runner.NormalizePCRs(runner.EngineCheckov, []runner.PCR{record()}, contractID, now, ValidatePCR)
	want := record()
	want.ContractID, want.EvaluatedAt = contractID, now
	if diff := cmp.Diff([]runner.PCR{want}, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

func TestNormalizeReplacesInvalidRecords(t *testing.T) {
	tests := []struct {
		name    string
		mutate  func(*runner.PCR)
		mention string
	}{
		{"unknown severity", func(p *runner.PCR) { p.Severity = "urgent" }, "/severity"},
		{"unknown result", func(p *runner.PCR) { p.Result = "warn" }, "/result"},
		{"empty message", func(p *runner.PCR) { p.Message = "" }, "/message"},
		{"empty rule id", func(p *runner.PCR) { p.RuleID = "" }, "/ruleId"},
		{"evidence not an object", func(p *runner.PCR) { p.Evidence = json.RawMessage(`["x"]`) }, "/evidence"},
		{"reason not a reason code", func(p *runner.PCR) { p.Evidence = json.RawMessage(`{"reason":"oops"}`) }, "/evidence/reason"},
		{"another engine", func(p *runner.PCR) { p.Engine = runner.EngineRego }, `engine "rego"`},
		{"another contract", func(p *runner.PCR) { p.ContractID = "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90" }, "contractId"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad := record()
			tc.mutate(&bad)
			got := runner.NormalizePCRs(runner.EngineCheckov, []runner.PCR{record(), bad}, contractID, now, ValidatePCR)
			if len(got) != 2 || got[0].Result != runner.PCRFail {
				t.Fatalf("the valid record was not kept: %+v", got)
			}
			p := got[1]
			if p.Engine != runner.EngineCheckov || p.RuleID != string(runner.PolicyResultInvalid) || p.Result != runner.PCRError {
				t.Errorf("got %+v, want an error record of engine checkov with ruleId POLICY_RESULT_INVALID", p)
			}
			if runner.PCRReason(p) != runner.PolicyResultInvalid {
				t.Errorf("reason %q, want POLICY_RESULT_INVALID", runner.PCRReason(p))
			}
			if !strings.Contains(p.Message, tc.mention) || !strings.Contains(p.Message, "checkov") {
				t.Errorf("message %q does not name the engine and %q", p.Message, tc.mention)
			}
			if err := ValidatePCR(p); err != nil {
				t.Errorf("the replacement record is itself invalid: %v", err)
			}
		})
	}
}
