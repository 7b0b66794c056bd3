package templates

// Nova renders its templates with this small engine rather than
// text/template or html/template: their executors look methods up by a
// name known only at run time (reflect's MethodByName), and a binary that
// can reach such a call keeps every exported method of every reachable
// type, about ten megabytes of nova. This engine reads struct fields and
// calls functions from a fixed table, never a method by name.
//
// It accepts the subset of text/template's syntax Nova's templates use and
// rejects the rest when the template is parsed, so a template edit that
// reaches beyond the subset fails in tests rather than when a user runs
// nova. Within the subset the output is text/template's byte for byte
// (html/template's in HTML mode); parity_test.go renders every template
// with both to hold it to that.

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Template is a set of parsed templates, executed by name.
type Template struct {
	name  string
	trees map[string][]node
	funcs map[string]Func
	html  bool
}

// Func is a function templates may call. Each wraps a typed Go function,
// checking its arguments' types itself, so that no call needs reflection.
type Func func(args []any) (any, error)

type node interface{}

type textNode []byte

// actionNode prints its pipeline's value, escaped by esc (HTML mode).
type actionNode struct {
	line int
	cmd  expr
	esc  escaper
}

// ifNode is an if or, with with set, a with.
type ifNode struct {
	line      int
	with      bool
	cond      expr
	then, els []node
}

type rangeNode struct {
	line int
	vars []string // none, the element's, or the index's and the element's
	over expr
	body []node
}

type templateNode struct {
	line int
	name string
	arg  expr // nil passes nil
}

type expr interface{}

// fieldExpr is ., .A.B, $, $x or $x.A: a start and a chain of fields.
type fieldExpr struct {
	variable string // "" for dot, "$" or "$x"
	fields   []string
}

type callExpr struct {
	fn   string
	args []expr
}

type literal struct{ v any }

// source is one template file of a set.
type source struct{ name, text string }

// parse parses sources into one set, named name, delimited by left and
// right. Each source is a template of its name; define adds more.
func parse(name, left, right string, funcs map[string]Func, html bool, srcs ...source) (*Template, error) {
	t := &Template{name: name, trees: map[string][]node{}, funcs: funcs, html: html}
	for _, src := range srcs {
		p := &parser{t: t, name: src.name, left: left, right: right, src: src.text, line: 1}
		body, err := p.parseFile()
		if err != nil {
			return nil, err
		}
		if _, dup := t.trees[src.name]; dup {
			return nil, fmt.Errorf("template: %s: defined twice", src.name)
		}
		t.trees[src.name] = body
	}
	if html {
		for n, body := range t.trees {
			if err := escapeHTML(n, body); err != nil {
				return nil, err
			}
		}
	}
	return t, nil
}

type parser struct {
	t                    *Template
	vars                 []string // the variables in scope
	name                 string
	left, right          string
	src                  string
	pos, line            int
	trimNext             bool
	toks                 []token
	tokLine, actionStart int
}

// errorf reports an error at the action being parsed.
func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("template: %s:%d: %s", p.name, p.tokLine, fmt.Sprintf(format, args...))
}

// an item is what the scanner yields: text, or one action's tokens.
type item struct {
	text   []byte
	action bool
}

// next returns the next text or action, or ok false at the end.
func (p *parser) next() (it item, ok bool, err error) {
	if p.pos >= len(p.src) {
		return item{}, false, nil
	}
	rest := p.src[p.pos:]
	i := strings.Index(rest, p.left)
	if i != 0 {
		if i < 0 {
			i = len(rest)
		}
		text := rest[:i]
		if p.trimNext {
			text = strings.TrimLeft(text, " \t\r\n")
			p.trimNext = false
		}
		// A left trim marker belongs to the action that follows.
		if i < len(rest) && isTrimLeft(rest[i+len(p.left):]) {
			text = strings.TrimRight(text, " \t\r\n")
		}
		p.line += strings.Count(rest[:i], "\n")
		p.pos += i
		return item{text: []byte(text)}, true, nil
	}
	p.trimNext = false
	p.tokLine = p.line
	p.pos += len(p.left)
	if isTrimLeft(p.src[p.pos:]) {
		p.pos += 2
	}
	if strings.HasPrefix(p.src[p.pos:], "/*") {
		end := strings.Index(p.src[p.pos:], "*/")
		if end < 0 {
			return item{}, false, p.errorf("unclosed comment")
		}
		p.line += strings.Count(p.src[p.pos:p.pos+end], "\n")
		p.pos += end + 2
		if isTrimRight(p.src[p.pos:], p.right) {
			p.pos += 2
			p.trimNext = true
		}
		if !strings.HasPrefix(p.src[p.pos:], p.right) {
			return item{}, false, p.errorf("comment ends before the closing delimiter")
		}
		p.pos += len(p.right)
		return p.next()
	}
	if err := p.lexAction(); err != nil {
		return item{}, false, err
	}
	return item{action: true}, true, nil
}

