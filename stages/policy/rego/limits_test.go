package rego

import (
	"runtime"
	"testing"
	"testing/fstest"
	"time"

	"github.com/nova-platform/nova/runner"
)

// TestConsumerPoliciesHaveLimits evaluates policies a hostile change could
// carry: each must end quickly, in little memory, as a critical error
// record with POLICY_LIMIT_EXCEEDED — and ordinary ranges keep working.
func TestConsumerPoliciesHaveLimits(t *testing.T) {
	tests := []struct {
		name, body string
		want       runner.PCRResult
	}{
		{"a range of 300 million numbers", `deny contains "x" if { count([x | some x in numbers.range(1, 300000000)]) > 0 }`, runner.PCRError},
		{"a range with a step", `deny contains "x" if { count(numbers.range_step(300000000, 1, 1)) > 0 }`, runner.PCRError},
		{"a loop past the deadline", `deny contains "x" if { count([1 | some i in numbers.range(1, 99999); some j in numbers.range(1, 99999)]) < 0 }`, runner.PCRError},
		{"a small range still works", `deny contains msg if { r := numbers.range(1, 3); count(r) == 3; msg := sprintf("%v", [r]) }`, runner.PCRFail},
		{"a small descending range with a step", `deny contains msg if { r := numbers.range_step(9, 1, 4); r == [9, 5, 1]; msg := "ok" }`, runner.PCRFail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fsys := fstest.MapFS{"limits.rego": {Data: []byte("package contract\n\n" + tt.body + "\n")}}
			e := newEngine(t, WithConsumerPolicies(fsys, ".nova/policy"), WithConsumerTimeout(300*time.Millisecond))
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			pcrs := evaluate(t, e, resolved(t, "microservice.yml"))
			runtime.ReadMemStats(&after)
			if grew := after.TotalAlloc - before.TotalAlloc; grew > 512<<20 {
				t.Errorf("evaluation allocated %d MB", grew>>20)
			}
			var got *runner.PCR
			for i := range pcrs {
				if pcrs[i].RuleID == "consumer.contract.deny" {
					got = &pcrs[i]
				}
			}
			if got == nil {
				t.Fatalf("no record of consumer.contract.deny in %+v", pcrs)
			}
			if got.Result != tt.want {
				t.Fatalf("result %s (%s), want %s", got.Result, got.Message, tt.want)
			}
			if tt.want == runner.PCRError && (got.Severity != runner.Critical || runner.PCRReason(*got) != runner.PolicyLimitExceeded) {
				t.Errorf("record %+v, want a critical %s", *got, runner.PolicyLimitExceeded)
			}
		})
	}
}
