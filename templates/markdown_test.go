package templates

import (
	"strings"
	"testing"

	"github.com/nova-platform/nova/templates/markdowntest"
)

// markdownContexts are the places Nova's Markdown puts a value in, each
// with the number of headings it has of its own.
var markdownContexts = []struct {
	name     string
	layout   func(v string) string
	headings int
}{
	{"paragraph", func(v string) string { return "**REASON**: " + v + " (more)\n" }, 0},
	{"heading", func(v string) string { return "### ✅ nova plan · <code>" + v + "</code> · dev: pass\n" }, 1},
	{"list item", func(v string) string { return "- `REASON` " + v + "\n- `OTHER` second\n" }, 0},
	{"table cell", func(v string) string {
		return "| rule | message |\n|---|---|\n| <code>" + v + "</code> | " + v + " |\n| next | row |\n"
	}, 0},
	{"line start", func(v string) string { return "text\n\n" + v + "\n\nafter\n" }, 0},
}

// TestEscapeMarkdown puts each hostile value, escaped, in each place and
// reads the rendered page: the value shows whole, as text, and adds
// nothing. Each value, put in raw, must fail the same check in at least
// one place, or the check would prove nothing about it.
func TestEscapeMarkdown(t *testing.T) {
	for _, h := range markdowntest.Hostile {
		t.Run(h.Name, func(t *testing.T) {
			rawFails := false
			for _, c := range markdownContexts {
				allow := markdowntest.Allow{Headings: c.headings}
				doc := c.layout(EscapeMarkdown(h.Value))
				if problems := markdowntest.Check(doc, allow, h.Value); len(problems) > 0 {
					t.Errorf("%s:\n%s\n--- markdown:\n%s", c.name, strings.Join(problems, "\n"), doc)
				}
				rawFails = rawFails || len(markdowntest.Check(c.layout(h.Value), allow, h.Value)) > 0
			}
			if !rawFails && !markdowntest.GitHubOnly[h.Name] {
				t.Errorf("%q is harmless unescaped everywhere: it tests nothing", h.Value)
			}
		})
	}
}

// TestEscapeMarkdownLeavesNoActivePunctuation: every ASCII punctuation
// character of the input is escaped, by a backslash or as an HTML entity;
// this covers what goldmark does not render (GitHub's $math$).
func TestEscapeMarkdownLeavesNoActivePunctuation(t *testing.T) {
	var all strings.Builder
	for c := byte('!'); c <= '~'; c++ {
		if strings.IndexByte("0123456789", c) < 0 && !('A' <= c && c <= 'Z' || 'a' <= c && c <= 'z') {
			all.WriteByte(c)
		}
	}
	got := EscapeMarkdown("x" + all.String() + "x")
	want := `x\!&#34;\#\$\%&amp;&#39;\(\)\*\+\,\-\.\/\:\;&lt;\=&gt;\?\@` + "\u200b" + `\[\\\]\^\_` + "\\`" + `\{\|\}\~x`
	if got != want {
		t.Errorf("EscapeMarkdown(%q)\n = %q\nwant %q", all.String(), got, want)
	}
	for in, want := range map[string]string{
		"":                "",
		"plain words 123": "plain words 123",
		"a\nb\r\nc\rd":    "a b c d",
		"é 日本 ✅":          "é 日本 ✅",
	} {
		if got := EscapeMarkdown(in); got != want {
			t.Errorf("EscapeMarkdown(%q) = %q, want %q", in, got, want)
		}
	}
}
