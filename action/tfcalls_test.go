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
	"github.com/nova-platform/nova/stages/apply"
)

// TestRunsStartNoMoreTerraformThanAHuman: the terraform commands each
// command starts, with the real binary behind a wrapper that names them.
// One version probe per run (terraform-exec asks before the first command
// of a workspace, and Nova's run is one workspace), one init and one show;
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
		{"first run applies", []string{"run"}, []string{"version", "init", "plan", "show", "apply", "output"}},
		{"no-change run", []string{"run"}, []string{"version", "init", "plan", "show"}},
		{"plan job", []string{"plan"}, []string{"version", "init", "plan", "show"}},
		{"apply job", []string{"apply"}, []string{"version", "init", "show", "apply", "output"}},
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
		// Nothing was applied, and the evidence says so as it always has:
		// the apply stage's event, naming the plan, with applied false.
		if s := stage(v, "apply"); s.Verdict != runner.Pass || !strings.Contains(s.Summary, "nothing to apply") {
			t.Errorf("no-change run: apply %s %q", s.Verdict, s.Summary)
		}
		events := readEvents(t, v.EventsFile)
		i := slices.IndexFunc(events, func(e runner.Event) bool { return e.Type == runner.EventApplyCompleted })
		if i < 0 {
			t.Fatalf("no-change run recorded no %s: %v", runner.EventApplyCompleted, eventTypes(events))
		}
		var d runner.StageEventData
		var data apply.Data
		if err := json.Unmarshal(events[i].Data, &d); err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(d.Result, &data); err != nil {
			t.Fatal(err)
		}
		if data.Applied || data.Digest != v.PlanDigest || data.Changes != (runner.ChangeSummary{}) || data.Outputs != nil {
			t.Errorf("no-change run's %s: %+v, want not applied, plan %s", runner.EventApplyCompleted, data, v.PlanDigest)
		}
	}
}

// TestAPrePlanFailurePlansNothing: terraform init starts as soon as the
// contract is resolved, beside the pre-plan stages, but nothing reads the
// state or plans until they pass: a run that its own contract policy
// stops has run no terraform but version and init, and has let go of the
// contract's run lock, so the next run (its contract fixed) plans and
// applies.
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
	if got := commands(); len(got) > 2 || !slices.Equal(got, []string{"version", "init"}[:len(got)]) {
		t.Errorf("a run stopped by its pre-plan policy ran terraform %v; want at most version and init", got)
	}
	c.writeContract(helloContract("world", "dev"))
	code, v, stderr = c.nova(ctx, "run")
	if code != ExitPass || stage(v, "apply").Verdict != runner.Pass {
		t.Fatalf("the next run: exit %d\n%s", code, stderr)
	}
	if got, want := commands(), []string{"version", "init", "plan", "show", "apply", "output"}; !slices.Equal(got, want) {
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
