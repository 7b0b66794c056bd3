package runner

import (
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"unicode/utf8"
)

// Canonical serializes v as compact JSON with object keys sorted and no HTML
// escaping, so equal values always give equal bytes: digests and signatures
// depend on it.
//
// The bytes are those of marshalling v with encoding/json, decoding the
// result into a generic value (numbers as json.Number) and marshalling that
// again; events, outbox lines, plan digests and signed claims already on
// disk were made that way. Rather than build the generic value, a second
// pass rewrites the first pass's bytes directly under the same rules.
func Canonical(v any) ([]byte, error) {
	c := canonicalizers.Get().(*canonicalizer)
	defer c.release()
	// The first pass writes into the pooled buffer: only the canonical
	// bytes outlive the call.
	first, err := marshalNoEscape(&c.first, v)
	if err != nil {
		return nil, err
	}
	c.in, c.pos, c.out = first, 0, make([]byte, 0, len(first))
	if err := c.document(); err != nil {
		return nil, fmt.Errorf("re-reading JSON: %w", err)
	}
	return c.out, nil
}

// canonicalizers keeps the scratch space of finished calls: a run
// canonicalizes every event, and the member lists and buffers are the same
// size call after call.
var canonicalizers = sync.Pool{New: func() any { return new(canonicalizer) }}

// maxPooledScratch bounds what a pooled canonicalizer keeps, so that one
// huge plan does not pin its buffers for the rest of the process.
const maxPooledScratch = 1 << 20

func (c *canonicalizer) release() {
	if c.first.Cap() > maxPooledScratch || cap(c.keys) > maxPooledScratch || cap(c.str) > maxPooledScratch || cap(c.sorted) > maxPooledScratch || cap(c.members) > maxPooledScratch/32 {
		return
	}
	c.first.Reset()
	*c = canonicalizer{first: c.first, members: c.members[:0], keys: c.keys[:0], str: c.str[:0], sorted: c.sorted[:0]}
	canonicalizers.Put(c)
}

