package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestRunsStartNoMoreTerraformThanAHuman: the terraform commands each
// command starts, with the real binary behind a wrapper that names them.
// No version probe while terraform's commands succeed (it accepted Nova's
// flags, and the plan names its version), one init and one show per run;
// a plan without changes is not applied, and its apply stage still records
// that nothing was applied; an apply job reads the bundle's plan once,
// before authorizing it, and applies it by the hash of the file it read.
func TestRunsStartNoMoreTerraformThanAHuman(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("world", "dev"))
	commands := countTerraform(t, c)
	steps := []struct {
		name string
		args []string
		want []string
	}{
		// A run asks terraform its version to name its change (the
		// version is part of it), and its workspace asks again before
		// init: terraform-exec's own check.
		{"first run applies", []string{"run"}, []string{"version", "version", "init", "plan", "show", "apply", "output"}},
		// The environment applied this change last: the receipt answers,
		// with no workspace opened.
		{"no-change run", []string{"run"}, []string{"version"}},
		{"plan job", []string{"plan"}, []string{"version", "version", "init", "plan", "show"}},
		// The bundle is loaded (and its plan shown) before the change is
		// named.
		{"apply job", []string{"apply"}, []string{"version", "init", "show", "version", "apply", "output"}},
	}
	for _, step := range steps {
		if step.name == "plan job" {
			c.writeContract(helloContract("changed", "dev"))
		}
		code, v, stderr := c.nova(ctx, step.args...)
		if code != ExitPass {
			t.Fatalf("%s: exit %d\n%s", step.name, code, stderr)
		}
		if got := commands(); !slices.Equal(got, step.want) {
			t.Errorf("%s: terraform %v, want %v", step.name, got, step.want)
		}
		if step.name != "no-change run" {
			continue
		}
		// Nothing was planned or applied, and the evidence says why: the
		// receipt of the change's apply.
		events := readEvents(t, v.EventsFile)
		if got := eventTypes(events); !slices.Equal(got, []string{runner.EventContractValidated, runner.EventChangeReceipt}) {
			t.Fatalf("no-change run recorded %v", got)
		}
		var d runner.StageEventData
		var data runner.ReceiptRecord
		if err := json.Unmarshal(events[1].Data, &d); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d.Result, &data); err != nil {
			t.Fatal(err)
		}
		if data.Change == "" || data.Receipt == "" || !strings.Contains(stage(v, "change").Summary, "nothing to do") {
			t.Errorf("no-change run's receipt: %+v", data)
		}
	}
}

// TestAPrePlanFailurePlansNothing: terraform init starts as soon as the
// contract is resolved, beside the pre-plan stages, but nothing reads the
// state or plans until they pass: a run that its own contract policy
// stops has run no terraform but init, and has let go of the contract's
// run lock, so the next run (its contract fixed) plans and applies.
func TestAPrePlanFailurePlansNothing(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("blocked", "dev"))
	writeFile(t, filepath.Join(c.dir, ".nova", "policy", "audience.rego"), `package contract

# METADATA
# custom:
#   severity: critical
deny contains msg if {
	input.inputs.audience == "blocked"
	msg := "this audience is blocked"
}
`)
	commands := countTerraform(t, c)
	code, v, stderr := c.nova(ctx, "run")
	if code != ExitFail || stage(v, "policy").Verdict != runner.Fail {
		t.Fatalf("blocked contract: exit %d, policy %s\n%s", code, stage(v, "policy").Verdict, stderr)
	}
	// Its change was named (a version), and its workspace may have
	// started (a version, then init) beside the pre-plan stages.
	if got := commands(); len(got) == 0 || len(got) > 3 || !slices.Equal(got, []string{"version", "version", "init"}[:len(got)]) {
		t.Errorf("a run stopped by its pre-plan policy ran terraform %v; want at most version, version and init", got)
	}
	c.writeContract(helloContract("world", "dev"))
	code, v, stderr = c.nova(ctx, "run")
	if code != ExitPass || stage(v, "apply").Verdict != runner.Pass {
		t.Fatalf("the next run: exit %d\n%s", code, stderr)
	}
	if got, want := commands(), []string{"version", "version", "init", "plan", "show", "apply", "output"}; !slices.Equal(got, want) {
		t.Errorf("the next run: terraform %v, want %v", got, want)
	}
}

// countTerraform has c run the real terraform behind a wrapper that names
// each command; commands returns the names since its last call.
func countTerraform(t *testing.T, c *consumer) (commands func() []string) {
	t.Helper()
	calls := filepath.Join(t.TempDir(), "calls")
	wrapper := filepath.Join(t.TempDir(), "terraform")
	writeFile(t, wrapper, fmt.Sprintf("#!/bin/sh\necho \"$1\" >> %q\nexec %q \"$@\"\n", calls, mustLookPath(t)))
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	c.extra = []string{"--terraform", wrapper}
	return func() []string {
		t.Helper()
		b, err := os.ReadFile(calls)
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		_ = os.Remove(calls)
		return strings.Fields(string(b))
	}
}
