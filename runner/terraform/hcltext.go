package terraform

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
	"github.com/zclconf/go-cty/cty"
)

// This file writes the root module's values already in the layout
// hclwrite.Format gives them, so that the adapter needs neither hclwrite
// nor, through it, go-cmp, whose init every start of nova would pay for.
// The rules are Format's, as it applies them to the token stream
// hclwrite.TokensForValue produces; the tests hold the two to the same
// bytes.

// hclLine is one line of an expression: its text without indentation,
// and its net count of opening brackets, which is all Format looks at to
// decide how far the following lines are indented.
type hclLine struct {
	text string
	open int
}

// exprLines writes v, a value made by ctyValue, as an HCL literal. Going
// through cty rather than the JSON-shaped value keeps what cty does to it:
// strings and object keys NFC-normalised, keys in cty's order, numbers as
// the big.Float cty parsed them into.
func exprLines(v cty.Value) ([]hclLine, error) {
	ty := v.Type()
	switch {
	case v.IsNull():
		return []hclLine{{text: "null"}}, nil
	case !v.IsKnown():
		return nil, fmt.Errorf("no HCL literal for an unknown value")
	case ty == cty.Bool:
		if v.True() {
			return []hclLine{{text: "true"}}, nil
		}
		return []hclLine{{text: "false"}}, nil
	case ty == cty.Number:
		return []hclLine{{text: v.AsBigFloat().Text('f', -1)}}, nil
	case ty == cty.String:
		return []hclLine{{text: quoteHCL(v.AsString())}}, nil
	case ty.IsTupleType() || ty.IsListType() || ty.IsSetType():
		// Elements follow each other on one line; only an object inside
		// breaks it, and the text after that object's closing brace
		// continues on the brace's line.
		lines := []hclLine{{text: "[", open: 1}}
		first := true
		for it := v.ElementIterator(); it.Next(); {
			_, elem := it.Element()
			if !first {
				lines[len(lines)-1].text += ", "
			}
			first = false
			more, err := exprLines(elem)
			if err != nil {
				return nil, err
			}
			lines = joinLines(lines, more)
		}
		return joinLines(lines, []hclLine{{text: "]", open: -1}}), nil
	case ty.IsObjectType() || ty.IsMapType():
		if v.LengthInt() == 0 {
			return []hclLine{{text: "{}"}}, nil
		}
		var keys []string
		var widths []int
		var values [][]hclLine
		for it := v.ElementIterator(); it.Next(); {
			k, elem := it.Element()
			key := k.AsString()
			if !hclsyntax.ValidIdentifier(key) {
				key = quoteHCL(key)
			}
			keys = append(keys, key)
			widths = append(widths, columns(key))
			lines, err := exprLines(elem)
			if err != nil {
				return nil, err
			}
			values = append(values, lines)
		}
		pads := alignment(widths, func(i int) bool { return len(values[i]) > 1 })
		lines := []hclLine{{text: "{", open: 1}}
		for i, key := range keys {
			lines = append(lines, hclLine{text: key + pads[i] + " = " + values[i][0].text, open: values[i][0].open})
			lines = append(lines, values[i][1:]...)
		}
		return append(lines, hclLine{text: "}", open: -1}), nil
	}
	// ctyValue makes no other kind of value; an error rather than a guess
	// if that ever changes.
	return nil, fmt.Errorf("no HCL literal for a value of type %s", ty.FriendlyName())
}

// joinLines continues the last line of lines with the first of more.
func joinLines(lines, more []hclLine) []hclLine {
	last := &lines[len(lines)-1]
	last.text += more[0].text
	last.open += more[0].open
	return append(lines, more[1:]...)
}

// indentLines lays out an attribute's expression whose first line follows
// the attribute's name at nesting level base. Format indents a line by
// the brackets still open before it, except that a line opening several
// at once (`[{`) adds one level, not several, and the line that closes
// them all takes that level back: hence a stack of per-line counts
// rather than a depth.
func indentLines(lines []hclLine, base int) string {
	var b strings.Builder
	var opened []int
	for i, l := range lines {
		level := base + len(opened)
		switch {
		case l.open > 0:
			opened = append(opened, l.open)
		case l.open < 0:
			for closed := -l.open; closed > 0 && len(opened) > 0; {
				top := &opened[len(opened)-1]
				if closed < *top {
					*top -= closed
					break
				}
				closed -= *top
				opened = opened[:len(opened)-1]
			}
			level = base + len(opened)
		}
		if i > 0 {
			b.WriteByte('\n')
			b.WriteString(strings.Repeat("  ", level))
		}
		b.WriteString(l.text)
	}
	return b.String()
}

// alignment is the padding Format puts after each name of a run of
// attributes so that their = line up. An attribute whose value spans
// lines is not aligned and ends the run: the runs on either side of it
// are aligned separately.
func alignment(widths []int, multiline func(int) bool) []string {
	pads := make([]string, len(widths))
	start := 0
	for i := 0; i <= len(widths); i++ {
		if i < len(widths) && !multiline(i) {
			continue
		}
		widest := 0
		for _, w := range widths[start:i] {
			widest = max(widest, w)
		}
		for j := start; j < i; j++ {
			pads[j] = strings.Repeat(" ", widest-widths[j])
		}
		start = i + 1
	}
	return pads
}

// columns is how wide Format takes a name to be: grapheme clusters,
// counted token by token as the HCL lexer splits it (a quoted key's
// quotes and $ or % are tokens of their own, so a combining mark after
// one starts a cluster of its own).
func columns(name string) int {
	ascii := true
	for i := 0; i < len(name); i++ {
		ascii = ascii && name[i] < utf8.RuneSelf
	}
	if ascii {
		return len(name)
	}
	toks, _ := hclsyntax.LexConfig([]byte(name), "", hcl.InitialPos)
	n := 0
	for _, t := range toks {
		n += t.Range.End.Column - t.Range.Start.Column
	}
	return n
}

// quoteHCL writes s as a quoted HCL string that evaluates to s: besides
// the usual escapes, ${ and %{ are doubled so that a value can never
// become an interpolation or a directive, and characters that are not
// printable are written as escapes so that the file shows what it holds.
func quoteHCL(s string) string {
	var b strings.Builder
	b.Grow(len(s) + 2)
	b.WriteByte('"')
	for i, r := range s {
		switch r {
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '$', '%':
			b.WriteRune(r)
			if strings.HasPrefix(s[i+1:], "{") {
				b.WriteRune(r)
			}
		default:
			switch {
			case unicode.IsPrint(r):
				// Invalid UTF-8 arrives here as U+FFFD, and is written
				// as that.
				b.WriteRune(r)
			case r <= 0xFFFF:
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				fmt.Fprintf(&b, `\U%08x`, r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// moduleRef is the reference to an output of a module call; both names
// are identifiers, so there is nothing to escape.
func moduleRef(instance, output string) string {
	return "module." + instance + "." + output
}
