package registry

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/nova-platform/nova/runner"
)

const testContractID = "6f1c2b1e-3d4a-4b5c-8d9e-0f1a2b3c4d5e"

// typedStack declares a stack input of each type and binds them to one node
// instance, for cases about contract inputs and placeholders. extra is
// appended to the instance's inputs.
func typedStack(extra string) string {
	return `name: s
version: 1.0.0
inputs:
  text: {type: string}
  size: {type: number, default: 1}
  items: {type: list(string), default: []}
  labels: {type: map(list(number)), default: {}}
  data: {type: any, default: null}
instances:
  - name: a
    module: node
    inputs:
      text: ${input.text}
      size: ${input.size}
      items: ${input.items}
      data: ${input.data}
` + extra
}

// plainStack is a stack without inputs whose instances and wires are body.
func plainStack(body string) string { return "name: s\nversion: 1.0.0\n" + body }

func TestResolveRejects(t *testing.T) {
	text := map[string]any{"text": "x"}
	tests := []struct {
		name   string
		stack  string
		inputs map[string]any
		// want lists reason and field of every finding, in order; the
		// messages are for people and not compared.
		want []runner.Finding
	}{
		{
			name:  "module unknown",
			stack: plainStack("instances:\n  - {name: a, module: nope}\n"),
			want:  []runner.Finding{{Reason: runner.ModuleUnknown, Field: "/stack"}},
		},
		{
			name:  "pinned version not in the registry",
			stack: plainStack("instances:\n  - {name: a, module: node, version: 9.9.9, inputs: {text: x}}\n"),
			want:  []runner.Finding{{Reason: runner.ModuleVersionMismatch, Field: "/stack"}},
		},
		{
			name:  "depth 5 resolves",
			stack: chainStack(5),
		},
		{
			name:  "depth 6",
			stack: chainStack(6),
			want:  []runner.Finding{{Reason: runner.StackDepthExceeded, Field: "/stack"}},
		},
		{
			name: "child with two parents",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}, children: [c]}
  - {name: b, module: node, inputs: {text: x}, children: [c]}
  - {name: c, module: node, inputs: {text: x}}
`),
			want: []runner.Finding{{Reason: runner.StackMultipleParents, Field: "/stack"}},
		},
		{
			name: "children cycle",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}, children: [b]}
  - {name: b, module: node, inputs: {text: x}, children: [a]}
`),
			want: []runner.Finding{{Reason: runner.StackCycle, Field: "/stack"}},
		},
		{
			name:  "child of itself",
			stack: plainStack("instances:\n  - {name: a, module: node, inputs: {text: x}, children: [a]}\n"),
			want:  []runner.Finding{{Reason: runner.StackCycle, Field: "/stack"}},
		},
		{
			name: "wire cycle",
			stack: plainStack(`instances:
  - {name: a, module: node}
  - {name: b, module: node}
wires:
  - {from: a.text, to: b.text}
  - {from: b.text, to: a.text}
`),
			want: []runner.Finding{{Reason: runner.StackCycle, Field: "/stack"}},
		},
		{
			name: "wire from number to list",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}, children: [b]}
  - {name: b, module: node, inputs: {text: x}}
wires:
  - {from: a.size, to: b.items}