func isTrimLeft(s string) bool {
	return len(s) >= 2 && s[0] == '-' && strings.IndexByte(" \t\r\n", s[1]) >= 0
}

func isTrimRight(s, right string) bool {
	return len(s) >= 2 && strings.IndexByte(" \t\r\n", s[0]) >= 0 && s[1] == '-' && strings.HasPrefix(s[2:], right)
}

// parseFile parses a whole source: its top level and the templates it
// defines.
func (p *parser) parseFile() ([]node, error) {
	p.vars = []string{"$"}
	body, end, err := p.parseList(true)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errorf("unexpected {{%s}}", end)
	}
	return body, nil
}

// parseList parses nodes up to an end or else (returned as end, with the
// else's tokens left in p.toks), or the end of the source.
func (p *parser) parseList(top bool) (list []node, end string, err error) {
	for {
		it, ok, err := p.next()
		if err != nil {
			return nil, "", err
		}
		if !ok {
			return list, "", nil
		}
		if !it.action {
			if len(it.text) > 0 {
				list = append(list, textNode(it.text))
			}
			continue
		}
		n, end, err := p.parseAction(top)
		if err != nil {
			return nil, "", err
		}
		if end != "" {
			return list, end, nil
		}
		if n != nil {
			list = append(list, n)
		}
	}
}

// parseAction parses the action in p.toks. It returns end for {{end}} and
// {{else}}, with any tokens after else left in p.toks.
func (p *parser) parseAction(top bool) (node, string, error) {
	line := p.tokLine
	first := p.toks[0]
	if first.kind != tIdent {
		cmd, err := p.parsePipeline(p.toks)
		return &actionNode{line: line, cmd: cmd}, "", err
	}
	rest := p.toks[1:]
	switch first.text {
	case "end":
		if len(rest) > 0 {
			return nil, "", p.errorf("unexpected %q in end", rest[0].text)
		}
		return nil, "end", nil
	case "else":
		p.toks = rest
		return nil, "else", nil
	case "if", "with":
		return p.parseIf(line, first.text == "with", rest)
	case "range":
		return p.parseRange(line, rest)
	case "template":
		if len(rest) == 0 || rest[0].kind != tString {
			return nil, "", p.errorf("template needs a quoted name")
		}
		n := &templateNode{line: line, name: rest[0].val.(string)}
		if len(rest) > 1 {
			arg, err := p.parsePipeline(rest[1:])
			if err != nil {
				return nil, "", err
			}
			n.arg = arg
		}
		return n, "", nil
	case "define":
		if !top {
			return nil, "", p.errorf("define is only allowed at the top level")
		}
		if len(rest) != 1 || rest[0].kind != tString {
			return nil, "", p.errorf("define needs one quoted name")
		}
		name := rest[0].val.(string)
		outer := p.vars
		p.vars = []string{"$"}
		body, end, err := p.parseList(false)
		p.vars = outer
		if err != nil {
			return nil, "", err
		}
		if end != "end" {
			return nil, "", p.errorf("define %q has no end", name)
		}
		if _, dup := p.t.trees[name]; dup {
			return nil, "", p.errorf("template %q defined twice", name)
		}
		p.t.trees[name] = body
		return nil, "", nil
	case "block", "break", "continue", "nil":
		return nil, "", p.errorf("%s is not supported by Nova's template engine", first.text)
	}
	cmd, err := p.parsePipeline(p.toks)
	return &actionNode{line: line, cmd: cmd}, "", err
}

func (p *parser) parseIf(line int, with bool, toks []token) (node, string, error) {
	kw := "if"
	if with {
		kw = "with"
	}
	cond, err := p.parsePipeline(toks)
	if err != nil {
		return nil, "", err
	}
	n := &ifNode{line: line, with: with, cond: cond}
	var end string
	if n.then, end, err = p.parseList(false); err != nil {
		return nil, "", err
	}
	switch end {
	case "end":
		return n, "", nil
	case "":
		return nil, "", p.errorf("%s has no end", kw)
	}
	// end is else: plain, or else if chaining another if that shares the
	// end.
	if len(p.toks) > 0 {
		if with || p.toks[0].kind != tIdent || p.toks[0].text != "if" {
			return nil, "", p.errorf("only else and else if are supported")
		}
		elif, _, err := p.parseIf(p.tokLine, false, p.toks[1:])
		if err != nil {
			return nil, "", err
		}
		n.els = []node{elif}
		return n, "", nil
	}
	if n.els, end, err = p.parseList(false); err != nil {
		return nil, "", err
	}
	if end != "end" {
		return nil, "", p.errorf("%s's else has no end", kw)
	}
	return n, "", nil
}

