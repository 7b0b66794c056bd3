package registry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestResolveTargets(t *testing.T) {
	reg, err := Load(Embedded())
	if err != nil {
		t.Fatalf("loading the shipped registry: %v", err)
	}
	str := func(s string) runner.Value { return runner.Value{Type: "string", Value: s} }
	num := func(n string) runner.Value { return runner.Value{Type: "number", Value: json.Number(n)} }
	boolean := func(b bool) runner.Value { return runner.Value{Type: "bool", Value: b} }
	strList := func(items ...any) runner.Value { return runner.Value{Type: "list(string)", Value: items} }
	strMap := func(m map[string]any) runner.Value { return runner.Value{Type: "map(string)", Value: m} }

	const kmsKey = "arn:aws:kms:eu-west-1:123456789012:key/0d1f6f1e-5b8a-4c1e-9a57-6f0e2c9b7a31"
	microserviceTags := strMap(map[string]any{
		"nova:owner":       "team-orders",
		"nova:cost-center": "cc-4711",
		"nova:contract":    testContractID,
		"nova:environment": "qa",
	})

	tests := []struct {
		name     string
		contract runner.Contract
		want     *runner.TargetStack
	}{
		{
			name:     "hello with defaults",
			contract: runner.Contract{ID: testContractID, Stack: "hello", Environment: runner.Dev},
			want: &runner.TargetStack{
				Stack:        "hello",
				StackVersion: "1.0.0",
				Instances: []runner.Instance{
					{
						Name: "message", Module: "hello-message", Version: "1.0.0", Pinned: true, Depth: 1,
						Inputs: map[string]runner.Value{
							"greeting": str("Hello"),
							"audience": str("world"),
							"tags": strMap(map[string]any{
								"nova:contract":    testContractID,
								"nova:environment": "dev",
								"nova:stack":       "hello",
								"nova:owner":       "nova-examples",
								"nova:cost-center": "cc-0000",
							}),
						},
						Outputs: []string{"text", "id"},
					},
					{
						Name: "echo", Module: "hello-echo", Version: "1.0.0", Pinned: true, Parent: "message", Depth: 2,
						Inputs:  map[string]runner.Value{"repeat": num("1")},
						Wires:   map[string]runner.Ref{"text": {Instance: "message", Output: "text"}},
						Outputs: []string{"echoed"},
					},
				},
			},
		},
		{
			name: "hello with inputs",
			contract: runner.Contract{
				ID: testContractID, Stack: "hello", Environment: runner.Prod,
				Inputs: map[string]any{"audience": "Nova", "repeat": json.Number("3")},
			},
			want: &runner.TargetStack{
				Stack:        "hello",
				StackVersion: "1.0.0",
				Instances: []runner.Instance{
					{
						Name: "message", Module: "hello-message", Version: "1.0.0", Pinned: true, Depth: 1,
						Inputs: map[string]runner.Value{
							"greeting": str("Hello"),
							"audience": str("Nova"),
							"tags": strMap(map[string]any{
								"nova:contract":    testContractID,
								"nova:environment": "prod",
								"nova:stack":       "hello",
								"nova:owner":       "nova-examples",
								"nova:cost-center": "cc-0000",
							}),
						},
						Outputs: []string{"text", "id"},
					},
					{
						Name: "echo", Module: "hello-echo", Version: "1.0.0", Pinned: true, Parent: "message", Depth: 2,
						Inputs:  map[string]runner.Value{"repeat": num("3")},
						Wires:   map[string]runner.Ref{"text": {Instance: "message", Output: "text"}},
						Outputs: []string{"echoed"},
					},
				},
			},
		},
		{
			name: "microservice",
			contract: runner.Contract{
				ID: testContractID, Stack: "microservice", Environment: runner.QA,
				Inputs: map[string]any{
					"name":                  "orders",
					"image":                 "123456789012.dkr.ecr.eu-west-1.amazonaws.com/orders@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
					"cluster_arn":           "arn:aws:ecs:eu-west-1:123456789012:cluster/qa",
					"subnet_ids":            []any{"subnet-0a1", "subnet-0b2"},
					"security_group_ids":    []any{"sg-0c3"},
					"kms_key_arn":           kmsKey,
					"owner":                 "team-orders",
					"cost_center":           "cc-4711",
					"desired_count":         json.Number("3"),
					"environment_variables": map[string]any{"LOG_LEVEL": "info"},
				},
			},
			want: &runner.TargetStack{
				Stack:        "microservice",
				StackVersion: "1.0.0",
				Instances: []runner.Instance{
					{
						Name: "service", Module: "ecs-service", Version: "1.0.0", Pinned: true, Depth: 1,
						Inputs: map[string]runner.Value{
							"name":                  str("orders-qa"),
							"image":                 str("123456789012.dkr.ecr.eu-west-1.amazonaws.com/orders@sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"),
							"cluster_arn":           str("arn:aws:ecs:eu-west-1:123456789012:cluster/qa"),
							"subnet_ids":            strList("subnet-0a1", "subnet-0b2"),
							"security_group_ids":    strList("sg-0c3"),
							"kms_key_arn":           str(kmsKey),
							"desired_count":         num("3"),
							"cpu":                   num("256"),
							"memory":                num("512"),
							"container_port":        num("8080"),
							"environment_variables": strMap(map[string]any{"LOG_LEVEL": "info"}),
							"tags":                  microserviceTags,
						},
						Wires: map[string]runner.Ref{
							"bucket_arn": {Instance: "assets", Output: "bucket_arn"},
							"table_arn":  {Instance: "table", Output: "table_arn"},
						},
						Outputs: []string{"service_name", "service_arn", "task_role_arn"},
					},
					{
						Name: "assets", Module: "s3-bucket", Version: "1.0.0", Pinned: true, Parent: "service", Depth: 2,
						Inputs: map[string]runner.Value{
							"bucket_name": str("orders-qa-6f1c2b1e-assets"),
							"kms_key_arn": str(kmsKey),
							"tags":        microserviceTags,
						},
						Outputs: []string{"bucket_arn", "bucket_name", "bucket_regional_domain_name"},
					},
					{
						Name: "table", Module: "dynamodb-table", Version: "1.0.0", Pinned: true, Parent: "service", Depth: 2,
						Inputs: map[string]runner.Value{
							"table_name":                  str("orders-qa-6f1c2b1e"),
							"hash_key":                    str("pk"),
							"range_key":                   str("sk"),
							"kms_key_arn":                 str(kmsKey),
							"deletion_protection_enabled": boolean(true),
							"tags":                        microserviceTags,
						},
						Outputs: []string{"table_arn", "table_name"},
					},
				},
			},
		},
		{
			// An L1 module named as the stack takes the module's inputs,
			// defaults included, as one instance named after it.
			name: "L1 module as the stack",
			contract: runner.Contract{
				ID: testContractID, Stack: "s3-bucket", Environment: runner.Dev,
				Inputs: map[string]any{"bucket_name": "reports-dev", "kms_key_arn": kmsKey, "tags": map[string]any{"team": "data"}},
			},
			want: &runner.TargetStack{
				Stack:        "s3-bucket",
				StackVersion: "1.0.0",
				Instances: []runner.Instance{{
					Name: "s3_bucket", Module: "s3-bucket", Version: "1.0.0", Depth: 1,
					Inputs: map[string]runner.Value{
						"bucket_name":                        str("reports-dev"),
						"kms_key_arn":                        str(kmsKey),
						"versioning":                         boolean(true),
						"noncurrent_version_expiration_days": num("90"),
						"force_destroy":                      boolean(false),
						"tags":                               strMap(map[string]any{"team": "data"}),
					},
					Outputs: []string{"bucket_arn", "bucket_name", "bucket_regional_domain_name"},
				}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, findings := reg.Resolve(&tt.contract)
			if len(findings) > 0 {
				t.Fatalf("findings: %+v", findings)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("target stack (-want +got):\n%s", diff)
			}
		})
	}
}

// A null default leaves the module's own default in force, so the input is
// left out of the target rather than rendered as null.
func TestResolveOmitsNullInputs(t *testing.T) {
	stack := `name: s
version: 1.0.0
inputs:
  data: {type: any, default: null}
instances:
  - name: a
    module: node
    inputs:
      text: x-${nova.stack}-${nova.contract_short}
      data: ${input.data}
      items: ["${input.data}", kept]
`
	reg, err := Load(writeRegistry(t, withNode(map[string]string{"stacks/s.yaml": stack})))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	got, findings := reg.Resolve(&runner.Contract{ID: testContractID, Stack: "s", Environment: runner.Dev})
	if len(findings) > 0 {
		t.Fatalf("findings: %+v", findings)
	}
	want := map[string]runner.Value{
		"text":  {Type: "string", Value: "x-s-6f1c2b1e"},
		"items": {Type: "list(string)", Value: []any{"kept"}},
	}
	if diff := cmp.Diff(want, got.Instance("a").Inputs); diff != "" {
		t.Errorf("inputs of a (-want +got):\n%s", diff)
	}
}

// Instances come parents first; roots, and the children of each parent, in
// the order the stack declares them.
func TestResolveInstancePlaces(t *testing.T) {
	type place struct {
		Name, Parent string
		Depth        int
	}
	tests := []struct {
		name  string
		stack string
		want  []place
	}{
		{
			name:  "chain at the depth limit",
			stack: chainStack(MaxDepth),
			want:  []place{{"na", "", 1}, {"nb", "na", 2}, {"nc", "nb", 3}, {"nd", "nc", 4}, {"ne", "nd", 5}},
		},
		{
			name: "children declared before their parents",
			stack: plainStack(`instances:
  - {name: c, module: node, inputs: {text: x}}
  - {name: b, module: node, inputs: {text: x}, children: [c]}
  - {name: z, module: node, inputs: {text: x}}
  - {name: a, module: node, inputs: {text: x}, children: [d, b]}
  - {name: d, module: node, inputs: {text: x}}
`),
			want: []place{{"z", "", 1}, {"a", "", 1}, {"d", "a", 2}, {"b", "a", 2}, {"c", "b", 3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reg, err := Load(writeRegistry(t, withNode(map[string]string{"stacks/s.yaml": tt.stack})))
			if err != nil {
				t.Fatalf("Load: %v", err)
			}
			target, findings := reg.Resolve(&runner.Contract{ID: testContractID, Stack: "s", Environment: runner.Dev})
			if len(findings) > 0 {
				t.Fatalf("findings: %+v", findings)
			}
			var got []place
			for _, inst := range target.Instances {
				got = append(got, place{inst.Name, inst.Parent, inst.Depth})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("instances (-want +got):\n%s", diff)
			}
		})
	}
}