`),
			want: []runner.Finding{{Reason: runner.WireTypeMismatch, Field: "/stack"}},
		},
		{
			name: "wire from unknown output",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
  - {name: b, module: node, inputs: {text: x}}
wires:
  - {from: a.nope, to: b.size}
`),
			want: []runner.Finding{{Reason: runner.WireEndpointUnknown, Field: "/stack"}},
		},
		{
			name: "wire to unknown input",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
  - {name: b, module: node, inputs: {text: x}}
wires:
  - {from: a.text, to: b.nope}
`),
			want: []runner.Finding{{Reason: runner.WireEndpointUnknown, Field: "/stack"}},
		},
		{
			name: "wire to unknown instance",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
wires:
  - {from: a.text, to: z.text}
`),
			want: []runner.Finding{{Reason: runner.WireEndpointUnknown, Field: "/stack"}},
		},
		{
			name: "wire endpoint without a dot",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
  - {name: b, module: node, inputs: {text: x}}
wires:
  - {from: a, to: b.text}
`),
			want: []runner.Finding{{Reason: runner.WireEndpointUnknown, Field: "/stack"}},
		},
		{
			name: "input both wired and bound",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
  - {name: b, module: node, inputs: {text: x}}
wires:
  - {from: a.text, to: b.text}
`),
			want: []runner.Finding{{Reason: runner.WireInputConflict, Field: "/stack"}},
		},
		{
			name: "input wired twice",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
  - {name: b, module: node, inputs: {text: x}}
  - {name: c, module: node}
wires:
  - {from: a.text, to: c.text}
  - {from: b.text, to: c.text}
`),
			want: []runner.Finding{{Reason: runner.WireInputConflict, Field: "/stack"}},
		},
		{
			name:   "contract input of the wrong type",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "size": "3"},
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/inputs/size"}},
		},
		{
			name:   "contract list element of the wrong type",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "items": []any{"a", json.Number("1")}},
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/inputs/items"}},
		},
		{
			name:   "contract nested map element of the wrong type",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "labels": map[string]any{"a": []any{json.Number("1"), "two"}}},
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/inputs/labels"}},
		},
		{
			name:   "contract input null",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "data": nil},
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/inputs/data"}},
		},
		{
			// The depth limit's wording inside a key must not turn a type
			// mismatch into a depth finding.
			name:   "map key reading like the depth limit",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "labels": map[string]any{"value nests deeper than 32 levels": "x"}},
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/inputs/labels"}},
		},
		{
			name:   "contract input unknown",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "nope": "x"},
			want:   []runner.Finding{{Reason: runner.InputUnknown, Field: "/inputs/nope"}},
		},
		{
			// The instance's binding then resolves to nothing, so the
			// module's required input is reported as well.
			name:  "contract input required missing",
			stack: typedStack(""),
			want: []runner.Finding{
				{Reason: runner.InputRequiredMissing, Field: "/inputs/text"},
				{Reason: runner.InputRequiredMissing, Field: "/stack"},
			},
		},
		{
			name:  "module input required but unbound",
			stack: plainStack("instances:\n  - {name: a, module: node}\n"),
			want:  []runner.Finding{{Reason: runner.InputRequiredMissing, Field: "/stack"}},
		},
		{
			name:   "binding of an input the module does not take",
			stack:  typedStack("      nope: x\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputUnknown, Field: "/stack"}},
		},
		{
			name:   "binding of the wrong type",
			stack:  plainStack("inputs:\n  text: {type: string}\ninstances:\n  - {name: a, module: node, inputs: {text: x, size: \"${input.text}\"}}\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/stack"}},
		},
		{
			name:   "placeholder of an unknown input",
			stack:  typedStack("      labels: {a: \"${input.nope}\"}\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputReferenceUnknown, Field: "/stack"}},
		},
		{
			name:   "placeholder of an unknown Nova value",
			stack:  typedStack("      labels: {a: \"${nova.region}\"}\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputReferenceUnknown, Field: "/stack"}},
		},
		{
			name:   "placeholder with a misspelt namespace",
			stack:  typedStack("      labels: {a: \"${inputs.text}-x\"}\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputReferenceUnknown, Field: "/stack"}},
		},
		{
			name:   "placeholder with an upper-case name",
			stack:  typedStack("      labels: {a: \"${input.Text}\"}\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputReferenceUnknown, Field: "/stack"}},
		},
		{
			name:   "list placed inside a string",
			stack:  typedStack("      labels: {a: \"x-${input.items}\"}\n"),
			inputs: text,
			want:   []runner.Finding{{Reason: runner.InputTypeMismatch, Field: "/stack"}},
		},
		{
			name: "instance name used twice",
			stack: plainStack(`instances:
  - {name: a, module: node, inputs: {text: x}}
  - {name: a, module: node, inputs: {text: x}}
`),
			want: []runner.Finding{{Reason: runner.InstanceNameInvalid, Field: "/stack"}},
		},
		{
			name:  "instance name not an identifier",
			stack: plainStack("instances:\n  - {name: My-Node, module: node, inputs: {text: x}}\n"),
			want:  []runner.Finding{{Reason: runner.InstanceNameInvalid, Field: "/stack"}},
		},
		{
			name:  "child not declared",
			stack: plainStack("instances:\n  - {name: a, module: node, inputs: {text: x}, children: [z]}\n"),
			want:  []runner.Finding{{Reason: runner.StackInstanceUnknown, Field: "/stack"}},
		},
		{
			name:   "contract value nested 32 levels resolves",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "data": nested(32, "x")},
		},
		{
			name:   "contract value nested 40 levels",
			stack:  typedStack(""),
			inputs: map[string]any{"text": "x", "data": nested(40, "x")},
			want:   []runner.Finding{{Reason: runner.InputValueTooDeep, Field: "/inputs/data"}},
		},
		{
			name:  "stack value nested 40 levels",
			stack: plainStack("instances:\n  - {name: a, module: node, inputs: {text: x, data: " + strings.Repeat("[", 40) + "x" + strings.Repeat("]", 40) + "}}\n"),
			want:  []runner.Finding{{Reason: runner.InputValueTooDeep, Field: "/stack"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := Load(writeRegistry(t, withNode(map[string]string{"stacks/s.yaml": tt.stack})))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			target, findings := reg.Resolve(&runner.Contract{ID: testContractID, Stack: "s", Environment: runner.Dev, Inputs: tt.inputs})
			if diff := cmp.Diff(tt.want, findings, cmpopts.IgnoreFields(runner.Finding{}, "Message")); diff != "" {
				t.Errorf("findings (-want +got):\n%s\nall findings: %+v", diff, findings)
			}
			if (target == nil) != (len(findings) > 0) {
				t.Errorf("target = %v with %d findings; want a target exactly when there are none", target, len(findings))
			}
		})
	}
}

func TestResolveUnknownStack(t *testing.T) {
	reg, err := Load(Embedded())
	if err != nil {
		t.Fatal(err)
	}
	target, findings := reg.Resolve(&runner.Contract{ID: testContractID, Stack: "nope", Environment: runner.Dev})
	want := []runner.Finding{{Reason: runner.StackUnknown, Field: "/stack"}}
	if diff := cmp.Diff(want, findings, cmpopts.IgnoreFields(runner.Finding{}, "Message")); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if target != nil {
		t.Errorf("target = %+v, want nil", target)
	}
}
