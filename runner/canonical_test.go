package runner

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCanonical(t *testing.T) {
	type inner struct {
		Z string `json:"z"`
		A string `json:"a"`
	}
	tests := []struct {
		name string
		in   any
		want string
	}{
		{"struct fields sorted", inner{Z: "1", A: "2"}, `{"a":"2","z":"1"}`},
		{"map keys sorted", map[string]any{"b": 1, "a": []any{true, nil}}, `{"a":[true,null],"b":1}`},
		{"html not escaped", map[string]string{"x": "<a&b>"}, `{"x":"<a&b>"}`},
		{"raw message normalized", json.RawMessage(`{ "b" : 1, "a" : 2 }`), `{"a":2,"b":1}`},
		{"numbers keep their text", json.RawMessage(`{"n": 1.50}`), `{"n":1.50}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Canonical(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Canonical = %s, want %s", got, tt.want)
			}
		})
	}
}

func TestPlanDigest(t *testing.T) {
	rc := []map[string]any{{"address": "a", "change": map[string]any{"actions": []string{"create"}}}}
	base, err := PlanDigest(rc, "cd", "abc")
	if err != nil {
		t.Fatal(err)
	}
	var nilSlice []map[string]any
	emptyA, _ := PlanDigest(nilSlice, "cd", "abc")
	emptyB, _ := PlanDigest([]any{}, "cd", "abc")
	if emptyA != emptyB {
		t.Errorf("nil and empty resource_changes digest differently: %s vs %s", emptyA, emptyB)
	}
	for name, other := range map[string][3]any{
		"other changes":  {[]map[string]any{{"address": "b"}}, "cd", "abc"},
		"other contract": {rc, "cd2", "abc"},
		"other commit":   {rc, "cd", "abd"},
	} {
		d, _ := PlanDigest(other[0], other[1].(string), other[2].(string))
		if d == base {
			t.Errorf("%s: digest unchanged", name)
		}
	}
	again, _ := PlanDigest(rc, "cd", "abc")
	if again != base || len(base) != 64 {
		t.Errorf("digest not stable or not sha256 hex: %s / %s", base, again)
	}
}

func TestRedactedTargetKeepsShapeNotValues(t *testing.T) {
	full := &TargetStack{Stack: "s", Instances: []Instance{{Name: "a", Inputs: map[string]Value{"password": {Type: "string", Value: "hunter2"}}, Wires: map[string]Ref{"x": {Instance: "b", Output: "o"}}}}}
	red := full.Redacted()
	if got := red.Instances[0].Inputs["password"]; got.Value != nil || got.Type != "string" {
		t.Errorf("redacted input = %+v, want type only", got)
	}
	if full.Instances[0].Inputs["password"].Value != "hunter2" {
		t.Error("Redacted changed the original target")
	}
	if red.Instances[0].Wires["x"].Instance != "b" {
		t.Error("Redacted lost the wires")
	}
	b, _ := Canonical(red)
	if strings.Contains(string(b), "hunter2") {
		t.Errorf("redacted target still holds the value: %s", b)
	}
}
