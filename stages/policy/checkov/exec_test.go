package checkov_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
	"github.com/nova-platform/nova/stages/policy/checkov"
)

var testTime = time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)

// fakeCheckov writes a shell script standing in for checkov.
func fakeCheckov(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "checkov")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func payload(phase runner.Phase) runner.PolicyPayload {
	return runner.PolicyPayload{Phase: phase, Plan: []byte(`{"format_version":"1.2","resource_changes":[]}`)}
}

func TestMissingCheckovIsOneSkippedRecord(t *testing.T) {
	e := checkov.New(filepath.Join(t.TempDir(), "no-checkov-here"), nil)
	if e.Configured() {
		t.Fatal("a missing binary is configured")
	}
	pre, err := e.Evaluate(t.Context(), payload(runner.PrePlan))
	if err != nil {
		t.Fatal(err)
	}
	want := []outcome{{"CHECKOV_NOT_CONFIGURED", runner.Info, runner.PCRSkipped, "", runner.CheckovNotConfigured}}
	if diff := cmp.Diff(want, outcomes(pre)); diff != "" {
		t.Errorf("pre-plan (-want +got)\n%s", diff)
	}
	post, err := e.Evaluate(t.Context(), payload(runner.PostPlan))
	if err != nil || len(post) != 0 {
		t.Errorf("post-plan: %v %v; the skip is reported once per run, before plan", post, err)
	}
	for _, p := range runner.NormalizePCRs(runner.EngineCheckov, pre, "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", testTime, jsonschema.ValidatePCR) {
		if p.RuleID != string(runner.CheckovNotConfigured) {
			t.Errorf("the skipped record is not a valid PCR: %s", p.Message)
		}
	}
}

func TestCheckovRunsOnThePlan(t *testing.T) {
	report, err := filepath.Abs(filepath.Join("testdata", "report-plan.json"))
	if err != nil {
		t.Fatal(err)
	}
	// The fake checks its arguments as the real one would read them, then
	// prints a recorded report and exits 1 as checkov does on failures.
	bin := fakeCheckov(t, `[ "$1" = "-f" ] && [ "$3" = "-o" ] && [ "$4" = "json" ] || { echo "bad args: $*" >&2; exit 2; }
grep -q format_version "$2" || { echo "no plan at $2" >&2; exit 2; }
cat "`+report+`"
exit 1
`)
	e := checkov.New(bin, nil)
	if pcrs, err := e.Evaluate(t.Context(), payload(runner.PrePlan)); err != nil || len(pcrs) != 0 {
		t.Errorf("pre-plan: %v %v, want nothing: checkov reads the plan", pcrs, err)
	}
	pcrs, err := e.Evaluate(t.Context(), payload(runner.PostPlan))
	if err != nil {
		t.Fatal(err)
	}
	if len(pcrs) != 7 || pcrs[0].RuleID != "checkov.CKV_AWS_18" {
		t.Errorf("got %d records starting %+v", len(pcrs), pcrs)
	}
}

func TestCrashingCheckovIsAnError(t *testing.T) {
	tests := []struct{ name, body, mention string }{
		{"abnormal exit", "echo 'Traceback (most recent call last):' >&2\necho 'ModuleNotFoundError: No module named checkov' >&2\nexit 2\n", "ModuleNotFoundError"},
		{"not its report", "echo 'checkov 3.2.336'\nexit 0\n", "reading checkov's report"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := checkov.New(fakeCheckov(t, tc.body), nil).Evaluate(t.Context(), payload(runner.PostPlan))
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %v, want one mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestCheckovWithNothingToCheckSaysSo: an installed checkov that reports
// only a summary, or `[]`, leaves one skipped record, not silence.
func TestCheckovWithNothingToCheckSaysSo(t *testing.T) {
	summary, err := filepath.Abs(filepath.Join("testdata", "report-nothing.json"))
	if err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"summary only": `cat "` + summary + `"`, "empty list": "echo '[]'"} {
		t.Run(name, func(t *testing.T) {
			pcrs, err := checkov.New(fakeCheckov(t, body+"\n"), nil).Evaluate(t.Context(), payload(runner.PostPlan))
			if err != nil {
				t.Fatal(err)
			}
			want := []outcome{{"POLICY_ENGINE_NO_CHECKS", runner.Info, runner.PCRSkipped, "plan", runner.PolicyEngineNoChecks}}
			if diff := cmp.Diff(want, outcomes(pcrs)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			for _, p := range runner.NormalizePCRs(runner.EngineCheckov, pcrs, "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", testTime, jsonschema.ValidatePCR) {
				if p.RuleID == string(runner.PolicyResultInvalid) {
					t.Errorf("invalid record: %s", p.Message)
				}
			}
		})
	}
}
