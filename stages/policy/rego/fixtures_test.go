package rego

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	tfjson "github.com/hashicorp/terraform-json"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// resolved loads a contract from testdata and resolves it through the
// registry shipped with Nova, so pre-plan fixtures are real target stacks.
func resolved(t testing.TB, file string) runner.PolicyPayload {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "contracts", file))
	if err != nil {
		t.Fatal(err)
	}
	c, findings := schema.Parse(data, file, "")
	if len(findings) > 0 {
		t.Fatalf("contract %s: %+v", file, findings)
	}
	reg, err := registry.Load(registry.Embedded())
	if err != nil {
		t.Fatal(err)
	}
	target, findings := reg.Resolve(c)
	if len(findings) > 0 {
		t.Fatalf("resolving %s: %+v", file, findings)
	}
	return runner.PolicyPayload{Phase: runner.PrePlan, Contract: c, Target: target}
}

// prePayload reads a hand-written {contract, target} fixture.
func prePayload(t testing.TB, file string) runner.PolicyPayload {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "pre", file))
	if err != nil {
		t.Fatal(err)
	}
	var p runner.PolicyPayload
	if err := json.Unmarshal(data, &p); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	p.Phase = runner.PrePlan
	return p
}

// planPayload is the microservice contract and target with a plan fixture.
func planPayload(t testing.TB, file string) runner.PolicyPayload {
	t.Helper()
	p := resolved(t, "microservice.yml")
	data, err := os.ReadFile(filepath.Join("testdata", "plan", file))
	if err != nil {
		t.Fatal(err)
	}
	p.Phase, p.Plan = runner.PostPlan, data
	return p
}

// TestPlanFixturesAreTerraformPlans keeps the hand-written plan fixtures in
// the shape terraform-json reads from `terraform show -json`.
func TestPlanFixturesAreTerraformPlans(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "plan", "*.json"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no plan fixtures: %v", err)
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			var p tfjson.Plan
			if err := json.Unmarshal(data, &p); err != nil {
				t.Fatal(err)
			}
			if err := p.Validate(); err != nil {
				t.Fatal(err)
			}
			if len(p.ResourceChanges) == 0 {
				t.Fatal("no resource_changes")
			}
			for _, rc := range p.ResourceChanges {
				if rc.Change == nil || len(rc.Change.Actions) == 0 || rc.Address == "" || rc.Type == "" {
					t.Errorf("resource change %+v is incomplete", rc)
				}
			}
		})
	}
}
