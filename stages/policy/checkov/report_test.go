package checkov_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
	"github.com/nova-platform/nova/stages/policy/checkov"
)

type outcome struct {
	RuleID      string
	Severity    runner.Severity
	Result      runner.PCRResult
	ResourceRef string
	Reason      runner.Reason
}

func outcomes(pcrs []runner.PCR) []outcome {
	out := make([]outcome, 0, len(pcrs))
	for _, p := range pcrs {
		out = append(out, outcome{p.RuleID, p.Severity, p.Result, p.ResourceRef, runner.PCRReason(p)})
	}
	return out
}

func TestParse(t *testing.T) {
	planChecks := []outcome{
		{"checkov.CKV_AWS_18", runner.Medium, runner.PCRFail, "module.assets.aws_s3_bucket.this", ""},
		{"checkov.CKV_AWS_338", runner.Low, runner.PCRFail, "module.service.aws_cloudwatch_log_group.this", ""},
		{"checkov.CKV_AWS_144", runner.Medium, runner.PCRSkipped, "module.assets.aws_s3_bucket.this", ""},
		{"checkov.CKV_AWS_119", runner.Medium, runner.PCRPass, "plan", ""},
		{"checkov.CKV_AWS_158", runner.Medium, runner.PCRPass, "plan", ""},
		{"checkov.CKV_AWS_20", runner.Medium, runner.PCRPass, "plan", ""},
		{"checkov.CKV_AWS_28", runner.Medium, runner.PCRPass, "plan", ""},
	}
	tests := []struct {
		file string
		want []outcome
	}{
		{"report-plan.json", planChecks},
		{"report-frameworks.json", append(append([]outcome{}, planChecks...),
			outcome{"checkov.CKV_SECRET_6", runner.High, runner.PCRFail, "c00f1a6e4b3b2a1d", ""},
			outcome{"POLICY_ENGINE_ERROR", runner.High, runner.PCRError, "", runner.PolicyEngineError},
		)},
		{"report-nothing.json", []outcome{{"POLICY_ENGINE_NO_CHECKS", runner.Info, runner.PCRSkipped, "plan", runner.PolicyEngineNoChecks}}},
	}
	for _, tc := range tests {
		t.Run(tc.file, func(t *testing.T) {
			data, err := os.ReadFile(filepath.Join("testdata", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			pcrs, err := checkov.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, outcomes(pcrs)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			// What checkov reports must pass Nova's record schema.
			for _, p := range runner.NormalizePCRs(runner.EngineCheckov, pcrs, "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", testTime, jsonschema.ValidatePCR) {
				if p.Result == runner.PCRError && p.RuleID == string(runner.PolicyResultInvalid) {
					t.Errorf("invalid record: %s", p.Message)
				}
			}
		})
	}
}

func TestParseGroupsPasses(t *testing.T) {
	data, _ := os.ReadFile(filepath.Join("testdata", "report-plan.json"))
	pcrs, _ := checkov.Parse(data)
	for _, p := range pcrs {
		if p.RuleID == "checkov.CKV_AWS_158" {
			var ev struct{ Resources int }
			if err := json.Unmarshal(p.Evidence, &ev); err != nil || ev.Resources != 2 {
				t.Errorf("CKV_AWS_158 passed on 2 resources, evidence says %s", p.Evidence)
			}
		}
	}
}

func TestParseRejectsWhatIsNotItsReport(t *testing.T) {
	for _, in := range []string{"", "Traceback (most recent call last):", "{\"check_type\": 3}"} {
		if _, err := checkov.Parse([]byte(in)); err == nil {
			t.Errorf("checkov.Parse(%q) succeeded", in)
		}
	}
}
