package registry

import (
	"encoding/json"
	"reflect"
	"slices"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func TestEmbeddedRegistryLoads(t *testing.T) {
	reg, err := Load(Embedded())
	if err != nil {
		t.Fatalf("loading the shipped registry: %v", err)
	}
	if _, ok := reg.Stack("hello"); !ok {
		t.Fatal("shipped registry has no hello stack")
	}
	for _, s := range reg.Stacks() {
		c := &runner.Contract{ID: "6f1c2b1e-3d4a-4b5c-8d9e-0f1a2b3c4d5e", Stack: s.Name, Environment: runner.Dev, Inputs: sampleInputs(s)}
		if _, findings := reg.Resolve(c); len(findings) > 0 {
			t.Errorf("stack %s does not resolve with its sample inputs: %+v", s.Name, findings)
		}
	}
}

// LoadEmbedded skips parsing the modules' Terraform on the strength of
// this test: the embedded registry passes Load's comparison of module.yaml
// with its Terraform, and LoadEmbedded gives exactly what Load gives.
func TestEmbeddedRegistryAgreesWithItsTerraform(t *testing.T) {
	full, err := Load(Embedded())
	if err != nil {
		t.Fatalf("the embedded registry fails Load: %v", err)
	}
	trusted, err := LoadEmbedded()
	if err != nil {
		t.Fatalf("LoadEmbedded: %v", err)
	}
	if len(full.modules) == 0 || len(full.stacks) == 0 {
		t.Fatalf("the embedded registry has %d modules and %d stacks", len(full.modules), len(full.stacks))
	}
	if !reflect.DeepEqual(full, trusted) {
		t.Fatal("LoadEmbedded loads another registry than Load(Embedded())")
	}
}

// sampleInputs fills every required stack input with a value of its type.
func sampleInputs(s *Stack) map[string]any {
	in := map[string]any{}
	for _, i := range s.Inputs {
		if i.HasDefault {
			continue
		}
		switch i.Type.Kind {
		case "string":
			in[i.Name] = "sample"
		case "number":
			in[i.Name] = json.Number("1")
		case "bool":
			in[i.Name] = true
		case "list", "set":
			in[i.Name] = []any{}
		default:
			in[i.Name] = map[string]any{}
		}
	}
	return in
}

func TestStackModules(t *testing.T) {
	reg, err := Load(Embedded())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		want []string
		ok   bool
	}{
		{"hello", []string{"hello-message", "hello-echo"}, true},
		{"microservice", []string{"ecs-service", "s3-bucket", "dynamodb-table"}, true},
		{"hello-echo", []string{"hello-echo"}, true}, // a module named directly
		{"nothing", nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := reg.StackModules(tt.name)
			if ok != tt.ok || !slices.Equal(got, tt.want) {
				t.Errorf("StackModules(%q) = %v, %v; want %v, %v", tt.name, got, ok, tt.want, tt.ok)
			}
		})
	}
}
