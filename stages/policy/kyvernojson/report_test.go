package kyvernojson_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
	"github.com/nova-platform/nova/stages/policy/kyvernojson"
)

var testTime = time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)

type outcome struct {
	RuleID      string
	Severity    runner.Severity
	Result      runner.PCRResult
	ResourceRef string
	Reason      runner.Reason
	Message     string
}

func outcomes(pcrs []runner.PCR) []outcome {
	out := make([]outcome, 0, len(pcrs))
	for _, p := range pcrs {
		out = append(out, outcome{p.RuleID, p.Severity, p.Result, p.ResourceRef, runner.PCRReason(p), p.Message})
	}
	return out
}

// TestParse reads a report recorded in kyverno-json's `scan --output json`
// format (a list of {resource, results: [{policy, rules: [{rule,
// identifier, error, violations}]}]}).
func TestParse(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "scan-plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	pcrs, err := kyvernojson.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []outcome{
		{"kyverno.aws-tags.require-team-tag", runner.High, runner.PCRFail, "module.assets.aws_s3_bucket.this", "", "bucket must carry a Team tag"},
		{"kyverno.no-public-lb.internal-only", runner.Medium, runner.PCRFail, "module.edge.aws_lb.this", "", "change.after.internal: Expected value: true"},
		{"kyverno.no-public-lb.bad-jmespath", runner.Medium, runner.PCRError, "module.edge.aws_lb.this", runner.PolicyEngineError,
			"kyverno.no-public-lb.bad-jmespath could not be evaluated: failed to parse jmespath expression: SyntaxError: Incomplete expression"},
		{"kyverno.aws-tags.require-team-tag", runner.High, runner.PCRPass, "plan", "", "kyverno.aws-tags.require-team-tag: passed on 1 resource(s)"},
	}
	if diff := cmp.Diff(want, outcomes(pcrs)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	for _, p := range runner.NormalizePCRs(runner.EngineKyverno, pcrs, "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", testTime, jsonschema.ValidatePCR) {
		if p.RuleID == string(runner.PolicyResultInvalid) {
			t.Errorf("invalid record: %s", p.Message)
		}
	}
}

func TestParseRejectsWhatIsNotItsReport(t *testing.T) {
	for _, in := range []string{"", "Loading policies ...\nDone", `{"resource": {}}`} {
		if _, err := kyvernojson.Parse([]byte(in)); err == nil {
			t.Errorf("kyvernojson.Parse(%q) succeeded", in)
		}
	}
}

// TestNoRuleResultIsOneSkippedRecord: a scan in which no policy applied
// says so, rather than passing by saying nothing.
func TestNoRuleResultIsOneSkippedRecord(t *testing.T) {
	for _, in := range []string{
		`[]`,
		`[{"resource": {"address": "module.assets.aws_s3_bucket.this"}, "results": []}]`,
		`[{"resource": {"address": "module.assets.aws_s3_bucket.this"}, "results": [{"policy": {"metadata": {"name": "aws-tags"}}, "rules": []}]}]`,
	} {
		pcrs, err := kyvernojson.Parse([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		got := outcomes(pcrs)
		want := []outcome{{"POLICY_ENGINE_NO_CHECKS", runner.Info, runner.PCRSkipped, "plan", runner.PolicyEngineNoChecks,
			"kyverno-json ran but reported no rule result: no policy applied to a resource of the plan"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got)\n%s", in, diff)
		}
		for _, p := range runner.NormalizePCRs(runner.EngineKyverno, pcrs, "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", testTime, jsonschema.ValidatePCR) {
			if p.RuleID == string(runner.PolicyResultInvalid) {
				t.Errorf("invalid record: %s", p.Message)
			}
		}
	}
}
