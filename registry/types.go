package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// Type is a Terraform type constraint as the registry uses it: string,
// number, bool, any, list(T), set(T) and map(T). Object and tuple types are
// left out on purpose: registry inputs are meant to be simple enough for a
// contract author to fill in by hand.
type Type struct {
	Kind string // string, number, bool, any, list, set, map
	Elem *Type  // for list, set and map
}

// ParseType parses a type constraint in Terraform's spelling.
func ParseType(s string) (Type, error) {
	s = strings.Join(strings.Fields(s), "")
	t, rest, err := parseType(s)
	if err != nil {
		return Type{}, err
	}
	if rest != "" {
		return Type{}, fmt.Errorf("type %q: unexpected %q", s, rest)
	}
	return t, nil
}

func parseType(s string) (Type, string, error) {
	for _, prim := range []string{"string", "number", "bool", "any"} {
		if rest, ok := strings.CutPrefix(s, prim); ok {
			return Type{Kind: prim}, rest, nil
		}
	}
	for _, coll := range []string{"list", "set", "map"} {
		rest, ok := strings.CutPrefix(s, coll+"(")
		if !ok {
			continue
		}
		elem, rest, err := parseType(rest)
		if err != nil {
			return Type{}, "", err
		}
		rest, ok = strings.CutPrefix(rest, ")")
		if !ok {
			return Type{}, "", fmt.Errorf("type %s(…): missing )", coll)
		}
		return Type{Kind: coll, Elem: &elem}, rest, nil
	}
	return Type{}, "", fmt.Errorf("unsupported type %q (want string, number, bool, any, list(T), set(T) or map(T))", s)
}

// String spells t the way Terraform does.
func (t Type) String() string {
	if t.Elem == nil {
		return t.Kind
	}
	return t.Kind + "(" + t.Elem.String() + ")"
}

// maxValueDepth bounds how deeply a value may nest; it keeps a hostile
// contract from making the resolver recurse without limit.
const maxValueDepth = 32

// Conforms returns nil when v is a value of type t, else an error saying
// why, with reason INPUT_TYPE_MISMATCH, or INPUT_VALUE_TOO_DEEP when v nests
// deeper than maxValueDepth. Values are what encoding/json produces with
// UseNumber: string, json.Number, bool, []any, map[string]any.
func (t Type) Conforms(v any) error {
	why, deep := t.conforms(v, 0)
	switch {
	case why == "":
		return nil
	case deep:
		return runner.Errorf(runner.InputValueTooDeep, "%s", why)
	}
	return runner.Errorf(runner.InputTypeMismatch, "%s", why)
}

// conforms returns why v does not conform ("" when it does) and whether the
// cause is nesting beyond maxValueDepth.
func (t Type) conforms(v any, depth int) (string, bool) {
	if depth > maxValueDepth {
		return fmt.Sprintf("value nests deeper than %d levels", maxValueDepth), true
	}
	if v == nil {
		return "null is not allowed; leave the input out to take its default", false
	}
	switch t.Kind {
	case "any":
		return anyConforms(v, depth)
	case "string":
		if _, ok := v.(string); ok {
			return "", false
		}
	case "number":
		if _, ok := v.(json.Number); ok {
			return "", false
		}
	case "bool":
		if _, ok := v.(bool); ok {
			return "", false
		}
	case "list", "set":
		if items, ok := v.([]any); ok {
			for i, item := range items {
				if why, deep := t.Elem.conforms(item, depth+1); why != "" {
					return fmt.Sprintf("element %d: %s", i, why), deep
				}
			}
			return "", false
		}
	case "map":
		if m, ok := v.(map[string]any); ok {
			// Sorted, so that the same contract always yields the same finding.
			for _, k := range slices.Sorted(maps.Keys(m)) {
				if why, deep := t.Elem.conforms(m[k], depth+1); why != "" {
					return fmt.Sprintf("key %q: %s", k, why), deep
				}
			}
			return "", false
		}
	}
	return fmt.Sprintf("want %s, got %s", t, describe(v)), false
}

func anyConforms(v any, depth int) (string, bool) {
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			if why, deep := (Type{Kind: "any"}).conforms(item, depth+1); why != "" {
				return why, deep
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(x)) {
			if why, deep := (Type{Kind: "any"}).conforms(x[k], depth+1); why != "" {
				return why, deep
			}
		}
	}
	return "", false
}

func describe(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "bool"
	case []any:
		return "list"
	case map[string]any:
		return "map"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}
