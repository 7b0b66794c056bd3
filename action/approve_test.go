package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

// TestApproveAtTheCommandsClock: `nova approve` stamps its signed claim,
// and records its events, at the command's clock (Env.Now), as every
// other command does, not at the wall clock: a claim's time is what the
// gate compares with when the plan was on show.
func TestApproveAtTheCommandsClock(t *testing.T) {
	c := newHelloConsumer(t, runner.EngineTerraform)
	c.step(ExitPass, "", "run")
	c.step(ExitAwaitingApproval, runner.ApprovalRequired, "run", "--env", "qa")

	clock := time.Now().Add(90 * time.Minute).UTC().Truncate(time.Second)
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{
		Args:   []string{"approve", "--env", "qa", "--as", "qa-lead", "--dir", c.dir},
		Getenv: func(k string) string { return c.env[k] }, Stdout: &stdout, Stderr: &stderr,
		Now: func() time.Time { return clock },
	}))
	if code != ExitPass {
		t.Fatalf("approve: exit %d\n%s%s", code, stdout.String(), stderr.String())
	}
	out := c.decide(ExitPass, "evidence", "query", "--type", runner.EventApprovalRecorded, "--output", "jsonl")
	var found int
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e runner.Event
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("query line %q: %v", line, err)
		}
		var a runner.ApprovalRecord
		if err := runner.DecodeEventData(e, &a); err != nil {
			t.Fatal(err)
		}
		found++
		if a.Claim == nil || !a.Claim.Claim.At.Equal(clock) || a.At == nil || !a.At.Equal(clock) {
			t.Errorf("the approval's claim is stamped %v (record %v), want the command's clock %v", a.Claim, a.At, clock)
		}
		if !e.Time.Equal(clock) {
			t.Errorf("the approval was recorded at %v, want the command's clock %v", e.Time, clock)
		}
	}
	if found != 1 {
		t.Fatalf("%d approvals recorded, want 1:\n%s", found, out)
	}
}
