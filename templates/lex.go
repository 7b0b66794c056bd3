package templates

import (
	"strconv"
	"strings"
)

type tokenKind int

const (
	tIdent    tokenKind = iota // a keyword or function name
	tField                     // . or .A.B
	tVariable                  // $, $x or $x.A
	tString
	tNumber
	tLParen
	tRParen
	tPipe
	tDeclare // :=
	tAssign  // =
	tComma
)

type token struct {
	kind tokenKind
	text string
	val  any // a literal's value
	// spaced is whether space precedes the token: .A.B is one field
	// chain, .A .B two arguments.
	spaced bool
}

func isSpaceByte(c byte) bool { return c == ' ' || c == '\t' || c == '\r' || c == '\n' }

func isWordByte(c byte) bool {
	return c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c >= 0x80
}

// lexAction reads the tokens of the action starting at p.pos into p.toks,
// through its closing delimiter and any right trim marker.
func (p *parser) lexAction() error {
	p.toks = nil
	src := p.src
	spaced := true
	for {
		if p.pos >= len(src) {
			return p.errorf("unclosed action")
		}
		if isTrimRight(src[p.pos:], p.right) {
			p.line += strings.Count(src[p.pos:p.pos+1], "\n")
			p.pos += 2 + len(p.right)
			p.trimNext = true
			break
		}
		if strings.HasPrefix(src[p.pos:], p.right) {
			p.pos += len(p.right)
			break
		}
		c := src[p.pos]
		if isSpaceByte(c) {
			if c == '\n' {
				p.line++
			}
			p.pos++
			spaced = true
			continue
		}
		start := p.pos
		t := token{spaced: spaced}
		spaced = false
		switch {
		case c == '.' || c == '$':
			p.pos++
			for p.pos < len(src) && isWordByte(src[p.pos]) {
				p.pos++
			}
			// A chain continues while a dot is followed by a name.
			for p.pos+1 < len(src) && src[p.pos] == '.' && isWordByte(src[p.pos+1]) {
				p.pos++
				for p.pos < len(src) && isWordByte(src[p.pos]) {
					p.pos++
				}
			}
			t.kind = tField
			if c == '$' {
				t.kind = tVariable
			}
		case c == '"' || c == '`':
			end := p.pos + 1
			for end < len(src) && src[end] != c {
				if src[end] == '\\' && c == '"' {
					end++
				} else if src[end] == '\n' && c == '"' {
					return p.errorf("unterminated string")
				}
				end++
			}
			if end >= len(src) {
				return p.errorf("unterminated string")
			}
			p.pos = end + 1
			s, err := strconv.Unquote(src[start:p.pos])
			if err != nil {
				return p.errorf("bad string %s: %v", src[start:p.pos], err)
			}
			t.kind, t.val = tString, s
		case c == '-' || c == '+' || '0' <= c && c <= '9':
			p.pos++
			for p.pos < len(src) && (isWordByte(src[p.pos]) || src[p.pos] == '.') {
				p.pos++
			}
			n, err := parseNumber(src[start:p.pos])
			if err != nil {
				return p.errorf("%v", err)
			}
			t.kind, t.val = tNumber, n
		case isWordByte(c):
			for p.pos < len(src) && isWordByte(src[p.pos]) {
				p.pos++
			}
			t.kind = tIdent
			switch src[start:p.pos] {
			case "true", "false", "nil":
				return p.errorf("%s is not supported by Nova's template engine", src[start:p.pos])
			}
		case c == '(':
			p.pos++
			t.kind = tLParen
		case c == ')':
			p.pos++
			t.kind = tRParen
		case c == '|':
			p.pos++
			t.kind = tPipe
		case c == ',':
			p.pos++
			t.kind = tComma
		case c == ':' && strings.HasPrefix(src[p.pos:], ":="):
			p.pos += 2
			t.kind = tDeclare
		case c == '=':
			p.pos++
			t.kind = tAssign
		default:
			return p.errorf("unexpected %q in action", c)
		}
		t.text = src[start:p.pos]
		p.toks = append(p.toks, t)
	}
	if len(p.toks) == 0 {
		return p.errorf("missing value for command")
	}
	return nil
}
