package jsonschema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/big"
	"regexp"
	"slices"
	"strings"
)

const draft2020 = "https://json-schema.org/draft/2020-12/schema"

// Schema is a compiled schema: one node per schema object, its $ref
// resolved to the node it names.
type Schema struct {
	typ string

	hasConst bool
	constant any
	enum     []any // nil without enum; enum cannot be empty

	format *format
	ref    *Schema

	required   []string
	properties map[string]*Schema
	// noAdditional is additionalProperties: false; additional is the
	// schema form. At most one is set.
	noAdditional  bool
	additional    *Schema
	propertyNames *Schema

	pattern              *regexp.Regexp
	minLength, maxLength *int

	minimum, maximum, exclusiveMinimum *big.Rat
}

// Compile compiles an embedded draft 2020-12 schema published at url, with
// formats asserted (a "uuid" that is not one must fail).
//
// Only the keywords Nova's schemas use are understood. Any other keyword,
// format or $ref form is refused here rather than ignored: a schema change
// that needs more must fail loudly instead of passing values unchecked.
func Compile(url string, data []byte) (*Schema, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return nil, fmt.Errorf("reading schema %s: %w", url, err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("reading schema %s: more than one JSON value", url)
	}
	root, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("schema %s: the root must be an object", url)
	}
	if s, ok := root["$schema"]; ok && s != draft2020 {
		return nil, fmt.Errorf("schema %s: $schema %v is not draft 2020-12 (%s)", url, s, draft2020)
	}
	if id, ok := root["$id"]; ok && id != url {
		return nil, fmt.Errorf("schema %s: $id %v differs from the address it is compiled for", url, id)
	}
	c := &compiler{url: url, defs: map[string]*Schema{}}
	// Definitions get their nodes first, so a $ref can point at one whatever
	// the order in which the two are met.
	defs, err := c.defsOf(root, "#")
	if err != nil {
		return nil, err
	}
	names := slices.Sorted(maps.Keys(defs))
	for _, name := range names {
		c.defs[name] = &Schema{}
	}
	for _, name := range names {
		if err := c.fill(c.defs[name], defs[name], "#/$defs/"+escapeToken(name)); err != nil {
			return nil, err
		}
	}
	s := &Schema{}
	if err := c.fill(s, root, "#"); err != nil {
		return nil, err
	}
	if err := c.refCycles(); err != nil {
		return nil, err
	}
	return s, nil
}

type compiler struct {
	url  string
	defs map[string]*Schema
}

var (
	// annotations document a schema and assert nothing.
	annotations = map[string]bool{"title": true, "description": true}
	// rootOnly are valid at the schema's root alone: Compile reads
	// them, and elsewhere they would change how references resolve.
	rootOnly = map[string]bool{"$schema": true, "$id": true, "$defs": true}
)

func (c *compiler) errorf(at, format string, args ...any) error {
	return fmt.Errorf("schema %s at %s: %s", c.url, at, fmt.Sprintf(format, args...))
}

func (c *compiler) defsOf(root map[string]any, at string) (map[string]map[string]any, error) {
	raw, ok := root["$defs"]
	if !ok {
		return nil, nil
	}
	obj, ok := raw.(map[string]any)
	if !ok {
		return nil, c.errorf(at+"/$defs", "$defs must be an object")
	}
	out := make(map[string]map[string]any, len(obj))
	for name, def := range obj {
		m, ok := def.(map[string]any)
		if !ok {
			return nil, c.errorf(at+"/$defs/"+escapeToken(name), "a definition must be a schema object (boolean schemas are not supported)")
		}
		out[name] = m
	}
	return out, nil
}

// fill compiles the schema object obj, found at at, into s.
func (c *compiler) fill(s *Schema, obj map[string]any, at string) error {
	for _, kw := range slices.Sorted(maps.Keys(obj)) {
		val := obj[kw]
		here := at + "/" + escapeToken(kw)
		if annotations[kw] {
			if _, ok := val.(string); !ok {
				return c.errorf(here, "%s must be a string", kw)
			}
			continue
		}
		if rootOnly[kw] {
			if at != "#" {
				return c.errorf(here, "%s is only supported at the schema's root", kw)
			}
			continue
		}
		if err := c.keyword(s, kw, val, here); err != nil {
			return err
		}
	}
	return nil
}

