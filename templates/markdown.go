package templates

import (
	"html"
	"strings"
	"sync"
)

// EscapeMarkdown returns s as inline Markdown text that GitHub and Gitea
// render as the characters of s and nothing else, wherever inline text may
// stand: a paragraph, a heading, a list item, a table cell, or <code>
// within one of them. It is for every value that comes from the change under
// review (contract fields, policy messages and rule ids, resource
// addresses, approver names, reasons), which must not be able to add a
// heading, a link, an image, a mention, an HTML tag or comment, or a
// table cell or row to what Nova writes around it.
//
//   - Every ASCII punctuation character is backslash-escaped, which
//     CommonMark allows for all of them and which GFM also applies to
//     `|` inside a table: no emphasis, code span, link, image, autolink
//     (`http\:`), math (`\$`), strikethrough, table cell, or block
//     marker (`#`, `>`, `-`, `+`, `=`, `1.`) survives.
//   - `<`, `>`, `&`, `'` and `"` are HTML-escaped by html.EscapeString:
//     no tag, comment or entity of the input reaches the page.
//   - `@` is followed by a zero-width space, since the forges link
//     mentions in rendered text, where a backslash no longer is: `@org/team`
//     shows as itself and notifies nobody.
//   - Line breaks become spaces, so the text stays on its line and in
//     its table row.
//
// An escaped value must not go into a code span or fence, nor into a
// line that starts an HTML block (<details>, <summary>): backslashes and
// entities are literal there. Templates use <code>…</code> instead of a
// code span.
func EscapeMarkdown(s string) string {
	return html.EscapeString(markdownEscaper().Replace(s))
}

// markdownEscaper handles what html.EscapeString does not, leaving it the
// characters it escapes.
var markdownEscaper = sync.OnceValue(func() *strings.Replacer {
	pairs := []string{"\r\n", " ", "\r", " ", "\n", " ", "@", "\\@\u200b"}
	for c := byte('!'); c <= '~'; c++ {
		isPunct := c < '0' || '9' < c && c < 'A' || 'Z' < c && c < 'a' || 'z' < c
		if isPunct && !strings.ContainsRune(`<>&'"@`, rune(c)) {
			pairs = append(pairs, string(c), `\`+string(c))
		}
	}
	return strings.NewReplacer(pairs...)
})
