package templates

import (
	"fmt"
	"strings"
)

// In HTML mode each action's output is escaped for where it lands, as
// html/template escapes it, for the places Nova's report puts values: HTML
// text, the text of title and textarea, quoted attribute values, and the
// fragment or query of a quoted URL attribute. An action anywhere else (a
// tag or attribute name, an unquoted value, the start of a URL, a script,
// a style) is refused when the template is parsed.

type escaper uint8

const (
	escNone escaper = iota
	escHTML
	// escURLPart percent-encodes for a URL's query or fragment, then
	// escapes for the attribute.
	escURLPart
)

type htmlState uint8

const (
	hText      htmlState = iota
	hTagName             // in <name or </name
	hTag                 // between attributes
	hAttrName            // in an attribute's name
	hAfterName           // after a name, before = or the next attribute
	hBeforeValue
	hQuoted   // in a quoted value; quote says which quote
	hUnquoted // in an unquoted value
	hElement  // the text of title, textarea, script or style, up to its end tag
)

type htmlContext struct {
	state htmlState
	// elem is the element whose tag is being read or whose text this is.
	elem string
	// closing is set in an end tag.
	closing bool
	attr    string
	quote   byte
	// url is set in a URL attribute's value; inQuery once it has passed
	// its ? or #.
	url, inQuery bool
}

// escapeHTML sets the escaper of every action in body, walking the
// template as html/template does: each branch of an if must end where the
// other does, and a range's body where it started.
func escapeHTML(name string, body []node) error {
	c, err := escapeList(name, htmlContext{}, body)
	if err != nil {
		return err
	}
	if c.state != hText {
		return fmt.Errorf("template: %s: ends inside a tag or element", name)
	}
	return nil
}

func escapeList(name string, c htmlContext, list []node) (htmlContext, error) {
	for _, n := range list {
		var err error
		switch n := n.(type) {
		case textNode:
			if c, err = c.advance(string(n)); err != nil {
				return c, fmt.Errorf("template: %s: %v", name, err)
			}
		case *actionNode:
			if n.esc, err = c.escaper(); err != nil {
				return c, fmt.Errorf("template: %s:%d: %v", name, n.line, err)
			}
		case *ifNode:
			a, err := escapeList(name, c, n.then)
			if err != nil {
				return c, err
			}
			b, err := escapeList(name, c, n.els)
			if err != nil {
				return c, err
			}
			if a != b {
				return c, fmt.Errorf("template: %s:%d: the branches of if/with end in different HTML contexts", name, n.line)
			}
			c = a
		case *rangeNode:
			end, err := escapeList(name, c, n.body)
			if err != nil {
				return c, err
			}
			if end != c {
				return c, fmt.Errorf("template: %s:%d: range's body ends in another HTML context than it starts in", name, n.line)
			}
		case *templateNode:
			return c, fmt.Errorf("template: %s:%d: template calls are not supported in HTML mode", name, n.line)
		}
	}
	return c, nil
}

func (c htmlContext) escaper() (escaper, error) {
	switch {
	case c.state == hText:
		return escHTML, nil
	case c.state == hElement && (c.elem == "title" || c.elem == "textarea"):
		return escHTML, nil
	case c.state == hQuoted && kindOf(c.attr) == plainAttr:
		return escHTML, nil
	case c.state == hQuoted && c.url && c.inQuery:
		return escURLPart, nil
	case c.state == hQuoted:
		return 0, fmt.Errorf("an action in attribute %s's value is not supported", c.attr)
	case c.state == hElement:
		return 0, fmt.Errorf("an action in <%s> is not supported", c.elem)
	}
	return 0, fmt.Errorf("an action inside a tag but outside a quoted attribute value is not supported")
}

type attrKind uint8

const (
	plainAttr attrKind = iota
	urlAttr
	// codeAttr values are script, style, srcset or HTML, whose escaping
	// this engine does not do.
	codeAttr
)

// kindOf is html/template's classification of attribute name's value.
func kindOf(name string) attrKind {
	if prefix, short, ok := strings.Cut(name, ":"); ok && !strings.HasPrefix(name, "data-") {
		if prefix == "xmlns" {
			return urlAttr
		}
		name = short
	}
	name = strings.TrimPrefix(name, "data-")
	switch name {
	case "action", "archive", "background", "cite", "classid", "codebase", "data", "formaction",
		"href", "icon", "longdesc", "manifest", "poster", "profile", "src", "usemap", "xmlns":
		return urlAttr
	case "style", "srcset", "srcdoc":
		return codeAttr
	}
	if strings.HasPrefix(name, "on") {
		return codeAttr
	}
	if strings.Contains(name, "src") || strings.Contains(name, "uri") || strings.Contains(name, "url") {
		return urlAttr
	}
	return plainAttr
}