func (c *compiler) keyword(s *Schema, kw string, val any, at string) error {
	var err error
	switch kw {
	case "type":
		t, ok := val.(string)
		if !ok || !slices.Contains([]string{"null", "boolean", "number", "integer", "string", "array", "object"}, t) {
			return c.errorf(at, "type must be one of null, boolean, number, integer, string, array, object (lists of types are not supported)")
		}
		s.typ = t
	case "const":
		if err := exactNumbers(val); err != nil {
			return c.errorf(at, "%v", err)
		}
		s.hasConst, s.constant = true, val
	case "enum":
		list, ok := val.([]any)
		if !ok || len(list) == 0 {
			return c.errorf(at, "enum must be a non-empty array")
		}
		if err := exactNumbers(list); err != nil {
			return c.errorf(at, "%v", err)
		}
		s.enum = list
	case "format":
		name, _ := val.(string)
		f, ok := formats[name]
		if !ok {
			return c.errorf(at, "format %v is not supported (supported: %s)", val, strings.Join(slices.Sorted(maps.Keys(formats)), ", "))
		}
		s.format = f
	case "$ref":
		s.ref, err = c.resolve(val, at)
	case "required":
		s.required, err = c.names(val, at)
	case "properties":
		obj, ok := val.(map[string]any)
		if !ok {
			return c.errorf(at, "properties must be an object")
		}
		s.properties = make(map[string]*Schema, len(obj))
		for _, name := range slices.Sorted(maps.Keys(obj)) {
			if s.properties[name], err = c.sub(obj[name], at+"/"+escapeToken(name)); err != nil {
				return err
			}
		}
	case "additionalProperties":
		if b, ok := val.(bool); ok {
			if b {
				return c.errorf(at, "additionalProperties: true is the default; leave it out")
			}
			s.noAdditional = true
			return nil
		}
		s.additional, err = c.sub(val, at)
	case "propertyNames":
		s.propertyNames, err = c.sub(val, at)
	case "pattern":
		p, ok := val.(string)
		if !ok {
			return c.errorf(at, "pattern must be a string")
		}
		if s.pattern, err = regexp.Compile(p); err != nil {
			return c.errorf(at, "pattern %q: %v", p, err)
		}
	case "minLength":
		s.minLength, err = c.count(val, at)
	case "maxLength":
		s.maxLength, err = c.count(val, at)
	case "minimum":
		s.minimum, err = c.bound(val, at)
	case "maximum":
		s.maximum, err = c.bound(val, at)
	case "exclusiveMinimum":
		s.exclusiveMinimum, err = c.bound(val, at)
	default:
		return c.errorf(at, "keyword %q is not supported by Nova's validator", kw)
	}
	return err
}

func (c *compiler) sub(val any, at string) (*Schema, error) {
	obj, ok := val.(map[string]any)
	if !ok {
		return nil, c.errorf(at, "a subschema must be an object (boolean schemas are not supported)")
	}
	s := &Schema{}
	return s, c.fill(s, obj, at)
}

// resolve supports the one form of $ref the schemas need: a definition
// of the same document.
func (c *compiler) resolve(val any, at string) (*Schema, error) {
	ref, _ := val.(string)
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok || strings.Contains(name, "/") {
		return nil, c.errorf(at, "$ref %v is not supported: only #/$defs/<name> is", val)
	}
	name = strings.ReplaceAll(strings.ReplaceAll(name, "~1", "/"), "~0", "~")
	s, ok := c.defs[name]
	if !ok {
		return nil, c.errorf(at, "$ref %s names no definition", ref)
	}
	return s, nil
}

// refCycles refuses definitions that refer to each other without
// descending into the value: validating them would never end.
func (c *compiler) refCycles() error {
	for _, name := range slices.Sorted(maps.Keys(c.defs)) {
		seen := map[*Schema]bool{}
		for s := c.defs[name]; s != nil; s = s.ref {
			if seen[s] {
				return c.errorf("#/$defs/"+escapeToken(name), "$ref cycle")
			}
			seen[s] = true
		}
	}
	return nil
}

func (c *compiler) names(val any, at string) ([]string, error) {
	list, ok := val.([]any)
	if !ok {
		return nil, c.errorf(at, "must be an array of strings")
	}
	out := make([]string, 0, len(list))
	for _, v := range list {
		name, ok := v.(string)
		if !ok {
			return nil, c.errorf(at, "must be an array of strings")
		}
		if slices.Contains(out, name) {
			return nil, c.errorf(at, "names %q twice", name)
		}
		out = append(out, name)
	}
	return out, nil
}

func (c *compiler) count(val any, at string) (*int, error) {
	refuse := c.errorf(at, "must be a non-negative integer below 2³¹")
	n, ok := val.(json.Number)
	if !ok {
		return nil, refuse
	}
	r, err := rat(n)
	if err != nil || !r.IsInt() || r.Sign() < 0 || r.Num().BitLen() > 31 {
		return nil, refuse
	}
	i := int(r.Num().Int64())
	return &i, nil
}

func (c *compiler) bound(val any, at string) (*big.Rat, error) {
	n, ok := val.(json.Number)
	if !ok {
		return nil, c.errorf(at, "must be a number")
	}
	r, err := rat(n)
	if err != nil {
		return nil, c.errorf(at, "%v", err)
	}
	return r, nil
}

// exactNumbers checks that every number in a const or enum value can be
// compared exactly, so that validation never fails on the schema's side.
func exactNumbers(v any) error {
	switch v := v.(type) {
	case json.Number:
		_, err := rat(v)
		return err
	case []any:
		for _, x := range v {
			if err := exactNumbers(x); err != nil {
				return err
			}
		}
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(v)) {
			if err := exactNumbers(v[k]); err != nil {
				return err
			}
		}
	}
	return nil
}

func escapeToken(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
