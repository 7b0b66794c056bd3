package rego

import (
	"strconv"
	"unicode"
	"unicode/utf8"

	"github.com/open-policy-agent/opa/v1/ast"
)

// The plan index is what Nova computes in Go while it reads the plan, and
// hands the platform rules beside it as input.plan_index:
//
//	by_type     {type: [i, …]}     positions in plan.resource_changes, by rc.type
//	duplicates  {address: [i, …]}  the addresses that occur more than once
//	suspects    [i, …]             positions whose text holds a credential word
//
// It only narrows where the rules look; whether something is a finding is
// still decided in Rego. The rules fall back to computing both themselves
// when there is no index (conftest on the same rules and plan), and a test
// holds the two ways to the same findings. The suspect scan must keep every
// resource the secrets rule could flag: it reads a resource's raw JSON with
// escapes decoded and case folded as the rule's (?i) patterns fold it.
type planIndex struct {
	byType    map[string][]int
	addresses map[string][]int
	suspects  []int
	// odd: an address that is not a string. Such addresses are not
	// tracked (1 and 1.0 are one value to Rego), so duplicates is left
	// out and the rules find repeated addresses themselves.
	odd bool
}

// indexChange records resource_changes[i], whose JSON text is raw.
func (x *planIndex) indexChange(i int, raw []byte, v ast.Value, s *suspectScanner) {
	if obj, ok := v.(ast.Object); ok {
		if t := obj.Get(ast.InternedTerm("type")); t != nil {
			if name, ok := t.Value.(ast.String); ok {
				x.byType[string(name)] = append(x.byType[string(name)], i)
			}
		}
		if a := obj.Get(ast.InternedTerm("address")); a != nil {
			if addr, ok := a.Value.(ast.String); ok {
				x.addresses[string(addr)] = append(x.addresses[string(addr)], i)
			} else {
				x.odd = true
			}
		}
	}
	if s.suspect(raw) {
		x.suspects = append(x.suspects, i)
	}
}

func (x *planIndex) value() ast.Value {
	types := make([][2]*ast.Term, 0, len(x.byType))
	for t, is := range x.byType {
		types = append(types, [2]*ast.Term{ast.StringTerm(t), ast.NewTerm(positions(is))})
	}
	items := [][2]*ast.Term{
		{ast.InternedTerm("by_type"), ast.NewTerm(ast.NewObject(types...))},
		{ast.InternedTerm("suspects"), ast.NewTerm(positions(x.suspects))},
	}
	if !x.odd {
		var dups [][2]*ast.Term
		for addr, is := range x.addresses {
			if len(is) > 1 {
				dups = append(dups, [2]*ast.Term{ast.StringTerm(addr), ast.NewTerm(positions(is))})
			}
		}
		items = append(items, [2]*ast.Term{ast.InternedTerm("duplicates"), ast.NewTerm(ast.NewObject(dups...))})
	}
	return ast.NewObject(items...)
}

func positions(is []int) *ast.Array {
	terms := make([]*ast.Term, len(is))
	for k, i := range is {
		terms[k] = ast.InternedTerm(i)
	}
	return ast.NewArray(terms...)
}

// planValue reads a plan into OPA's value type and, when its
// resource_changes is an array, indexes it. The index is nil for any other
// shape: the rules then compute everything from the plan itself.
func planValue(data []byte, s *suspectScanner) (ast.Value, *planIndex, error) {
	r := &valueReader{data: data}
	r.skipSpace()
	if r.pos == len(r.data) || r.data[r.pos] != '{' {
		v, err := valueOf(data)
		return v, nil, err
	}
	var x *planIndex
	v, err := r.object(func(key string) (ast.Value, bool, error) {
		if key != "resource_changes" {
			return nil, false, nil
		}
		if r.skipSpace(); r.pos == len(r.data) || r.data[r.pos] != '[' {
			// A repeated key that is not an array replaces the index
			// of an earlier one, as its value replaces the array.
			x = nil
			return nil, false, nil
		}
		x = &planIndex{byType: map[string][]int{}, addresses: map[string][]int{}}
		i := 0
		v, err := r.array(func(start, end int, v ast.Value) {
			x.indexChange(i, data[start:end], v, s)
			i++
		})
		return v, true, err
	})
	if err != nil {
		return nil, nil, err
	}
	if r.skipSpace(); r.pos != len(r.data) {
		return nil, nil, r.errorf("data after the top-level value")
	}
	return v, x, nil
}

// suspectScanner finds the words of secrets.rego's suspect_words in JSON
// text. The rule matches names and values with case-insensitive patterns
// on decoded strings, so the scan decodes escapes (\u0070assword is
// "password") and folds each character as Go's (?i) does: besides ASCII
// case, "ſ" matches s and the Kelvin sign matches k.
type suspectScanner struct {
	*suspectWords
	buf []byte
}

// suspectWords are the words, grouped by their first byte; pair marks the
// two-byte prefixes of words, so most positions are passed over at the
// cost of one lookup. Built once per compilation, read-only after.
type suspectWords struct {
	byFirst [256][][]byte
	pair    [1 << 16]bool
}

func newSuspectWords(words []string) *suspectWords {
	s := &suspectWords{}
	for _, w := range words {
		s.byFirst[w[0]] = append(s.byFirst[w[0]], []byte(w))
		s.pair[uint16(w[0])<<8|uint16(w[1])] = true
	}
	return s
}

func (s *suspectScanner) suspect(raw []byte) bool {
	text := s.fold(raw)
	for i := 0; i+1 < len(text); i++ {
		if !s.pair[uint16(text[i])<<8|uint16(text[i+1])] {
			continue
		}
		for _, w := range s.byFirst[text[i]] {
			if len(text)-i >= len(w) && string(text[i:i+len(w)]) == string(w) {
				return true
			}
		}
	}
	return false
}

// fold returns raw with escapes decoded and every character folded to
// lowercase ASCII; a character that folds to no ASCII letter becomes 0,
// which no word contains.
func (s *suspectScanner) fold(raw []byte) []byte {
	buf := s.buf[:0]
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\' && i+1 < len(raw):
			r, n := unescape(raw[i:])
			buf = append(buf, foldRune(r))
			i += n
		case c >= 'A' && c <= 'Z':
			buf = append(buf, c+'a'-'A')
			i++
		case c < utf8.RuneSelf:
			buf = append(buf, c)
			i++
		default:
			r, n := utf8.DecodeRune(raw[i:])
			buf = append(buf, foldRune(r))
			i += n
		}
	}
	s.buf = buf
	return buf
}

// unescape decodes the JSON escape at the start of b. A surrogate half is
// returned as it is: no surrogate folds to ASCII.
func unescape(b []byte) (rune, int) {
	switch b[1] {
	case 'u':
		if len(b) >= 6 {
			if r, err := strconv.ParseUint(string(b[2:6]), 16, 16); err == nil {
				return rune(r), 6
			}
		}
		return utf8.RuneError, 2
	case 'n':
		return '\n', 2
	case 't':
		return '\t', 2
	case 'r':
		return '\r', 2
	case 'b':
		return '\b', 2
	case 'f':
		return '\f', 2
	default: // \" \\ \/
		return rune(b[1]), 2
	}
}

func foldRune(r rune) byte {
	if r < utf8.RuneSelf {
		if r >= 'A' && r <= 'Z' {
			return byte(r) + 'a' - 'A'
		}
		return byte(r)
	}
	for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
		if f < utf8.RuneSelf {
			return foldRune(f)
		}
	}
	return 0
}
