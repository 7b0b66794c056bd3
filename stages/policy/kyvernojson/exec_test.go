package kyvernojson_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/policy/kyvernojson"
)

func fakeKyverno(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kyverno-json")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func payload(phase runner.Phase) runner.PolicyPayload {
	return runner.PolicyPayload{Phase: phase, Plan: []byte(`{"format_version":"1.2","resource_changes":[]}`)}
}

var policies = filepath.Join("testdata", "policies")

func TestNotConfiguredIsOneSkippedRecord(t *testing.T) {
	tests := []struct {
		name, bin, policies, mention string
	}{
		{"no binary", filepath.Join(os.TempDir(), "no-kyverno-json-here"), policies, "not installed"},
		{"no policies", "", "", "no kyverno-json policies"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bin := tc.bin
			if bin == "" {
				bin = fakeKyverno(t, "exit 0")
			}
			e := kyvernojson.New(bin, tc.policies, nil, nil)
			if e.Configured() {
				t.Fatal("configured")
			}
			pre, err := e.Evaluate(t.Context(), payload(runner.PrePlan))
			if err != nil {
				t.Fatal(err)
			}
			got := outcomes(pre)
			if len(got) != 1 || !strings.Contains(got[0].Message, tc.mention) {
				t.Fatalf("got %+v, want one record mentioning %q", got, tc.mention)
			}
			got[0].Message = ""
			want := outcome{"KJ_ENGINE_NOT_CONFIGURED", runner.Info, runner.PCRSkipped, "", runner.KyvernoNotConfigured, ""}
			if diff := cmp.Diff(want, got[0]); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if post, err := e.Evaluate(t.Context(), payload(runner.PostPlan)); err != nil || len(post) != 0 {
				t.Errorf("post-plan: %v %v, want nothing", post, err)
			}
		})
	}
}

func TestKyvernoRunsOnThePlan(t *testing.T) {
	report, _ := filepath.Abs(filepath.Join("testdata", "scan-plan.json"))
	bin := fakeKyverno(t, `[ "$1" = scan ] && [ "$2" = --payload ] && [ "$4" = --policy ] && [ "$6" = --output ] && [ "$7" = json ] && [ "$8" = --pre-process ] && [ "$9" = resource_changes ] || { echo "bad args: $*" >&2; exit 1; }
grep -q format_version "$3" || { echo "no plan at $3" >&2; exit 1; }
[ -f "$5/aws.yaml" ] || { echo "no policies at $5" >&2; exit 1; }
cat "`+report+`"
`)
	abs, _ := filepath.Abs(policies)
	pcrs, err := kyvernojson.New(bin, abs, nil, nil).Evaluate(t.Context(), payload(runner.PostPlan))
	if err != nil {
		t.Fatal(err)
	}
	if len(pcrs) != 4 {
		t.Errorf("got %d records, want 4", len(pcrs))
	}
}

func TestCrashingKyvernoIsAnError(t *testing.T) {
	bin := fakeKyverno(t, "echo 'Error: failed to load policies: yaml: line 3: mapping values are not allowed' >&2\nexit 1\n")
	_, err := kyvernojson.New(bin, policies, nil, nil).Evaluate(t.Context(), payload(runner.PostPlan))
	if err == nil || !strings.Contains(err.Error(), "mapping values are not allowed") {
		t.Errorf("error %v, want the stderr tail", err)
	}
}
