package registry

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseType(t *testing.T) {
	str := Type{Kind: "string"}
	listStr := Type{Kind: "list", Elem: &str}
	tests := []struct {
		in   string
		want Type
		// spelling is String() of the result: Terraform's own, without
		// the whitespace the input may have had.
		spelling string
	}{
		{"string", str, "string"},
		{"number", Type{Kind: "number"}, "number"},
		{"bool", Type{Kind: "bool"}, "bool"},
		{"any", Type{Kind: "any"}, "any"},
		{"list(string)", listStr, "list(string)"},
		{"set(number)", Type{Kind: "set", Elem: &Type{Kind: "number"}}, "set(number)"},
		{"map(list(string))", Type{Kind: "map", Elem: &listStr}, "map(list(string))"},
		{" map ( list( string ) ) ", Type{Kind: "map", Elem: &listStr}, "map(list(string))"},
		{"list(any)", Type{Kind: "list", Elem: &Type{Kind: "any"}}, "list(any)"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseType(tt.in)
			if err != nil {
				t.Fatalf("ParseType(%q): %v", tt.in, err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("ParseType(%q) (-want +got):\n%s", tt.in, diff)
			}
			if got.String() != tt.spelling {
				t.Errorf("String() = %q, want %q", got.String(), tt.spelling)
			}
		})
	}
}

func TestParseTypeRejects(t *testing.T) {
	for _, in := range []string{
		"",
		"list",
		"map()",
		"list(string",
		"list(string))",
		"stringy",
		"String",
		"object({ name = string })",
		"tuple([string, number])",
		"list(object({ name = string }))",
		"map(string) map(string)",
	} {
		t.Run(in, func(t *testing.T) {
			if got, err := ParseType(in); err == nil {
				t.Errorf("ParseType(%q) = %v, want an error", in, got)
			}
		})
	}
}

func TestConforms(t *testing.T) {
	mustParse := func(s string) Type {
		t.Helper()
		typ, err := ParseType(s)
		if err != nil {
			t.Fatal(err)
		}
		return typ
	}
	tests := []struct {
		name  string
		typ   string
		value any
		// want is the reason the value does not conform, "" when it does.
		want string
	}{
		{"string", "string", "x", ""},
		{"empty string", "string", "", ""},
		{"number", "number", json.Number("1.5"), ""},
		{"bool", "bool", false, ""},
		{"list of strings", "list(string)", []any{"a", "b"}, ""},
		{"empty list", "list(string)", []any{}, ""},
		{"set takes a list", "set(number)", []any{json.Number("1")}, ""},
		{"map of lists", "map(list(number))", map[string]any{"a": []any{json.Number("1")}}, ""},
		{"any takes a nested mix", "any", map[string]any{"a": []any{"x", json.Number("1"), true}}, ""},
		{"32 levels", "any", nested(32, "x"), ""},

		{"number for string", "string", json.Number("1"), "want string, got number"},
		{"string for number", "number", "1", "want number, got string"},
		// Go numbers are not what the JSON decoder gives, so they are refused.
		{"Go float for number", "number", 1.5, "want number, got float64"},
		{"string for bool", "bool", "true", "want bool, got string"},
		{"map for list", "list(string)", map[string]any{}, "want list(string), got map"},
		{"list for map", "map(string)", []any{}, "want map(string), got list"},
		{"null", "string", nil, "null is not allowed; leave the input out to take its default"},
		// Null has no place inside a value either, whatever the type.
		{"null inside any", "any", []any{"a", nil}, "null is not allowed; leave the input out to take its default"},
		{"null element", "list(string)", []any{"a", nil}, "element 1: null is not allowed; leave the input out to take its default"},
		{"list element", "list(string)", []any{"a", true}, "element 1: want string, got bool"},
		{"nested list element", "list(list(number))", []any{[]any{json.Number("1")}, []any{json.Number("2"), "3"}}, "element 1: element 1: want number, got string"},
		// Keys are checked in order, so the reason is the same every time.
		{"map element", "map(number)", map[string]any{"b": "x", "a": "y", "c": json.Number("1")}, `key "a": want number, got string`},
		{"nested map element", "map(map(bool))", map[string]any{"a": map[string]any{"b": "no"}}, `key "a": key "b": want bool, got string`},
		{"33 levels", "any", nested(33, "x"), "value nests deeper than 32 levels"},
		{"33 levels typed", "list(any)", nested(33, "x"), "element 0: value nests deeper than 32 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := mustParse(tt.typ).Conforms(tt.value); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("%s.Conforms(%#v) = %q, want %q", tt.typ, tt.value, got, tt.want)
			}
		})
	}
}
