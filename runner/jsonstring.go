package runner

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnquotedJSON appends to dst the Go string that encoding/json
// decodes a JSON string's text (what lies between its quotes) to: a
// surrogate pair is one character, and each lone surrogate escape and
// each byte of invalid UTF-8 becomes U+FFFD. ok is false for what
// encoding/json's scanner refuses: an unknown or cut-off escape, a bare
// quote or a control character. Canonical and the policy engine's plan
// reader both decode strings without encoding/json, and must agree with it
// and with each other.
func AppendUnquotedJSON(dst, s []byte) (out []byte, ok bool) {
	for r := 0; r < len(s); {
		c := s[r]
		switch {
		case c == '\\':
			if r+1 >= len(s) {
				return dst, false
			}
			switch e := s[r+1]; e {
			case '"', '\\', '/':
				dst = append(dst, e)
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				rr := UnicodeEscape(s[r:])
				if rr < 0 {
					return dst, false
				}
				r += 6
				if utf16.IsSurrogate(rr) {
					// Only a high surrogate followed by a low one is a
					// character; anything else is one U+FFFD and the next
					// escape is read on its own.
					if pair := utf16.DecodeRune(rr, UnicodeEscape(s[r:])); pair != utf8.RuneError {
						dst = utf8.AppendRune(dst, pair)
						r += 6
						continue
					}
					rr = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, rr)
				continue
			default:
				return dst, false
			}
			r += 2
		case c == '"' || c < 0x20:
			return dst, false
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			r++
		default:
			rr, size := utf8.DecodeRune(s[r:])
			dst = utf8.AppendRune(dst, rr)
			r += size
		}
	}
	return dst, true
}

// unquoteToken decodes a whole quoted token, quotes included.
func unquoteToken(dst, tok []byte) ([]byte, error) {
	if len(tok) < 2 {
		return dst, errMalformed
	}
	out, ok := AppendUnquotedJSON(dst, tok[1:len(tok)-1])
	if !ok {
		return out, errMalformed
	}
	return out, nil
}

// UnicodeEscape reads the \uXXXX escape at the start of s, or returns -1
// when s does not start with one.
func UnicodeEscape(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' {
		return -1
	}
	var r rune
	for _, c := range s[2:6] {
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return -1
		}
		r = r<<4 | rune(c)
	}
	return r
}
