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
	conf := map[string]any{"root_module": map[string]any{"module_calls": map[string]any{"m": map[string]any{"source": "./modules/m"}}}}
	plan := PlanContent{ResourceChanges: rc, Configuration: conf}
	base, err := PlanDigest(plan, "terraform 1.11.4", "cd", "abc")
	if err != nil {
		t.Fatal(err)
	}
	var nilSlice []map[string]any
	emptyA, _ := PlanDigest(PlanContent{ResourceChanges: nilSlice}, "terraform 1.11.4", "cd", "abc")
	emptyB, _ := PlanDigest(PlanContent{ResourceChanges: []any{}, OutputChanges: map[string]any{}}, "terraform 1.11.4", "cd", "abc")
	if emptyA != emptyB {
		t.Errorf("nil and empty parts digest differently: %s vs %s", emptyA, emptyB)
	}
	provisioned := map[string]any{"root_module": map[string]any{"module_calls": map[string]any{"m": map[string]any{"source": "./modules/m",
		"module": map[string]any{"resources": []any{map[string]any{"provisioners": []any{map[string]any{"type": "local-exec"}}}}}}}}}
	const tf = "terraform 1.11.4"
	for name, other := range map[string]struct {
		plan     PlanContent
		engine   string
		contract string
		commit   string
	}{
		"other resource changes": {PlanContent{ResourceChanges: []map[string]any{{"address": "b"}}, Configuration: conf}, tf, "cd", "abc"},
		"other output changes":   {PlanContent{ResourceChanges: rc, Configuration: conf, OutputChanges: map[string]any{"o": map[string]any{"after": 1}}}, tf, "cd", "abc"},
		"a provisioner added":    {PlanContent{ResourceChanges: rc, Configuration: provisioned}, tf, "cd", "abc"},
		"other engine":           {plan, "opentofu 1.12.6", "cd", "abc"},
		"other engine version":   {plan, "terraform 1.11.5", "cd", "abc"},
		"other contract":         {plan, tf, "cd2", "abc"},
		"other commit":           {plan, tf, "cd", "abd"},
	} {
		d, _ := PlanDigest(other.plan, other.engine, other.contract, other.commit)
		if d == base {
			t.Errorf("%s: digest unchanged", name)
		}
	}
	if _, err := PlanDigest(plan, "", "cd", "abc"); err == nil {
		t.Error("a digest without its engine")
	}
	again, _ := PlanDigest(plan, tf, "cd", "abc")
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

// TestCanonicalOverData: the Emitter encodes only an event's envelope and
// puts its data, canonical already, in as it is; the bytes, hashed and
// signed, must be exactly those of encoding the whole event, whatever the
// data holds.
func TestCanonicalOverData(t *testing.T) {
	e := Event{SpecVersion: "1.0", ID: "id-1", Source: "urn:nova:test", Type: "nova.test.step", Subject: "c",
		DataContentType: "application/json", RunID: "run <1>", ContractID: "c", Environment: "dev", Seq: 7, PrevEventHash: "abc"}
	for _, data := range []any{
		map[string]any{"z": 1, "a": []any{true, nil, 1.5, "x"}, "m": map[string]any{"b": "<&>", "a": "é\u2028"}},
		json.RawMessage(`{"n": 1.50, "s": "\u00e9\ud83d\ude00", "dup": 1, "dup": 2, "e": {}, "l": []}`),
		"a string", 12, nil, []any{}, map[string]any{},
		struct {
			Z string `json:"z"`
			A []int  `json:"a,omitempty"`
		}{Z: strings.Repeat("\\\"\t", 3)},
	} {
		raw, err := Canonical(data)
		if err != nil {
			t.Fatal(err)
		}
		whole := e
		whole.Data = raw
		want, err := whole.Canonical()
		if err != nil {
			t.Fatal(err)
		}
		got, err := whole.canonicalOver(raw)
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != string(want) {
			t.Errorf("data %s:\n got %s\nwant %s", raw, got, want)
		}
	}
}
