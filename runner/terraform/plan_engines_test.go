package terraform

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// planned is what one engine made of the hello stack.
type planned struct {
	engine, digest string
	resources      []runner.ResourceChange
	changes        runner.ChangeSummary
}

// TestPlanOnEachEngine plans the hello stack with each real engine: both
// plan the same resource changes and read their plans the same way, the
// digest of a plan is stable across reads, and it names the engine at its
// version, so the same contract at the same commit digests differently on
// each engine and no approval of one is taken for the other.
func TestPlanOnEachEngine(t *testing.T) {
	reg, err := registry.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	var got []planned
	for _, engine := range terraformtest.Engines {
		t.Run(engine, func(t *testing.T) {
			got = append(got, planOn(t, reg, engine))
		})
	}
	if len(got) != len(terraformtest.Engines) {
		t.Fatalf("planned on %d engines of %d", len(got), len(terraformtest.Engines))
	}
	tf, tofu := got[0], got[1]
	if diff := cmp.Diff(tf.resources, tofu.resources); diff != "" {
		t.Errorf("the engines plan different changes (-terraform +opentofu):\n%s", diff)
	}
	if tf.changes != tofu.changes || tf.changes.Add == 0 {
		t.Errorf("change summaries %+v and %+v", tf.changes, tofu.changes)
	}
	if tf.digest == tofu.digest {
		t.Error("the plan digest does not tell the engines apart")
	}
}

func planOn(t *testing.T, reg *registry.Registry, engine string) planned {
	t.Helper()
	bin := terraformtest.Binary(t, engine)
	c := &runner.Contract{APIVersion: runner.APIVersion, ID: "0c0ffee0-1111-4222-8333-444455556666", Stack: "hello", Environment: runner.Dev,
		Engine: engine, Inputs: map[string]any{"audience": "engines", "repeat": json.Number("2")}}
	target, findings := reg.Resolve(c)
	if len(findings) > 0 {
		t.Fatalf("resolve: %+v", findings)
	}
	e := &Engine{Registry: reg, StateDir: t.TempDir(), Terraform: Options{ExecPath: bin, Env: map[string]string{"PATH": os.Getenv("PATH")}}, OpenTofu: bin}
	root, runDir := filepath.Join(t.TempDir(), "root"), t.TempDir()
	if err := e.Render(root, c, target); err != nil {
		t.Fatal(err)
	}
	ws, err := e.Open(t.Context(), root, runDir, c)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	planFile := filepath.Join(runDir, "tfplan")
	sp, err := ws.Plan(t.Context(), planFile)
	if err != nil {
		t.Fatal(err)
	}
	label, err := e.EngineVersion(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if sp.Engine != label || !sp.HasChanges {
		t.Errorf("plan read by %q (the engine is %q), has changes %t", sp.Engine, label, sp.HasChanges)
	}
	digest, err := sp.Digest("cd", "commit")
	if err != nil {
		t.Fatal(err)
	}
	again, err := ws.Show(t.Context(), planFile)
	if err != nil {
		t.Fatal(err)
	}
	if d, _ := again.Digest("cd", "commit"); d != digest {
		t.Errorf("the plan digests to %s read again, %s first", d, digest)
	}
	var plan struct {
		FormatVersion string `json:"format_version"`
	}
	if err := json.Unmarshal(sp.JSON, &plan); err != nil || plan.FormatVersion == "" {
		t.Errorf("plan JSON without its format version: %v", err)
	}
	resources := slices.Clone(sp.Resources)
	slices.SortFunc(resources, func(a, b runner.ResourceChange) int { return strings.Compare(a.Address, b.Address) })
	return planned{engine: engine, digest: digest, resources: resources, changes: sp.Changes}
}
