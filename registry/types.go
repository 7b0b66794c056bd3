package registry

import (
	"encoding/json"
	"fmt"
	"strings"
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

// tooDeep ends every reason Conforms gives for a value nesting too deeply.
// Callers tell it apart by suffix: element and key prefixes come first, so a
// map key that happens to contain these words cannot be mistaken for it.
var tooDeep = fmt.Sprintf("value nests deeper than %d levels", maxValueDepth)

// Conforms reports why v is not a value of type t, or "" when it is. Values
// are what encoding/json produces with UseNumber: string, json.Number, bool,
// []any, map[string]any.
func (t Type) Conforms(v any) string { return t.conforms(v, 0) }

func (t Type) conforms(v any, depth int) string {
	if depth > maxValueDepth {
		return tooDeep
	}
	if v == nil {
		return "null is not allowed; leave the input out to take its default"
	}
	switch t.Kind {
	case "any":
		return anyConforms(v, depth)
	case "string":
		if _, ok := v.(string); ok {
			return ""
		}
	case "number":
		if _, ok := v.(json.Number); ok {
			return ""
		}
	case "bool":
		if _, ok := v.(bool); ok {
			return ""
		}
	case "list", "set":
		if items, ok := v.([]any); ok {
			for i, item := range items {
				if why := t.Elem.conforms(item, depth+1); why != "" {
					return fmt.Sprintf("element %d: %s", i, why)
				}
			}
			return ""
		}
	case "map":
		if m, ok := v.(map[string]any); ok {
			// Sorted, so that the same contract always yields the same finding.
			for _, k := range sortedKeys(m) {
				if why := t.Elem.conforms(m[k], depth+1); why != "" {
					return fmt.Sprintf("key %q: %s", k, why)
				}
			}
			return ""
		}
	}
	return fmt.Sprintf("want %s, got %s", t, describe(v))
}

func anyConforms(v any, depth int) string {
	switch x := v.(type) {
	case []any:
		for _, item := range x {
			if why := (Type{Kind: "any"}).conforms(item, depth+1); why != "" {
				return why
			}
		}
	case map[string]any:
		for _, k := range sortedKeys(x) {
			if why := (Type{Kind: "any"}).conforms(x[k], depth+1); why != "" {
				return why
			}
		}
	}
	return ""
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
