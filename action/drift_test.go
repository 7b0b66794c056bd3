package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestDriftEndToEnd, on each engine: apply for real, change the real
// state behind Nova's back, and `nova drift` names the resource and its
// attributes (never their values) in nova.drift.detected, exit 1; after a
// re-apply it records nova.drift.clear, exit 0. A contract changed since
// its last apply has a pending change, which is not drift.
func TestDriftEndToEnd(t *testing.T) {
	forEachEngine(t, func(t *testing.T, engine string) {
		t.Parallel()
		driftEndToEnd(t, engine)
	})
}

func driftEndToEnd(t *testing.T, engine string) {
	ctx := t.Context()
	c := newEngineConsumer(t, engine, helloContract("world", "dev"))
	c.extra = []string{"--commit", "4444444444444444444444444444444444444444"}
	if code, _, stderr := c.nova(ctx, "run"); code != ExitPass {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	code, v, stderr := c.nova(ctx, "drift")
	if code != ExitPass || lastEvent(t, v).Type != runner.EventDriftClear || !strings.Contains(stage(v, "drift").Summary, "matches the configuration last applied") {
		t.Fatalf("drift after apply: exit %d, stages %+v\n%s", code, v.Stages, stderr)
	}

	// Out of band: the state now says something else than was applied.
	state := filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", "dev", "terraform.tfstate")
	data, err := os.ReadFile(state)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, state, strings.ReplaceAll(string(data), "Hello, world!", "Hello, tampered!"))

	code, v, stderr = c.nova(ctx, "drift")
	if code != ExitFail || v.Reason != string(runner.DriftDetected) {
		t.Fatalf("drift after tampering: exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitFail, runner.DriftDetected, stderr)
	}
	events := readEvents(t, v.EventsFile)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
		if strings.Contains(string(e.Data), "tampered") {
			t.Errorf("event %s carries a value: %s", e.Type, e.Data)
		}
	}
	if want := []string{runner.EventContractValidated, runner.EventRunFailed, runner.EventDriftDetected}; !slices.Equal(types, want) {
		t.Errorf("drift events %v, want %v", types, want)
	}
	var rec runner.DriftRecord
	if err := runner.DecodeEventData(events[len(events)-1], &rec); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range rec.Resources {
		if d.Address == "module.message.terraform_data.message" && d.Kind == runner.DriftConfiguration && slices.Contains(d.Attributes, "input") {
			found = true
		}
	}
	if !rec.Drifted || !rec.ConfigurationChecked || !found {
		t.Errorf("drift record %+v does not name module.message.terraform_data.message's input", rec)
	}

	if code, _, stderr := c.nova(ctx, "run"); code != ExitPass {
		t.Fatalf("re-apply: exit %d\n%s", code, stderr)
	}
	if code, v, stderr := c.nova(ctx, "drift"); code != ExitPass || lastEvent(t, v).Type != runner.EventDriftClear {
		t.Fatalf("drift after re-apply: exit %d %+v\n%s", code, v.Stages, stderr)
	}

	c.writeContract(helloContract("everyone", "dev"))
	code, v, stderr = c.nova(ctx, "drift")
	if code != ExitPass || !strings.Contains(stage(v, "drift").Summary, "no drift") {
		t.Fatalf("drift with a pending change: exit %d %+v\n%s", code, v.Stages, stderr)
	}
	var pending runner.DriftRecord
	if err := runner.DecodeEventData(lastEvent(t, v), &pending); err != nil || pending.ConfigurationChecked || !strings.Contains(pending.Note, "changed since") {
		t.Errorf("pending change: %+v %v", pending, err)
	}
}

func lastEvent(t *testing.T, v runView) runner.Event {
	t.Helper()
	events := readEvents(t, v.EventsFile)
	if len(events) == 0 {
		t.Fatal("the run recorded no event")
	}
	return events[len(events)-1]
}