func isNameByte(c byte) bool {
	return !isSpaceByte(c) && c != '>' && c != '/' && c != '=' && c != '"' && c != '\'' && c != '<'
}

func isLetter(c byte) bool { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }

// advance returns the context after text s.
func (c htmlContext) advance(s string) (htmlContext, error) {
	for i := 0; i < len(s); {
		ch := s[i]
		switch c.state {
		case hText:
			j := strings.IndexByte(s[i:], '<')
			if j < 0 {
				return c, nil
			}
			i += j + 1
			rest := s[i:]
			switch {
			case strings.HasPrefix(rest, "!--"):
				// html/template drops comments from the page; this engine
				// would keep them, so it takes none.
				return c, fmt.Errorf("HTML comments are not supported")
			case len(rest) > 0 && isLetter(rest[0]):
				c = htmlContext{state: hTagName}
			case len(rest) > 1 && rest[0] == '/' && isLetter(rest[1]):
				c = htmlContext{state: hTagName, closing: true}
				i++
			case rest == "" || rest == "/":
				// html/template rewrites a < that an action follows to
				// &lt;; taking it for a tag's start refuses the action.
				return htmlContext{state: hTagName}, nil
			}
		case hTagName:
			if isNameByte(ch) {
				c.elem += strings.ToLower(string(ch))
				i++
				continue
			}
			c.state = hTag
		case hTag:
			switch {
			case isSpaceByte(ch) || ch == '/':
				i++
			case ch == '>':
				i++
				c = c.afterTag()
			default:
				c.state, c.attr = hAttrName, ""
			}
		case hAttrName:
			if isNameByte(ch) {
				c.attr += strings.ToLower(string(ch))
				i++
				continue
			}
			c.state = hAfterName
		case hAfterName:
			switch {
			case isSpaceByte(ch):
				i++
			case ch == '=':
				i++
				c.state = hBeforeValue
			default:
				c.state = hTag
			}
		case hBeforeValue:
			switch {
			case isSpaceByte(ch):
				i++
			case ch == '"' || ch == '\'':
				i++
				c.state, c.quote, c.url, c.inQuery = hQuoted, ch, kindOf(c.attr) == urlAttr, false
			case ch == '>':
				c.state = hTag
			default:
				c.state = hUnquoted
			}
		case hQuoted:
			switch ch {
			case c.quote:
				c.state, c.quote, c.url, c.inQuery, c.attr = hTag, 0, false, false, ""
			case '#', '?':
				c.inQuery = c.url
			}
			i++
		case hUnquoted:
			switch {
			case isSpaceByte(ch):
				c.state = hTag
			case ch == '>':
				c.state = hTag
			default:
				i++
			}
		case hElement:
			end := indexFold(s[i:], "</"+c.elem)
			if end < 0 {
				return c, nil
			}
			i += end + 2
			c = htmlContext{state: hTagName, closing: true}
		}
	}
	return c, nil
}

// afterTag is the context after a tag's >: the element's own text for the
// elements whose text is not HTML, else HTML text.
func (c htmlContext) afterTag() htmlContext {
	if !c.closing {
		switch c.elem {
		case "title", "textarea", "script", "style":
			return htmlContext{state: hElement, elem: c.elem}
		}
	}
	return htmlContext{}
}

func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

// htmlEscape escapes as html/template does in text and attribute values.
// Every byte it replaces is ASCII, so it works on bytes.
func htmlEscape(s string) string {
	var b strings.Builder
	written := 0
	for i := 0; i < len(s); i++ {
		var repl string
		switch s[i] {
		case 0:
			repl = "\uFFFD"
		case '"':
			repl = "&#34;"
		case '&':
			repl = "&amp;"
		case '\'':
			repl = "&#39;"
		case '+':
			repl = "&#43;"
		case '<':
			repl = "&lt;"
		case '>':
			repl = "&gt;"
		default:
			continue
		}
		b.WriteString(s[written:i])
		b.WriteString(repl)
		written = i + 1
	}
	if written == 0 {
		return s
	}
	b.WriteString(s[written:])
	return b.String()
}

// urlEscape percent-encodes every byte but RFC 3986's unreserved ones, in
// lower-case hex as html/template does.
func urlEscape(s string) string {
	const hex = "0123456789abcdef"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if isLetter(c) || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('%')
		b.WriteByte(hex[c>>4])
		b.WriteByte(hex[c&15])
	}
	return b.String()
}
