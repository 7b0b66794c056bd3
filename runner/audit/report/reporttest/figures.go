// Package reporttest checks a rendered audit report the way a reader
// would, for the tests of the report and of the command that writes it
// (over the page as rendered, or as a browser's DOM of it).
package reporttest

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"golang.org/x/net/html"
)

// CheckFigures checks that in every figure each chart mark's data-value is
// the text of a cell of the figure's table — every charted number can be
// read without the chart — and returns how many charts it checked.
func CheckFigures(page []byte) (int, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return 0, err
	}
	charts := 0
	var problems []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "figure" {
			values, cells, svgs, tables := figureContents(n)
			if svgs > 0 {
				charts += svgs
				switch {
				case tables == 0:
					problems = append(problems, "a chart without a table")
				case len(values) == 0:
					problems = append(problems, "a chart without marks")
				}
				for _, v := range values {
					if !slices.Contains(cells, v) {
						problems = append(problems, fmt.Sprintf("%q is charted but not in the table", v))
					}
				}
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if len(problems) > 0 {
		return charts, fmt.Errorf("%d problem(s): %s", len(problems), strings.Join(problems, "; "))
	}
	return charts, nil
}

func figureContents(fig *html.Node) (values, cells []string, svgs, tables int) {
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "svg":
				svgs++
			case "table":
				tables++
			case "td":
				cells = append(cells, text(n))
			}
			for _, a := range n.Attr {
				if a.Key == "data-value" {
					values = append(values, a.Val)
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(fig)
	return values, cells, svgs, tables
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			b.WriteString(n.Data)
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(n)
	return strings.TrimSpace(b.String())
}

// Structure is the report's outline: each section's figures, with the
// columns of their tables, or why they are empty. Two renderings of the
// same kind of history have the same structure whatever their times, ids
// and row counts.
func Structure(page []byte) ([]string, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	var out []string
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			switch n.Data {
			case "h2", "h3":
				out = append(out, n.Data+" "+text(n))
			case "table":
				var head []string
				var inner func(m *html.Node)
				inner = func(m *html.Node) {
					if m.Type == html.ElementNode && m.Data == "th" {
						head = append(head, text(m))
					}
					for c := m.FirstChild; c != nil; c = c.NextSibling {
						inner(c)
					}
				}
				inner(n)
				out = append(out, "table "+strings.Join(head, "|"))
				return
			case "p":
				if hasClass(n, "empty") {
					out = append(out, "empty "+text(n))
				}
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	return out, nil
}

func hasClass(n *html.Node, class string) bool {
	for _, a := range n.Attr {
		if a.Key == "class" && slices.Contains(strings.Fields(a.Val), class) {
			return true
		}
	}
	return false
}

// Table is the body of the page's table captioned caption: each row's
// cells' text, in order. A page without that table is an error, so a
// test reading an empty table knows it found the one it asked for.
func Table(page []byte, caption string) ([][]string, error) {
	doc, err := html.Parse(bytes.NewReader(page))
	if err != nil {
		return nil, err
	}
	var found *html.Node
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if found != nil {
			return
		}
		if n.Type == html.ElementNode && n.Data == "caption" && text(n) == caption && n.Parent != nil && n.Parent.Data == "table" {
			found = n.Parent
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if found == nil {
		return nil, fmt.Errorf("no table captioned %q", caption)
	}
	var rows [][]string
	var inner func(n *html.Node)
	inner = func(n *html.Node) {
		if n.Type == html.ElementNode && n.Data == "tr" {
			var cells []string
			for c := n.FirstChild; c != nil; c = c.NextSibling {
				if c.Type == html.ElementNode && c.Data == "td" {
					cells = append(cells, text(c))
				}
			}
			if len(cells) > 0 {
				rows = append(rows, cells)
			}
			return
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			inner(c)
		}
	}
	inner(found)
	return rows, nil
}