func (p *parser) parseRange(line int, toks []token) (node, string, error) {
	n := &rangeNode{line: line}
	for i, t := range toks {
		if t.kind == tDeclare {
			for j, v := range toks[:i] {
				want := tVariable
				if j%2 == 1 {
					want = tComma
				}
				if v.kind != want || i > 3 || i%2 == 0 || want == tVariable && (v.text == "$" || strings.Contains(v.text[1:], ".")) {
					return nil, "", p.errorf("range declares one or two variables: $e := or $i, $e :=")
				}
				if want == tVariable {
					n.vars = append(n.vars, v.text)
				}
			}
			toks = toks[i+1:]
			break
		}
	}
	over, err := p.parsePipeline(toks)
	if err != nil {
		return nil, "", err
	}
	n.over = over
	mark := len(p.vars)
	p.vars = append(p.vars, n.vars...)
	var end string
	n.body, end, err = p.parseList(false)
	p.vars = p.vars[:mark]
	if err != nil {
		return nil, "", err
	}
	if end != "end" {
		return nil, "", p.errorf("range has no end (range's else is not supported)")
	}
	return n, "", nil
}

// parsePipeline parses one command: an operand, or a function and its
// arguments. Pipes and assignments are outside the subset.
func (p *parser) parsePipeline(toks []token) (expr, error) {
	if len(toks) == 0 {
		return nil, p.errorf("missing value")
	}
	for _, t := range toks {
		switch t.kind {
		case tPipe:
			return nil, p.errorf("pipes (|) are not supported by Nova's template engine")
		case tDeclare, tAssign, tComma:
			return nil, p.errorf("variable declarations and assignments are only supported in range")
		}
	}
	e, rest, err := p.parseCommand(toks)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, p.errorf("unexpected %q", rest[0].text)
	}
	return e, nil
}

// parseCommand parses a command up to a closing parenthesis or the end.
func (p *parser) parseCommand(toks []token) (expr, []token, error) {
	if toks[0].kind == tIdent {
		name := toks[0].text
		if builtin(name) == nil && p.t.funcs[name] == nil {
			return nil, nil, p.errorf("function %q not defined", name)
		}
		c := &callExpr{fn: name}
		toks = toks[1:]
		for len(toks) > 0 && toks[0].kind != tRParen {
			a, rest, err := p.parseOperand(toks)
			if err != nil {
				return nil, nil, err
			}
			c.args, toks = append(c.args, a), rest
		}
		return c, toks, nil
	}
	e, rest, err := p.parseOperand(toks)
	if err != nil {
		return nil, nil, err
	}
	if len(rest) > 0 && rest[0].kind != tRParen {
		return nil, nil, p.errorf("can't give argument to non-function %s", toks[0].text)
	}
	return e, rest, nil
}

func (p *parser) parseOperand(toks []token) (expr, []token, error) {
	t := toks[0]
	switch t.kind {
	case tField, tVariable:
		f := parseField(t.text)
		if f.variable != "" && !slices.Contains(p.vars, f.variable) {
			return nil, nil, p.errorf("undefined variable %q", f.variable)
		}
		return f, toks[1:], nil
	case tString, tNumber:
		return literal{t.val}, toks[1:], nil
	case tLParen:
		if len(toks) < 2 {
			return nil, nil, p.errorf("unclosed parenthesis")
		}
		e, rest, err := p.parseCommand(toks[1:])
		if err != nil {
			return nil, nil, err
		}
		if len(rest) == 0 || rest[0].kind != tRParen {
			return nil, nil, p.errorf("unclosed parenthesis")
		}
		if len(rest) > 1 && rest[1].kind == tField && !rest[1].spaced {
			return nil, nil, p.errorf("fields of a parenthesised value are not supported")
		}
		return e, rest[1:], nil
	case tIdent:
		return nil, nil, p.errorf("function %s as an argument must be parenthesised", t.text)
	}
	return nil, nil, p.errorf("unexpected %q", t.text)
}

func parseField(s string) fieldExpr {
	var f fieldExpr
	if s[0] == '$' {
		end := strings.IndexByte(s, '.')
		if end < 0 {
			end = len(s)
		}
		f.variable, s = s[:end], s[end:]
	}
	if s != "." && s != "" {
		f.fields = strings.Split(s[1:], ".")
	}
	return f
}

// A number is one of text/template's integer constants; Nova's templates
// use no other.
func parseNumber(s string) (any, error) {
	n, err := strconv.ParseInt(s, 0, 64)
	if err != nil {
		return nil, fmt.Errorf("number %q is not supported (integers only)", s)
	}
	return int(n), nil
}
