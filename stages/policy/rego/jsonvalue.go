package rego

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"
)

// valueReader turns JSON text into OPA's value type in one pass. OPA's own
// ast.ValueFromReader decodes into Go maps and slices first and converts
// those; on a plan of hundreds of resources that second walk, and the maps
// it allocates, were a fifth of an evaluation. Strings that need decoding
// (escapes, bytes outside ASCII) are decoded as encoding/json decodes them;
// a test and a fuzz target hold the two readers to the same values and the
// same refusals.
type valueReader struct {
	data  []byte
	pos   int
	depth int
	// seen detects duplicate keys in large objects (encoding/json keeps
	// the last value of a repeated key, and so must this reader).
	seen map[string]int
	// strs shares one term among equal short strings: a plan repeats its
	// keys and many of its values hundreds of times, and allocating them
	// was most of the reading. Terms are immutable once built, which is
	// what lets OPA share its own interned terms the same way.
	strs map[string]*ast.Term
	// items is scratch for the members of the objects being read
	// (NewObject copies them), shared by every level of nesting.
	items [][2]*ast.Term
}

// maxShared is the longest string shared through strs.
const maxShared = 64

// maxDepth is encoding/json's nesting limit: deeper input is refused.
const maxDepth = 10000

var errSyntax = errors.New("invalid JSON")

// valueOf reads data, which must hold exactly one JSON value.
func valueOf(data []byte) (ast.Value, error) {
	r := &valueReader{data: data}
	v, err := r.term()
	if err != nil {
		return nil, err
	}
	if r.skipSpace(); r.pos != len(r.data) {
		return nil, r.errorf("data after the top-level value")
	}
	return v.Value, nil
}

func (r *valueReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w at offset %d: %s", errSyntax, r.pos, fmt.Sprintf(format, args...))
}

func (r *valueReader) skipSpace() {
	for r.pos < len(r.data) {
		switch r.data[r.pos] {
		case ' ', '\t', '\n', '\r':
			r.pos++
		default:
			return
		}
	}
}

func (r *valueReader) term() (*ast.Term, error) {
	r.skipSpace()
	if r.pos == len(r.data) {
		return nil, r.errorf("unexpected end of input")
	}
	switch c := r.data[r.pos]; {
	case c == '{':
		v, err := r.object(nil)
		return ast.NewTerm(v), err
	case c == '[':
		v, err := r.array(nil)
		return ast.NewTerm(v), err
	case c == '"':
		return r.str()
	case c == 't':
		return r.literal("true", ast.InternedTerm(true))
	case c == 'f':
		return r.literal("false", ast.InternedTerm(false))
	case c == 'n':
		return r.literal("null", ast.InternedNullTerm)
	case c == '-' || (c >= '0' && c <= '9'):
		return r.number()
	default:
		return nil, r.errorf("unexpected character %q", c)
	}
}

func (r *valueReader) literal(word string, t *ast.Term) (*ast.Term, error) {
	if len(r.data)-r.pos < len(word) || string(r.data[r.pos:r.pos+len(word)]) != word {
		return nil, r.errorf("invalid literal")
	}
	r.pos += len(word)
	return t, nil
}

// number accepts exactly JSON's number grammar, and keeps the number's
// text as OPA does (json.Number).
func (r *valueReader) number() (*ast.Term, error) {
	start := r.pos
	if r.data[r.pos] == '-' {
		r.pos++
	}
	switch {
	case r.pos < len(r.data) && r.data[r.pos] == '0':
		r.pos++
	case r.pos < len(r.data) && r.data[r.pos] >= '1' && r.data[r.pos] <= '9':
		r.digits()
	default:
		return nil, r.errorf("invalid number")
	}
	if r.pos < len(r.data) && r.data[r.pos] == '.' {
		r.pos++
		if r.digits() == 0 {
			return nil, r.errorf("invalid number")
		}
	}
	if r.pos < len(r.data) && (r.data[r.pos] == 'e' || r.data[r.pos] == 'E') {
		r.pos++
		if r.pos < len(r.data) && (r.data[r.pos] == '+' || r.data[r.pos] == '-') {
			r.pos++
		}
		if r.digits() == 0 {
			return nil, r.errorf("invalid number")
		}
	}
	text := string(r.data[start:r.pos])
	if t := ast.InternedIntNumberTermFromString(text); t != nil {
		return t, nil
	}
	n, err := ast.NumberChecked(text)
	if err != nil {
		return nil, r.errorf("%v", err)
	}
	return ast.NewTerm(n), nil
}

func (r *valueReader) digits() int {
	start := r.pos
	for r.pos < len(r.data) && r.data[r.pos] >= '0' && r.data[r.pos] <= '9' {
		r.pos++
	}
	return r.pos - start
}

