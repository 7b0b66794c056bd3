package jsonschema

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Kind names the keyword a value violates.
type Kind string

const (
	Type                 Kind = "type"
	Const                Kind = "const"
	Enum                 Kind = "enum"
	Format               Kind = "format"
	Required             Kind = "required"
	AdditionalProperties Kind = "additionalProperties"
	PropertyNames        Kind = "propertyNames"
	Pattern              Kind = "pattern"
	MinLength            Kind = "minLength"
	MaxLength            Kind = "maxLength"
	Minimum              Kind = "minimum"
	Maximum              Kind = "maximum"
	ExclusiveMinimum     Kind = "exclusiveMinimum"
)

// Violation is one rule a value breaks.
type Violation struct {
	Kind Kind
	// Location is the path to the value, one token per step, unescaped.
	Location []string
	// Message says what is wrong, in English.
	Message string
	// Names are the properties concerned: missing ones for Required,
	// unexpected ones for AdditionalProperties, the refused name for
	// PropertyNames.
	Names []string
}

// ValidationError lists every rule a value breaks, in the order the
// schema states them, properties by name.
type ValidationError struct {
	Violations []Violation
}

// Error names each violation's location and what is wrong there, the most
// specific causes rather than "doesn't validate".
func (e *ValidationError) Error() string {
	out := make([]string, len(e.Violations))
	for i, v := range e.Violations {
		out[i] = "/" + strings.Join(v.Location, "/") + ": " + v.Message
	}
	return strings.Join(out, "; ")
}

// Validate checks v, a value as encoding/json decodes one with UseNumber
// (nil, bool, json.Number or another Go number, string, []any,
// map[string]any). A value that breaks the schema gets a
// *ValidationError; one that is not JSON at all gets another error.
func (s *Schema) Validate(v any) error {
	var vd validator
	if err := vd.validate(s, v, nil); err != nil {
		return err
	}
	if len(vd.violations) > 0 {
		return &ValidationError{Violations: vd.violations}
	}
	return nil
}

type validator struct {
	violations []Violation
}

func (vd *validator) add(kind Kind, loc []string, msg string, names ...string) {
	vd.violations = append(vd.violations, Violation{Kind: kind, Location: loc, Message: msg, Names: names})
}

// validate applies s to v at loc. The value-level keywords (type, const,
// enum, format) stop at the first failure: once a value has the wrong type
// or is not one of the allowed ones, what else is wrong with it is noise.
func (vd *validator) validate(s *Schema, v any, loc []string) error {
	got, err := typeOf(v, loc)
	if err != nil {
		return err
	}
	if s.typ != "" && s.typ != got {
		isInt := false
		if s.typ == "integer" && got == "number" {
			r, err := numberAt(v, loc)
			if err != nil {
				return err
			}
			isInt = r.IsInt()
		}
		if !isInt {
			vd.add(Type, loc, fmt.Sprintf("got %s, want %s", got, s.typ))
			return nil
		}
	}
	if s.hasConst {
		eq, err := equal(v, s.constant, loc)
		if err != nil {
			return err
		}
		if !eq {
			vd.add(Const, loc, constMessage(s.constant))
			return nil
		}
	}
	if s.enum != nil {
		matched := false
		for _, want := range s.enum {
			eq, err := equal(v, want, loc)
			if err != nil {
				return err
			}
			if eq {
				matched = true
				break
			}
		}
		if !matched {
			vd.add(Enum, loc, enumMessage(s.enum))
			return nil
		}
	}
	if str, ok := v.(string); ok && s.format != nil {
		if err := s.format.check(str); err != nil {
			vd.add(Format, loc, fmt.Sprintf("%s is not valid %s: %v", quote(str), s.format.name, err))
			return nil
		}
	}
	if s.ref != nil {
		if err := vd.validate(s.ref, v, loc); err != nil {
			return err
		}
	}
	switch v := v.(type) {
	case map[string]any:
		return vd.object(s, v, loc)
	case string:
		vd.str(s, v, loc)
	case nil, bool, []any:
	default:
		return vd.number(s, v, loc)
	}
	return nil
}

