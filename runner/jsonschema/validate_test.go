package jsonschema

import (
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestValidateRefusesWhatIsNotJSON: a value no JSON document can hold is
// an error of its own, never a panic and never a pass.
func TestValidateRefusesWhatIsNotJSON(t *testing.T) {
	sch, err := Compile("https://example.com/s.json", []byte(`{"properties":{"n":{"type":"integer","maximum":10},"e":{"enum":[1,"a",[1]]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		doc     any
		mention string
	}{
		{map[string]any{"n": math.NaN()}, "value at /n"},
		{map[string]any{"n": math.Inf(1)}, "not a JSON number"},
		{map[string]any{"n": json.Number("abc")}, `"abc" is not a JSON number`},
		{map[string]any{"n": json.Number("1e999999999")}, "exponent beyond"},
		{map[string]any{"n": make(chan int)}, "a Go chan int is not a JSON value"},
		{map[string]any{"e": []any{struct{}{}}}, "not a JSON value"},
		{map[string]any{"x": map[string]string{}}, ""},
	} {
		err := sch.Validate(tc.doc)
		var verr *ValidationError
		if tc.mention == "" {
			// Values no keyword looks at are not inspected.
			if err != nil {
				t.Errorf("Validate(%#v) = %v, want nil", tc.doc, err)
			}
			continue
		}
		if err == nil || errors.As(err, &verr) || !strings.Contains(err.Error(), tc.mention) {
			t.Errorf("Validate(%#v) = %v, want an error mentioning %q", tc.doc, err, tc.mention)
		}
	}
}

// TestViolationsKeepTheirLocation: a violation's location is its own,
// not a slice a later sibling overwrites (v6.0.3 of the library had that
// bug for propertyNames).
func TestViolationsKeepTheirLocation(t *testing.T) {
	sch, err := Compile("https://example.com/s.json", []byte(`{"properties":{
		"a":{"propertyNames":{"pattern":"^[a-z]+$"}},
		"b":{"properties":{"c":{"type":"string"}}},
		"d":{"type":"string"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	err = sch.Validate(map[string]any{"a": map[string]any{"X": 1}, "b": map[string]any{"c": true}, "d": 1})
	var verr *ValidationError
	if !errors.As(err, &verr) {
		t.Fatalf("got %v, want a *ValidationError", err)
	}
	want := []Violation{
		{Kind: PropertyNames, Location: []string{"a"}, Message: "invalid propertyName 'X'", Names: []string{"X"}},
		{Kind: Type, Location: []string{"b", "c"}, Message: "got boolean, want string"},
		{Kind: Type, Location: []string{"d"}, Message: "got number, want string"},
	}
	if diff := cmp.Diff(want, verr.Violations); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
	if got, want := verr.Error(), "/a: invalid propertyName 'X'; /b/c: got boolean, want string; /d: got number, want string"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
}