// str reads a string. Plain ASCII without escapes, nearly every string in
// a plan, is taken as it is; anything else is decoded by unquote.
func (r *valueReader) str() (*ast.Term, error) {
	start := r.pos
	r.pos++ // the opening quote
	plain := true
	for r.pos < len(r.data) {
		c := r.data[r.pos]
		switch {
		case c == '"':
			r.pos++
			if plain {
				return r.shared(r.data[start+1 : r.pos-1]), nil
			}
			// json.Unmarshal for each string with escapes (policies and
			// container definitions are JSON in a string) was an eighth
			// of reading a plan.
			var s string
			if err := json.Unmarshal(r.data[start:r.pos], &s); err != nil {
				return nil, fmt.Errorf("%w at offset %d: invalid escape in string", errSyntax, start)
			}
			return ast.InternedTerm(s), nil
		case c == '\\':
			plain = false
			r.pos += 2 // an escaped quote does not end the string
			continue
		case c < 0x20:
			return nil, r.errorf("control character in string")
		case c >= 0x80:
			plain = false
		}
		r.pos++
	}
	return nil, r.errorf("unterminated string")
}

func (r *valueReader) shared(b []byte) *ast.Term {
	if len(b) > maxShared {
		return ast.StringTerm(string(b))
	}
	if t, ok := r.strs[string(b)]; ok {
		return t
	}
	if r.strs == nil {
		r.strs = map[string]*ast.Term{}
	}
	t := ast.InternedTerm(string(b))
	r.strs[string(t.Value.(ast.String))] = t
	return t
}

func (r *valueReader) enter() error {
	if r.depth++; r.depth > maxDepth {
		return r.errorf("exceeded max depth")
	}
	r.pos++ // the opening bracket
	return nil
}

// array reads an array; each, when given, is told the span of every
// element in data, and its value.
func (r *valueReader) array(each func(start, end int, v ast.Value)) (ast.Value, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	var terms []*ast.Term
	if r.skipSpace(); r.pos < len(r.data) && r.data[r.pos] == ']' {
		r.pos++
		r.depth--
		return ast.NewArray(), nil
	}
	for {
		r.skipSpace()
		start := r.pos
		t, err := r.term()
		if err != nil {
			return nil, err
		}
		if each != nil {
			each(start, r.pos, t.Value)
		}
		terms = append(terms, t)
		r.skipSpace()
		if r.pos == len(r.data) {
			return nil, r.errorf("unterminated array")
		}
		switch r.data[r.pos] {
		case ',':
			r.pos++
		case ']':
			r.pos++
			r.depth--
			return ast.NewArray(terms...), nil
		default:
			return nil, r.errorf("expected , or ] in array")
		}
	}
}

// object reads an object; member, when given, may read a member's value
// itself (reporting whether it did).
func (r *valueReader) object(member func(key string) (ast.Value, bool, error)) (ast.Value, error) {
	if err := r.enter(); err != nil {
		return nil, err
	}
	base := len(r.items)
	defer func() { r.items = r.items[:base] }()
	if r.skipSpace(); r.pos < len(r.data) && r.data[r.pos] == '}' {
		r.pos++
		r.depth--
		return ast.NewObject(), nil
	}
	for {
		r.skipSpace()
		if r.pos == len(r.data) || r.data[r.pos] != '"' {
			return nil, r.errorf("expected a string key in object")
		}
		key, err := r.str()
		if err != nil {
			return nil, err
		}
		name := string(key.Value.(ast.String))
		if r.skipSpace(); r.pos == len(r.data) || r.data[r.pos] != ':' {
			return nil, r.errorf("expected : after object key")
		}
		r.pos++
		var v *ast.Term
		if member != nil {
			mv, read, err := member(name)
			if err != nil {
				return nil, err
			}
			if read {
				v = ast.NewTerm(mv)
			}
		}
		if v == nil {
			if v, err = r.term(); err != nil {
				return nil, err
			}
		}
		r.items = append(r.items, [2]*ast.Term{key, v})
		r.skipSpace()
		if r.pos == len(r.data) {
			return nil, r.errorf("unterminated object")
		}
		switch r.data[r.pos] {
		case ',':
			r.pos++
		case '}':
			r.pos++
			r.depth--
			return ast.NewObject(r.lastOfEachKey(r.items[base:])...), nil
		default:
			return nil, r.errorf("expected , or } in object")
		}
	}
}

// lastOfEachKey drops all but the last member of a repeated key, as
// encoding/json does; an object built with a key twice would be corrupt.
func (r *valueReader) lastOfEachKey(items [][2]*ast.Term) [][2]*ast.Term {
	key := func(i int) string { return string(items[i][0].Value.(ast.String)) }
	dup := false
	if len(items) <= 16 {
		for i := 1; i < len(items) && !dup; i++ {
			for j := range i {
				if key(i) == key(j) {
					dup = true
					break
				}
			}
		}
	} else {
		if r.seen == nil {
			r.seen = map[string]int{}
		}
		clear(r.seen)
		for i := range items {
			if _, ok := r.seen[key(i)]; ok {
				dup = true
			}
			r.seen[key(i)] = i
		}
	}
	if !dup {
		return items
	}
	last := map[string]int{}
	for i := range items {
		last[key(i)] = i
	}
	out := items[:0:0]
	for i := range items {
		if last[key(i)] == i {
			out = append(out, items[i])
		}
	}
	return out
}
