package rego

import (
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// A run over many contracts builds one Engine per contract directory; the
// platform rules must be compiled once for all of them, not once each.
func TestEnginesShareOneCompilationOfThePlatformRules(t *testing.T) {
	a, b := newEngine(t), newEngine(t)
	if platformOf(t, a) != platformOf(t, b) {
		t.Fatal("two engines compiled the platform rules twice; New must share one compilation per process")
	}
}

// The shared compilation is evaluated from many goroutines at once (one per
// contract running in parallel); run under -race this proves it safe, and
// every goroutine must see the same records as a lone evaluation.
func TestSharedPlatformEvaluatesConcurrently(t *testing.T) {
	payloads := []runner.PolicyPayload{prePayload(t, "secrets-fail.json"), prePayload(t, "tags-fail.json"), resolved(t, "microservice.yml")}
	want := make([][]outcome, len(payloads))
	for i, p := range payloads {
		want[i] = allOutcomes(evaluate(t, newEngine(t), p))
	}
	var wg sync.WaitGroup
	got := make([][]outcome, 4*len(payloads))
	for i := range got {
		wg.Go(func() {
			pcrs, err := newEngine(t).Evaluate(t.Context(), payloads[i%len(payloads)])
			if err != nil {
				t.Error(err)
				return
			}
			got[i] = allOutcomes(pcrs)
		})
	}
	wg.Wait()
	for i := range got {
		if diff := cmp.Diff(want[i%len(payloads)], got[i]); diff != "" {
			t.Errorf("evaluation %d differs from a lone evaluation (-want +got):\n%s", i, diff)
		}
	}
}

func allOutcomes(pcrs []runner.PCR) []outcome {
	out := make([]outcome, 0, len(pcrs))
	for _, p := range pcrs {
		out = append(out, outcome{p.RuleID, p.Severity, p.Result, p.ResourceRef})
	}
	return out
}
