package infracost

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform"
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
const rootModule = `[ -f "$3/main.tf" ] && [ -d "$3/modules/hello-message-1.0.0" ] || { echo "no root module at $3" >&2; exit 2; }`

// state is a hello contract resolved through the registry shipped with Nova.
func state(t *testing.T) (*runner.State, runner.Engine) {
	t.Helper()
	reg, err := registry.Load(registry.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	c := &runner.Contract{ID: "0c0ffee0-1111-4222-8333-444455556666", Stack: "hello", Environment: runner.Dev, Inputs: map[string]any{"audience": "world"}}
	target, findings := reg.Resolve(c)
	if len(findings) > 0 {
		t.Fatalf("%+v", findings)
	}
	return &runner.State{Contract: c, Target: target}, &terraform.Engine{Registry: reg, StateDir: t.TempDir()}
}

type outcome struct {
	Skipped  bool
	Reason   runner.Reason
	Monthly  float64
	Priced   string
	Detailed bool
}

func TestEstimate(t *testing.T) {
	tests := []struct {
		name string
		est  func(t *testing.T) Estimator
		plan []byte
		want outcome
	}{
		{"no binary", func(t *testing.T) Estimator {
			return Estimator{Bin: filepath.Join(t.TempDir(), "no-infracost-here"), APIKey: "ico-test-key"}
		}, nil, outcome{Skipped: true, Reason: runner.InfracostNotConfigured, Detailed: true}},
		{"no API key", func(t *testing.T) Estimator { return Estimator{Bin: fakeInfracost(t, "exit 0")} },
			nil, outcome{Skipped: true, Reason: runner.InfracostNotConfigured, Detailed: true}},
		{"priced from the root module", func(t *testing.T) Estimator {
			return Estimator{Bin: printing(t, "infracost-breakdown.json", rootModule), APIKey: "ico-test-key"}
		}, nil, outcome{Monthly: 23.02, Priced: "root module"}},
		{"priced from the plan", func(t *testing.T) Estimator {
			return Estimator{Bin: printing(t, "infracost-breakdown.json", `grep -q format_version "$3" || { echo "no plan at $3" >&2; exit 2; }`), APIKey: "ico-test-key"}
		}, []byte(`{"format_version":"1.2"}`), outcome{Monthly: 23.02, Priced: "plan"}},
		{"nothing priced", func(t *testing.T) Estimator {
			return Estimator{Bin: printing(t, "infracost-nothing-priced.json", rootModule), APIKey: "ico-test-key"}
		}, nil, outcome{Monthly: 0, Priced: "root module"}},
		{"crashing infracost", func(t *testing.T) Estimator {
			return Estimator{Bin: fakeInfracost(t, "echo 'Error: Invalid API key' >&2\nexit 1\n"), APIKey: "ico-test-key"}
		}, nil, outcome{Skipped: true, Reason: runner.InfracostFailed, Detailed: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, engine := state(t)
			st.PlanJSON = tc.plan
			e := tc.est(t)
			e.Engine = engine
			rep := e.Estimate(t.Context(), st)
			got := outcome{rep.Estimate.Skipped, rep.Estimate.Reason, rep.Estimate.Monthly, rep.Priced, rep.Detail != ""}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s\ndetail: %s", diff, rep.Detail)
			}
		})
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
	st, engine := state(t)
	e := Estimator{Bin: printing(t, "infracost-breakdown.json", check), APIKey: "ico-test-key", Env: env, Engine: engine}
	if rep := e.Estimate(t.Context(), st); rep.Estimate.Skipped {
		t.Errorf("estimate skipped: %s", rep.Detail)
	}
}
