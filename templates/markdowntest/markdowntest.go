// Package markdowntest checks Markdown that Nova writes to a forge (pull
// request comments, job summaries, issues) the way a reader gets it:
// rendered to HTML by a CommonMark renderer with GitHub's extensions
// (goldmark with GFM: tables, autolinks, strikethrough, task lists), raw
// HTML passed through, then parsed as a browser parses it. It is for the
// tests that prove text from the change under review shows as text.
package markdowntest

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/extension"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"golang.org/x/net/html"
)

// Hostile are values a change under review could carry into a contract
// field, a policy message or rule id, a resource address or a comment, each
// trying one way to be read as more than text.
var Hostile = []struct{ Name, Value string }{
	{"fake heading", "ok\n### ✅ nova run · approved by sre"},
	{"heading at the start", "# ✅ approved"},
	{"image", "![ok](http://evil.example/pixel.png)"},
	{"link", "[click here](javascript:alert(1))"},
	{"reference link", "[x][1]\n\n[1]: http://evil.example"},
	{"bare URL", "see http://evil.example/x and www.evil.example"},
	{"angle autolink", "<http://evil.example>"},
	{"mention", "cc @octocat please"},
	{"team mention", "@org/team approve this"},
	{"email", "mail admin@evil.example"},
	{"HTML comment", "<!-- the rest is hidden"},
	{"inline HTML comment", "a <!-- hidden --> b"},
	{"details", "<details><summary>nothing to see</summary>"},
	{"closing cell", "</td></tr></table><h1>approved</h1>"},
	{"img tag", `<img src=x onerror="alert(1)">`},
	{"pipe", "a | b | c"},
	{"escaped pipe", `a \| b`},
	{"code span", "`code` and `` ` ``"},
	{"fence", "```\nfenced\n```"},
	{"row injection", "x |\n| injected | row |\n|---|---|"},
	{"emphasis", "**bold** __bold__ *em* _em_ ~~struck~~"},
	{"math", "$\\sum x$ and $$y$$"},
	{"entity", "&lt;b&gt; &amp; &#64;octocat"},
	{"block quote", "> quoted"},
	{"list", "- item\n1. item\n+ item"},
	{"thematic break", "---"},
	{"setext", "title\n==="},
	{"task list", "- [x] approved"},
	{"backslash", `trailing \`},
	{"carriage return", "a\rb\r\nc"},
	{"footnote", "x[^1]\n\n[^1]: note"},
}

// GitHubOnly names the Hostile values whose construct GitHub renders and
// goldmark does not (math): Check cannot see them.
var GitHubOnly = map[string]bool{"math": true}

// Shown is how a reader sees s once Nova escaped it: line breaks as
// spaces, a zero-width space after each @, no space around it.
func Shown(s string) string {
	return strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\r", " ", "\n", " ", "@", "@\u200b").Replace(s))
}

// Allow is what Nova itself puts into a document.
type Allow struct {
	// Comments are prefixes of the HTML comments Nova writes (its
	// markers).
	Comments []string
	// Links are the link targets Nova writes.
	Links []string
	// Headings is how many headings Nova writes.
	Headings int
}

// elements Nova's Markdown renders to; anything else came from a value.
var elements = []string{"html", "head", "body", "p", "h3", "h4", "table", "thead", "tbody", "tr", "th", "td",
	"strong", "em", "code", "pre", "details", "summary", "ul", "li", "a"}

// blocks are the elements whose text a value shows in.
var blocks = []string{"p", "h1", "h2", "h3", "h4", "h5", "h6", "td", "th", "li", "summary", "pre"}

// mention is what GitHub and Gitea turn into a mention (or an email link)
// in rendered text.
var mention = regexp.MustCompile(`@[A-Za-z0-9]`)

// Check renders md and returns every way in which it is more than what
// allow lets Nova write, and each of texts that no paragraph, heading,
// list item or table cell shows whole (as Shown gives it): a value that
// became markup, or broke out of its cell, is not shown whole.
func Check(md string, allow Allow, texts ...string) []string {
	var out bytes.Buffer
	gm := goldmark.New(goldmark.WithExtensions(extension.GFM, extension.Footnote), goldmark.WithRendererOptions(gmhtml.WithUnsafe()))
	if err := gm.Convert([]byte(md), &out); err != nil {
		return []string{fmt.Sprintf("rendering: %v", err)}
	}
	doc, err := html.Parse(&out)
	if err != nil {
		return []string{fmt.Sprintf("parsing the rendered HTML: %v", err)}
	}
	var problems, shown []string
	headings := 0
	for n := range doc.Descendants() {
		switch n.Type {
		case html.ElementNode:
			if !slices.Contains(elements, n.Data) {
				problems = append(problems, fmt.Sprintf("element <%s>", n.Data))
			}
			if len(n.Data) == 2 && n.Data[0] == 'h' && '1' <= n.Data[1] && n.Data[1] <= '6' {
				headings++
			}
			for _, a := range n.Attr {
				if n.Data == "a" && a.Key == "href" && slices.Contains(allow.Links, a.Val) {
					continue
				}
				if n.Data == "td" || n.Data == "th" {
					if a.Key == "style" || a.Key == "align" {
						continue
					}
				}
				problems = append(problems, fmt.Sprintf("<%s %s=%q>", n.Data, a.Key, a.Val))
			}
			if slices.Contains(blocks, n.Data) {
				shown = append(shown, text(n))
			}
		case html.CommentNode:
			if !slices.ContainsFunc(allow.Comments, func(p string) bool { return strings.HasPrefix(strings.TrimSpace(n.Data), p) }) {
				problems = append(problems, fmt.Sprintf("HTML comment <!--%s-->", n.Data))
			}
		case html.TextNode:
			if m := mention.FindString(n.Data); m != "" {
				problems = append(problems, fmt.Sprintf("mention %q in %q", m, n.Data))
			}
		}
	}
	if headings != allow.Headings {
		problems = append(problems, fmt.Sprintf("%d headings, want %d", headings, allow.Headings))
	}
	for _, t := range texts {
		want := Shown(t)
		if !slices.ContainsFunc(shown, func(s string) bool { return strings.Contains(s, want) }) {
			problems = append(problems, fmt.Sprintf("%q is not shown whole in any paragraph, heading, item or cell", want))
		}
	}
	return problems
}

// text is the text n shows, as a browser's textContent.
func text(n *html.Node) string {
	var b strings.Builder
	for d := range n.Descendants() {
		if d.Type == html.TextNode {
			b.WriteString(d.Data)
		}
	}
	return b.String()
}