// Digest is the lowercase hex sha256 of v's canonical serialization.
func Digest(v any) (string, error) {
	b, err := Canonical(v)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// marshalNoEscape encodes v into buf with encoding/json, leaving <, > and &
// as they are, and returns the bytes without the encoder's newline.
func marshalNoEscape(buf *bytes.Buffer, v any) ([]byte, error) {
	enc := json.NewEncoder(buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}

// maxNestingDepth is encoding/json's limit on nested arrays and objects.
// A Go value nested deeper marshals fine but could not be decoded again, so
// Canonical has always refused it; it still must.
const maxNestingDepth = 10000

var (
	errDepth     = errors.New("exceeded max depth")
	errMalformed = errors.New("malformed JSON from the first pass")
)

// canonicalizer rewrites one encoding/json output into canonical form. The
// input is trusted to be what encoding/json wrote (valid JSON, compact), but
// anything unexpected is an error rather than a panic.
type canonicalizer struct {
	// first holds the first pass's output; in is that output less the
	// encoder's trailing newline.
	first bytes.Buffer
	in    []byte
	pos   int
	out   []byte
	// members holds the members of every object being written, innermost
	// last: a nested object pushes its own and pops them when done, so one
	// slice serves the whole document.
	members []member
	// keys holds the decoded form of keys whose token is not already their
	// decoded form (escapes, invalid UTF-8), for sorting.
	keys []byte
	// str is scratch for decoding a string value that must be re-encoded.
	str []byte
	// sorted is scratch for an object's members rewritten in order.
	sorted []byte
}

// member is one object member already written to out: its `"key":value`
// span there and where its decoded key lives (in in, or in keys).
type member struct {
	keyStart, keyEnd int
	decodedKey       bool
	outStart, outEnd int
}

func (c *canonicalizer) key(m member) []byte {
	if m.decodedKey {
		return c.keys[m.keyStart:m.keyEnd]
	}
	return c.in[m.keyStart:m.keyEnd]
}

func (c *canonicalizer) document() error {
	if err := c.value(0); err != nil {
		return err
	}
	c.skipSpace()
	if c.pos != len(c.in) {
		return errMalformed
	}
	return nil
}

func (c *canonicalizer) skipSpace() {
	for c.pos < len(c.in) {
		switch c.in[c.pos] {
		case ' ', '\t', '\n', '\r':
			c.pos++
		default:
			return
		}
	}
}

func (c *canonicalizer) value(depth int) error {
	c.skipSpace()
	if c.pos >= len(c.in) {
		return errMalformed
	}
	switch b := c.in[c.pos]; {
	case b == '{':
		return c.object(depth + 1)
	case b == '[':
		return c.array(depth + 1)
	case b == '"':
		return c.stringValue()
	case b == 't':
		return c.literal("true")
	case b == 'f':
		return c.literal("false")
	case b == 'n':
		return c.literal("null")
	case b == '-' || ('0' <= b && b <= '9'):
		// A json.Number re-marshals as its literal text, so the number is
		// copied as written: 1.50, -0 and 1E5 stay exactly that.
		start := c.pos
		for c.pos < len(c.in) && isNumberByte(c.in[c.pos]) {
			c.pos++
		}
		c.out = append(c.out, c.in[start:c.pos]...)
		return nil
	default:
		return errMalformed
	}
}

func isNumberByte(b byte) bool {
	return ('0' <= b && b <= '9') || b == '-' || b == '+' || b == '.' || b == 'e' || b == 'E'
}

func (c *canonicalizer) literal(lit string) error {
	if !bytes.HasPrefix(c.in[c.pos:], []byte(lit)) {
		return errMalformed
	}
	c.out = append(c.out, lit...)
	c.pos += len(lit)
	return nil
}

func (c *canonicalizer) array(depth int) error {
	if depth > maxNestingDepth {
		return errDepth
	}
	c.pos++
	c.out = append(c.out, '[')
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == ']' {
		c.pos++
		c.out = append(c.out, ']')
		return nil
	}
	for {
		if err := c.value(depth); err != nil {
			return err
		}
		c.skipSpace()
		if c.pos >= len(c.in) {
			return errMalformed
		}
		switch c.in[c.pos] {
		case ',':
			c.pos++
			c.out = append(c.out, ',')
		case ']':
			c.pos++
			c.out = append(c.out, ']')
			return nil
		default:
			return errMalformed
		}
	}
}

// object writes the members as they come and remembers where each went;
// only if their keys are not already strictly increasing does it rewrite
// them sorted. Maps and canonical RawMessages arrive sorted, so most
// objects are never moved.
func (c *canonicalizer) object(depth int) error {
	if depth > maxNestingDepth {
		return errDepth
	}
	c.pos++
	objStart := len(c.out)
	c.out = append(c.out, '{')
	base, keysMark := len(c.members), len(c.keys)
	defer func() {
		c.members = c.members[:base]
		c.keys = c.keys[:keysMark]
	}()
	c.skipSpace()
	if c.pos < len(c.in) && c.in[c.pos] == '}' {
		c.pos++
		c.out = append(c.out, '}')
		return nil
	}
	sorted := true
	for {
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != '"' {
			return errMalformed
		}
		if len(c.members) > base {
			c.out = append(c.out, ',')
		}
		m := member{outStart: len(c.out)}
		tok, canonical, escaped, err := c.scanString()
		if err != nil {
			return err
		}
		if canonical && !escaped {
			m.keyStart, m.keyEnd = c.pos-len(tok)+1, c.pos-1
			c.out = append(c.out, tok...)
		} else {
			m.decodedKey = true
			m.keyStart = len(c.keys)
			if c.keys, err = unquoteToken(c.keys, tok); err != nil {
				return err
			}
			m.keyEnd = len(c.keys)
			c.out = appendJSONString(c.out, c.keys[m.keyStart:m.keyEnd])
		}
		// Map keys are ordered by Go string comparison of the decoded key,
		// which is bytes.Compare on its UTF-8; an equal key (a duplicate in
		// a RawMessage) also needs the rewrite, which keeps the last.
		if sorted && len(c.members) > base && bytes.Compare(c.key(c.members[len(c.members)-1]), c.key(m)) >= 0 {
			sorted = false
		}
		c.skipSpace()
		if c.pos >= len(c.in) || c.in[c.pos] != ':' {
			return errMalformed
		}
		c.pos++
		c.out = append(c.out, ':')
		if err := c.value(depth); err != nil {
			return err
		}
		m.outEnd = len(c.out)
		c.members = append(c.members, m)
		c.skipSpace()
		if c.pos >= len(c.in) {
			return errMalformed
		}
		if c.in[c.pos] == ',' {
			c.pos++
			continue
		}
		if c.in[c.pos] != '}' {
			return errMalformed
		}
		c.pos++
		break
	}
	if !sorted {
		c.sortMembers(objStart, c.members[base:])
	}
	c.out = append(c.out, '}')
	return nil
}

// sortMembers rewrites the members written from objStart in key order. Of
// members with equal decoded keys only the last written survives, as when
// encoding/json decodes them into a map.
func (c *canonicalizer) sortMembers(objStart int, ms []member) {
	slices.SortFunc(ms, func(a, b member) int {
		if r := bytes.Compare(c.key(a), c.key(b)); r != 0 {
			return r
		}
		return cmp.Compare(a.outStart, b.outStart)
	})
	c.sorted = append(c.sorted[:0], '{')
	for i, m := range ms {
		if i+1 < len(ms) && bytes.Equal(c.key(m), c.key(ms[i+1])) {
			continue
		}
		if len(c.sorted) > 1 {
			c.sorted = append(c.sorted, ',')
		}
		c.sorted = append(c.sorted, c.out[m.outStart:m.outEnd]...)
	}
	// The rewrite is never longer than what it replaces: the same members,
	// less any duplicates.
	n := copy(c.out[objStart:], c.sorted)
	c.out = c.out[:objStart+n]
}

// stringValue writes the string at pos as encoding/json would write the Go
// string it decodes to.
func (c *canonicalizer) stringValue() error {
	tok, canonical, _, err := c.scanString()
	if err != nil {
		return err
	}
	if canonical {
		c.out = append(c.out, tok...)
		return nil
	}
	if c.str, err = unquoteToken(c.str[:0], tok); err != nil {
		return err
	}
	c.out = appendJSONString(c.out, c.str)
	return nil
}

// scanString returns the string token at pos, quotes included, and moves
// past it. canonical reports that decoding and re-encoding would give the
// token back unchanged: every escape is one the encoder itself writes (the
// short ones, \u00XX in lowercase for other control bytes, \u2028 and
// \u2029), there are no raw control bytes, and the rest is valid UTF-8
// without a raw U+2028 or U+2029. Strings already canonicalized once, as
// in event data, take this path. escaped reports any backslash, so that a
// key's token is also its decoded form only when canonical && !escaped.
func (c *canonicalizer) scanString() (tok []byte, canonical, escaped bool, err error) {
	start := c.pos
	canonical = true
	nonASCII := false
	i := start + 1
	for ; i < len(c.in); i++ {
		b := c.in[i]
		if b == '"' {
			break
		}
		switch {
		case b == '\\':
			escaped = true
			if i+1 >= len(c.in) {
				return nil, false, false, errMalformed
			}
			i++
			switch c.in[i] {
			case '"', '\\', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if !encoderEscape(c.in[i+1:]) {
					canonical = false
				}
			default:
				canonical = false
			}
		case b < 0x20:
			canonical = false
		case b >= utf8.RuneSelf:
			nonASCII = true
		}
	}
	if i >= len(c.in) {
		return nil, false, false, errMalformed
	}
	c.pos = i + 1
	tok = c.in[start:c.pos]
	if canonical && nonASCII {
		body := tok[1 : len(tok)-1]
		canonical = utf8.Valid(body) && !bytes.Contains(body, []byte("\u2028")) && !bytes.Contains(body, []byte("\u2029"))
	}
	return tok, canonical, escaped, nil
}

// encoderEscape reports whether hex, the text after a \u, is an escape
// encoding/json's encoder writes: 2028, 2029, or 00XX in lowercase for a
// control byte that has no short escape.
func encoderEscape(hex []byte) bool {
	if len(hex) < 4 {
		return false
	}
	switch string(hex[:4]) {
	case "2028", "2029":
		return true
	}
	if hex[0] != '0' || hex[1] != '0' || (hex[2] != '0' && hex[2] != '1') {
		return false
	}
	lo := hex[3]
	var v byte
	switch {
	case '0' <= lo && lo <= '9':
		v = lo - '0'
	case 'a' <= lo && lo <= 'f':
		v = lo - 'a' + 10
	default:
		return false
	}
	v += (hex[2] - '0') << 4
	switch v {
	case '\b', '\f', '\n', '\r', '\t':
		return false
	}
	return true
}

const hexDigits = "0123456789abcdef"

// appendJSONString quotes s as encoding/json's encoder does with HTML
// escaping off: the short escapes for \b \f \n \r \t " and \, \u00XX for
// other control bytes, \ufffd for invalid UTF-8, and \u2028 and \u2029
// escaped; everything else, <>& included, as is.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		b := s[i]
		if b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[b>>4], hexDigits[b&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}
