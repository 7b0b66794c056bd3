package confidence

import (
	"context"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// grantFunc is a break-glass waiver answering from a function.
type grantFunc func(ctx context.Context, contractID string, env runner.Environment) (*runner.BreakGlassState, error)

func (f grantFunc) ActiveGrant(ctx context.Context, contractID string, env runner.Environment) (*runner.BreakGlassState, error) {
	return f(ctx, contractID, env)
}

// TestBreakGlassAcceptsOnlyAScoreBelowTheThreshold: a grant that holds
// turns a halt into a pass naming the grant; a blocked score (a critical
// finding, a missing input) stays blocked, and without a grant nothing
// changes.
func TestBreakGlassAcceptsOnlyAScoreBelowTheThreshold(t *testing.T) {
	verified := verifierFunc(func(context.Context, string, string) (runner.CommitSignature, error) {
		return runner.CommitVerified, nil
	})
	high := []runner.PCR{{Engine: runner.EngineRego, Severity: runner.High, Result: runner.PCRFail}}
	critical := []runner.PCR{{Engine: runner.EngineRego, Severity: runner.Critical, Result: runner.PCRFail}}
	holds := grantFunc(func(_ context.Context, id string, env runner.Environment) (*runner.BreakGlassState, error) {
		if id != "c" || env != runner.Prod {
			t.Errorf("asked for the grant of %s in %s, want c in prod", id, env)
		}
		return &runner.BreakGlassState{Grant: "grant-1"}, nil
	})
	none := grantFunc(func(context.Context, string, runner.Environment) (*runner.BreakGlassState, error) { return nil, nil })
	for _, tc := range []struct {
		name    string
		waiver  runner.BreakGlassWaiver
		mutate  func(*runner.State)
		verdict runner.Verdict
		grant   string
		action  string
	}{
		{"below the threshold under a grant", holds, func(st *runner.State) { st.PCRs = high }, runner.Pass, "grant-1", "proceed"},
		{"below the threshold without one", none, func(st *runner.State) { st.PCRs = high }, runner.Fail, "", "halt"},
		{"a critical finding under a grant", holds, func(st *runner.State) { st.PCRs = critical }, runner.Fail, "", "block"},
		{"a missing input under a grant", holds, func(st *runner.State) { st.Completed = []string{"schema", "policy"} }, runner.Fail, "", "block"},
		{"a passing score needs no grant", holds, func(st *runner.State) { st.Contract.Environment = runner.QA }, runner.Pass, "", "proceed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := stageState(t, runner.Prod)
			tc.mutate(st)
			res, err := New(runner.PrePlan, verified, WithBreakGlass(tc.waiver)).Run(t.Context(), st)
			if err != nil {
				t.Fatal(err)
			}
			if res.Verdict != tc.verdict || st.Confidence.BreakGlass != tc.grant {
				t.Fatalf("verdict %s grant %q (%s), want %s %q", res.Verdict, st.Confidence.BreakGlass, res.Summary, tc.verdict, tc.grant)
			}
			d := res.Also[0].Data.(Decision)
			if d.ChosenAction != tc.action || d.HumanOverride != (tc.grant != "") {
				t.Errorf("decision %s override %v, want %s", d.ChosenAction, d.HumanOverride, tc.action)
			}
		})
	}
}
