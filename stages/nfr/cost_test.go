package nfr

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// fakeInfracost stands in for infracost: it checks the invocation, then
// prints a breakdown recorded in infracost's JSON format.
func fakeInfracost(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "infracost")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func printing(t *testing.T, fixture, check string) string {
	abs, err := filepath.Abs(filepath.Join("testdata", fixture))
	if err != nil {
		t.Fatal(err)
	}
	return fakeInfracost(t, `[ "$1" = breakdown ] && [ "$2" = --path ] && [ "$4" = --format ] && [ "$5" = json ] || { echo "bad args: $*" >&2; exit 2; }
[ "$INFRACOST_API_KEY" = ico-test-key ] || { echo "no API key" >&2; exit 2; }
`+check+`
cat "`+abs+`"
`)
}

// A root module rendered for infracost holds main.tf and the module copies.
const rootModule = `[ -f "$3/main.tf" ] && [ -d "$3/modules/ecs-service-1.0.0" ] || { echo "no root module at $3" >&2; exit 2; }`

func TestMissingInfracostIsOneSkippedRecord(t *testing.T) {
	tests := []struct {
		name      string
		infracost Infracost
		detail    string
	}{
		{"no binary", Infracost{Bin: filepath.Join(os.TempDir(), "no-infracost-here"), APIKey: "ico-test-key"}, "not installed"},
		{"no API key", Infracost{Bin: fakeInfracost(t, "exit 0")}, "INFRACOST_API_KEY"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(100.0)}, nil)
			res := runStage(t, st, WithInfracost(tc.infracost))
			want := []outcome{{CostRuleID, runner.Info, runner.PCRSkipped, "", runner.InfracostNotConfigured}}
			if diff := cmp.Diff(want, outcomes(res.PCRs)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			if !strings.Contains(res.PCRs[0].Message, tc.detail) {
				t.Errorf("message %q does not say %q", res.PCRs[0].Message, tc.detail)
			}
			if want := (runner.CostEstimate{Skipped: true, Reason: runner.InfracostNotConfigured}); *st.Cost != want {
				t.Errorf("cost %+v, want %+v", *st.Cost, want)
			}
		})
	}
}

func TestNoBudgetNoCostRecord(t *testing.T) {
	st := microservice(t, runner.NFR{}, nil)
	res := runStage(t, st, WithInfracost(Infracost{Bin: printing(t, "infracost-breakdown.json", rootModule), APIKey: "ico-test-key"}))
	if len(res.PCRs) != 0 {
		t.Errorf("records %+v, want none: no NFR is declared", res.PCRs)
	}
	if want := (runner.CostEstimate{Monthly: 23.02, Currency: "USD"}); *st.Cost != want {
		t.Errorf("cost %+v, want %+v", *st.Cost, want)
	}
}

func TestBudget(t *testing.T) {
	tests := []struct {
		name    string
		ceiling float64
		plan    []byte
		check   string
		fixture string
		want    outcome
		monthly float64
	}{
		{"within the ceiling, priced from the root module", 50, nil, rootModule, "infracost-breakdown.json",
			outcome{CostRuleID, runner.High, runner.PCRPass, "", ""}, 23.02},
		{"over the ceiling, priced from the plan", 20, []byte(`{"format_version":"1.2"}`), `grep -q format_version "$3" || { echo "no plan at $3" >&2; exit 2; }`, "infracost-breakdown.json",
			outcome{CostRuleID, runner.High, runner.PCRFail, "", runner.NFRBudgetExceeded}, 23.02},
		{"nothing priced", 0, nil, rootModule, "infracost-nothing-priced.json",
			outcome{CostRuleID, runner.High, runner.PCRPass, "", ""}, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(tc.ceiling)}, nil)
			st.PlanJSON = tc.plan
			res := runStage(t, st, WithInfracost(Infracost{Bin: printing(t, tc.fixture, tc.check), APIKey: "ico-test-key"}))
			if diff := cmp.Diff([]outcome{tc.want}, outcomes(res.PCRs)); diff != "" {
				t.Errorf("(-want +got)\n%s\n%s", diff, res.PCRs[0].Message)
			}
			if st.Cost.Skipped || st.Cost.Monthly != tc.monthly {
				t.Errorf("cost %+v, want %.2f", *st.Cost, tc.monthly)
			}
		})
	}
}

func TestCrashingInfracostIsAnError(t *testing.T) {
	bin := fakeInfracost(t, "echo 'Error: Invalid API key' >&2\nexit 1\n")
	st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(100.0)}, nil)
	res := runStage(t, st, WithInfracost(Infracost{Bin: bin, APIKey: "ico-test-key"}))
	want := []outcome{{CostRuleID, runner.High, runner.PCRError, "", runner.InfracostFailed}}
	if diff := cmp.Diff(want, outcomes(res.PCRs)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if !strings.Contains(res.PCRs[0].Message, "Invalid API key") {
		t.Errorf("message %q lacks the stderr tail", res.PCRs[0].Message)
	}
	if res.Verdict != runner.Pass || !st.Cost.Skipped || st.Cost.Reason != runner.InfracostFailed {
		t.Errorf("verdict %s cost %+v: a failed estimate never stops the run", res.Verdict, *st.Cost)
	}
}

func TestParseBreakdownRejects(t *testing.T) {
	for _, in := range []string{"", "Error: no such file", `{"currency":"USD"}`, `{"projects":[],"totalMonthlyCost":"lots"}`} {
		if _, err := parseBreakdown([]byte(in)); err == nil {
			t.Errorf("parseBreakdown(%q) succeeded", in)
		}
	}
}

// TestInfracostSeesOnlyItsEnvironment: infracost's binary is the
// repository's choice to make, so it gets its own settings and the basics,
// never nova's signing key or the runner's tokens.
func TestInfracostSeesOnlyItsEnvironment(t *testing.T) {
	check := rootModule + `
[ -z "$NOVA_SIGNING_KEY$GITHUB_TOKEN$AWS_SECRET_ACCESS_KEY" ] || { echo "secrets leaked" >&2; exit 2; }
[ "$INFRACOST_CURRENCY" = EUR ] && [ "$HOME" = /home/runner ] || { echo "its own environment is missing" >&2; exit 2; }`
	env := []string{"NOVA_SIGNING_KEY=key", "GITHUB_TOKEN=ghs_x", "AWS_SECRET_ACCESS_KEY=x", "INFRACOST_CURRENCY=EUR", "HOME=/home/runner"}
	st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(50.0)}, nil)
	res := runStage(t, st, WithInfracost(Infracost{Bin: printing(t, "infracost-breakdown.json", check), APIKey: "ico-test-key", Env: env}))
	if want := []outcome{{CostRuleID, runner.High, runner.PCRPass, "", ""}}; !cmp.Equal(want, outcomes(res.PCRs)) {
		t.Errorf("got %+v: %s", outcomes(res.PCRs), res.PCRs[0].Message)
	}
}
