package nfr

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// estimator is a cost estimator made of a function.
type estimator func(context.Context, *runner.State) runner.CostReport

func (f estimator) Estimate(ctx context.Context, st *runner.State) runner.CostReport {
	return f(ctx, st)
}

func costing(rep runner.CostReport) Option {
	return WithCost(estimator(func(context.Context, *runner.State) runner.CostReport { return rep }))
}

func priced(monthly float64) runner.CostReport {
	return runner.CostReport{Estimate: runner.CostEstimate{Monthly: monthly, Currency: "USD"}, Priced: "root module"}
}

func TestMissingEstimateIsOneSkippedRecord(t *testing.T) {
	tests := []struct {
		name   string
		opts   []Option
		detail string
	}{
		{"no estimator configured", nil, "no cost estimator"},
		{"estimator not installed", []Option{costing(runner.CostReport{Estimate: runner.CostEstimate{Skipped: true, Reason: runner.InfracostNotConfigured}, Detail: "infracost is not installed"})}, "not installed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(100.0)}, nil)
			res := runStage(t, st, tc.opts...)
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
	res := runStage(t, st, costing(priced(23.02)))
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
		monthly float64
		want    outcome
	}{
		{"within the ceiling", 50, 23.02, outcome{CostRuleID, runner.High, runner.PCRPass, "", ""}},
		{"over the ceiling", 20, 23.02, outcome{CostRuleID, runner.High, runner.PCRFail, "", runner.NFRBudgetExceeded}},
		{"nothing priced", 0, 0, outcome{CostRuleID, runner.High, runner.PCRPass, "", ""}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(tc.ceiling)}, nil)
			res := runStage(t, st, costing(priced(tc.monthly)))
			if diff := cmp.Diff([]outcome{tc.want}, outcomes(res.PCRs)); diff != "" {
				t.Errorf("(-want +got)\n%s\n%s", diff, res.PCRs[0].Message)
			}
			if st.Cost.Skipped || st.Cost.Monthly != tc.monthly {
				t.Errorf("cost %+v, want %.2f", *st.Cost, tc.monthly)
			}
		})
	}
}

func TestFailedEstimateIsAnErrorRecordNotAStop(t *testing.T) {
	st := microservice(t, runner.NFR{MonthlyCostCeiling: ptr(100.0)}, nil)
	res := runStage(t, st, costing(runner.CostReport{Estimate: runner.CostEstimate{Skipped: true, Reason: runner.InfracostFailed}, Detail: "Error: Invalid API key"}))
	want := []outcome{{CostRuleID, runner.High, runner.PCRError, "", runner.InfracostFailed}}
	if diff := cmp.Diff(want, outcomes(res.PCRs)); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if !strings.Contains(res.PCRs[0].Message, "Invalid API key") {
		t.Errorf("message %q lacks the detail", res.PCRs[0].Message)
	}
	if res.Verdict != runner.Pass || !st.Cost.Skipped || st.Cost.Reason != runner.InfracostFailed {
		t.Errorf("verdict %s cost %+v: a failed estimate never stops the run", res.Verdict, *st.Cost)
	}
}
