// Package parity checks Nova's JSON Schema validator against
// santhosh-tekuri/jsonschema, the general validator it replaced: both must
// accept and refuse the same values, for the same reasons, at the same
// places, in the same words.
//
// Only tests import this package, so the nova binary never links the
// library (whose init alone cost a fifth of `nova version`).
package parity

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	lib "github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/nova-platform/nova/runner/jsonschema"
)

// english is how Nova printed the library's messages.
var english = message.NewPrinter(language.English)

// Checker holds one schema compiled by both validators.
type Checker struct {
	nova *jsonschema.Schema
	lib  *lib.Schema
}

// New compiles schema, published at url, with both validators.
func New(url string, schema []byte) (*Checker, error) {
	return newChecker(url, schema, schema)
}

// newChecker lets a test give Nova's validator another schema than the
// library's, to prove that a difference is caught.
func newChecker(url string, novaSchema, libSchema []byte) (*Checker, error) {
	n, err := jsonschema.Compile(url, novaSchema)
	if err != nil {
		return nil, fmt.Errorf("nova: %w", err)
	}
	doc, err := lib.UnmarshalJSON(bytes.NewReader(libSchema))
	if err != nil {
		return nil, err
	}
	c := lib.NewCompiler()
	c.DefaultDraft(lib.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	l, err := c.Compile(url)
	if err != nil {
		return nil, fmt.Errorf("library: %w", err)
	}
	return &Checker{nova: n, lib: l}, nil
}

// Leaf is one violation as both validators can describe it.
type Leaf struct {
	Kind     string
	Location string
	Message  string
	Names    string
}

// ErrOutOfDomain marks a value Compare does not judge: a number whose
// exponent makes exact arithmetic impractical, which Nova refuses with an
// error and the library would spend minutes on.
var ErrOutOfDomain = errors.New("value outside what the validators are compared on")

// Compare validates doc with both validators. It returns the violations
// they agree on, or an error describing how they disagree.
func (c *Checker) Compare(doc any) ([]Leaf, error) {
	if hugeExponent(doc) {
		return nil, ErrOutOfDomain
	}
	want, err := libLeaves(c.lib.Validate(doc))
	if err != nil {
		return nil, err
	}
	got, err := novaLeaves(c.nova.Validate(doc))
	if err != nil {
		return nil, err
	}
	if !slices.Equal(got, want) {
		return nil, fmt.Errorf("validators disagree on %s:\n  nova:    %v\n  library: %v", show(doc), got, want)
	}
	return got, nil
}

// Tally is what CompareAll saw: the documents both validators pass, those
// they both fail, and every kind of violation met.
type Tally struct {
	Valid, Invalid int
	Kinds          map[string]bool
}

// CompareAll compares every document, stopping at the first disagreement.
func (c *Checker) CompareAll(docs []any) (Tally, error) {
	t := Tally{Kinds: map[string]bool{}}
	for _, doc := range docs {
		leaves, err := c.Compare(doc)
		if err != nil {
			return t, err
		}
		if len(leaves) == 0 {
			t.Valid++
		} else {
			t.Invalid++
		}
		for _, l := range leaves {
			t.Kinds[l.Kind] = true
		}
	}
	return t, nil
}

func novaLeaves(err error) ([]Leaf, error) {
	if err == nil {
		return nil, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil, fmt.Errorf("nova: %w", err)
	}
	var out []Leaf
	for _, v := range verr.Violations {
		out = append(out, Leaf{
			Kind: string(v.Kind), Location: pointer(v.Location),
			Message: v.Message, Names: strings.Join(v.Names, ","),
		})
	}
	return sorted(out), nil
}

// libLeaves flattens the library's error tree to its most specific
// causes, as Nova used to; propertyNames counts as a leaf, its causes
// being about the name rather than the object.
func libLeaves(err error) ([]Leaf, error) {
	if err == nil {
		return nil, nil
	}
	var verr *lib.ValidationError
	if !errors.As(err, &verr) {
		return nil, fmt.Errorf("library: %w", err)
	}
	var out []Leaf
	var walk func(*lib.ValidationError)
	walk = func(e *lib.ValidationError) {
		k, isNames := e.ErrorKind.(*kind.PropertyNames)
		if !isNames && len(e.Causes) > 0 {
			for _, c := range e.Causes {
				walk(c)
			}
			return
		}
		path := e.ErrorKind.KeywordPath()
		l := Leaf{Location: pointer(e.InstanceLocation), Message: e.ErrorKind.LocalizedString(english)}
		if len(path) > 0 {
			l.Kind = path[len(path)-1]
		}
		switch k2 := e.ErrorKind.(type) {
		case *kind.Required:
			l.Names = strings.Join(k2.Missing, ",")
		case *kind.AdditionalProperties:
			// The library lists extra properties in map order, which
			// changes from run to run; Nova lists them by name.
			names := slices.Sorted(slices.Values(k2.Properties))
			l.Names = strings.Join(names, ",")
			l.Message = (&kind.AdditionalProperties{Properties: names}).LocalizedString(english)
		}
		if isNames {
			l.Names = k.Property
			// v6.0.3 keeps a propertyNames error's instance location
			// without copying it, so later siblings overwrite it; its
			// schema location says where it is when propertyNames sits
			// under properties alone, as in Nova's schemas.
			l.Location = instanceFromSchemaURL(e.SchemaURL)
		}
		out = append(out, l)
	}
	walk(verr)
	return sorted(out), nil
}

func sorted(ls []Leaf) []Leaf {
	slices.SortFunc(ls, func(a, b Leaf) int {
		return cmp.Or(cmp.Compare(a.Location, b.Location), cmp.Compare(a.Kind, b.Kind),
			cmp.Compare(a.Message, b.Message), cmp.Compare(a.Names, b.Names))
	})
	return ls
}

// instanceFromSchemaURL maps ".../x.json#/properties/a/properties/b/..."
// to "/a/b".
func instanceFromSchemaURL(u string) string {
	_, frag, _ := strings.Cut(u, "#")
	var b strings.Builder
	parts := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "properties" {
			b.WriteString("/" + parts[i+1])
			i++
		}
	}
	return b.String()
}

func pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

func show(doc any) string {
	b, err := json.Marshal(doc)
	if err != nil {
		return fmt.Sprintf("%#v", doc)
	}
	if len(b) > 2000 {
		return string(b[:2000]) + "…"
	}
	return string(b)
}

// hugeExponent reports a number with an exponent beyond ±1000 anywhere
// in doc.
func hugeExponent(doc any) bool {
	switch v := doc.(type) {
	case map[string]any:
		for _, x := range v {
			if hugeExponent(x) {
				return true
			}
		}
	case []any:
		for _, x := range v {
			if hugeExponent(x) {
				return true
			}
		}
	case json.Number:
		s := strings.ToLower(string(v))
		if i := strings.IndexByte(s, 'e'); i >= 0 {
			e, err := strconv.Atoi(s[i+1:])
			return err != nil || e > 1000 || e < -1000
		}
	case float64:
		return math.IsInf(v, 0) || math.IsNaN(v)
	}
	return false
}