func (vd *validator) object(s *Schema, obj map[string]any, loc []string) error {
	var missing []string
	for _, name := range s.required {
		if _, ok := obj[name]; !ok {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		msg := "missing property " + quote(missing[0])
		if len(missing) > 1 {
			msg = "missing properties " + joinQuoted(missing)
		}
		vd.add(Required, loc, msg, missing...)
	}
	names := slices.Sorted(maps.Keys(obj))
	var extra []string
	for _, name := range names {
		sub, ok := s.properties[name]
		if !ok {
			sub = s.additional
		}
		if sub == nil {
			if !ok && s.noAdditional {
				extra = append(extra, name)
			}
			continue
		}
		if err := vd.validate(sub, obj[name], child(loc, name)); err != nil {
			return err
		}
	}
	if len(extra) > 0 {
		vd.add(AdditionalProperties, loc, "additional properties "+joinQuoted(extra)+" not allowed", extra...)
	}
	if s.propertyNames != nil {
		for _, name := range names {
			// A name is judged as a value of its own; what is wrong with it
			// is summed up as one violation at the object, naming it.
			var sub validator
			if err := sub.validate(s.propertyNames, name, nil); err != nil {
				return err
			}
			if len(sub.violations) > 0 {
				vd.add(PropertyNames, loc, "invalid propertyName "+quote(name), name)
			}
		}
	}
	return nil
}

func (vd *validator) str(s *Schema, str string, loc []string) {
	if s.minLength != nil || s.maxLength != nil {
		// Lengths count code points, as JSON Schema defines them, not bytes.
		n := utf8.RuneCountInString(str)
		if s.minLength != nil && n < *s.minLength {
			vd.add(MinLength, loc, fmt.Sprintf("minLength: got %s, want %s", countText(n), countText(*s.minLength)))
		}
		if s.maxLength != nil && n > *s.maxLength {
			vd.add(MaxLength, loc, fmt.Sprintf("maxLength: got %s, want %s", countText(n), countText(*s.maxLength)))
		}
	}
	if s.pattern != nil && !s.pattern.MatchString(str) {
		vd.add(Pattern, loc, fmt.Sprintf("%s does not match pattern %s", quote(str), quote(s.pattern.String())))
	}
}

func (vd *validator) number(s *Schema, v any, loc []string) error {
	if s.minimum == nil && s.maximum == nil && s.exclusiveMinimum == nil {
		return nil
	}
	n, err := numberAt(v, loc)
	if err != nil {
		return err
	}
	bound := func(kind Kind, want *big.Rat) {
		vd.add(kind, loc, fmt.Sprintf("%s: got %s, want %s", kind, numberText(n), numberText(want)))
	}
	if s.minimum != nil && n.Cmp(s.minimum) < 0 {
		bound(Minimum, s.minimum)
	}
	if s.maximum != nil && n.Cmp(s.maximum) > 0 {
		bound(Maximum, s.maximum)
	}
	if s.exclusiveMinimum != nil && n.Cmp(s.exclusiveMinimum) <= 0 {
		bound(ExclusiveMinimum, s.exclusiveMinimum)
	}
	return nil
}

// child is loc extended by one token, never sharing loc's backing array:
// violations keep their location after the walk moves on.
func child(loc []string, token string) []string {
	out := make([]string, len(loc)+1)
	copy(out, loc)
	out[len(loc)] = token
	return out
}

// typeOf names v's JSON type; numbers are "number" even when whole,
// as "integer" is a constraint on a number rather than a type of its own.
func typeOf(v any, loc []string) (string, error) {
	switch v := v.(type) {
	case nil:
		return "null", nil
	case bool:
		return "boolean", nil
	case string:
		return "string", nil
	case []any:
		return "array", nil
	case map[string]any:
		return "object", nil
	case float64:
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return "", valueError(loc, "%v is not a JSON number", v)
		}
		return "number", nil
	case float32:
		if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return "", valueError(loc, "%v is not a JSON number", v)
		}
		return "number", nil
	case json.Number, int, int8, int16, int32, int64, uint, uint8, uint16, uint32, uint64:
		return "number", nil
	}
	return "", valueError(loc, "a Go %T is not a JSON value", v)
}

func numberAt(v any, loc []string) (*big.Rat, error) {
	n, err := numberOf(v)
	if err != nil {
		return nil, valueError(loc, "%v", err)
	}
	return n, nil
}

func valueError(loc []string, format string, args ...any) error {
	return fmt.Errorf("value at /%s: %s", strings.Join(loc, "/"), fmt.Sprintf(format, args...))
}

// equal is JSON equality: numbers by value (1 equals 1.0), objects
// whatever their order.
func equal(a, b any, loc []string) (bool, error) {
	ta, err := typeOf(a, loc)
	if err != nil {
		return false, err
	}
	tb, err := typeOf(b, loc)
	if err != nil || ta != tb {
		return false, err
	}
	switch a := a.(type) {
	case map[string]any:
		b := b.(map[string]any)
		if len(a) != len(b) {
			return false, nil
		}
		for _, k := range slices.Sorted(maps.Keys(a)) {
			bv, ok := b[k]
			if !ok {
				return false, nil
			}
			if eq, err := equal(a[k], bv, child(loc, k)); !eq || err != nil {
				return false, err
			}
		}
		return true, nil
	case []any:
		b := b.([]any)
		if len(a) != len(b) {
			return false, nil
		}
		for i := range a {
			if eq, err := equal(a[i], b[i], child(loc, strconv.Itoa(i))); !eq || err != nil {
				return false, err
			}
		}
		return true, nil
	case nil, bool, string:
		return a == b, nil
	}
	na, err := numberAt(a, loc)
	if err != nil {
		return false, err
	}
	nb, err := numberAt(b, loc)
	if err != nil {
		return false, err
	}
	return na.Cmp(nb) == 0, nil
}

func constMessage(want any) string {
	switch want.(type) {
	case []any, map[string]any:
		return "'const' failed"
	}
	return "value must be " + display(want)
}

func enumMessage(values []any) string {
	want := make([]string, len(values))
	for i, v := range values {
		switch v.(type) {
		case []any, map[string]any:
			return "'enum' failed"
		}
		want[i] = display(v)
	}
	if len(want) == 1 {
		return "value must be " + want[0]
	}
	return "value must be one of " + strings.Join(want, ", ")
}

// display writes a scalar schema value into a message: strings quoted,
// numbers and the rest as Go prints them.
func display(v any) string {
	if s, ok := v.(string); ok {
		return quote(s)
	}
	return fmt.Sprint(v)
}

// quote writes s in single quotes, escaped as a Go string would be apart
// from the quotes themselves.
func quote(s string) string {
	q := strconv.Quote(s)
	q = strings.ReplaceAll(q, `\"`, `"`)
	q = strings.ReplaceAll(q, `'`, `\'`)
	return "'" + q[1:len(q)-1] + "'"
}

func joinQuoted(names []string) string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quote(n)
	}
	return strings.Join(out, ", ")
}
