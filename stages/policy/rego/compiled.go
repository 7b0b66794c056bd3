package rego

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/version"
)

// The platform rules as OPA's compiler leaves them.
//
// Parsing and compiling the platform rules cost 12–22 ms of CPU in a fresh
// process, a quarter of a no-change run's own CPU (docs/benchmarks.md), to
// arrive at the same modules in every process: the rules are part of the
// binary. OPA has no stored form of a compiled policy that its evaluator
// reads, so Nova keeps one. platform.ast holds the modules after every
// stage that rewrites them (references resolved, imports removed, local
// variables renamed, bodies reordered for safety, terms hoisted), and a
// process builds a compiler over them that runs only the stages deriving
// the compiler's own state from the modules: the module and rule trees,
// the dependency graph, and the rule and comprehension indices.
//
// The file is generated (make rules: go test ./stages/policy/rego -run
// TestCompiledRulesAreCurrent -update) and names the rule sources and the
// OPA version it was made from. A binary whose rules or OPA differ from the
// file's compiles from source, as before; the test fails until the file is
// made again, so that never ships.

//go:embed platform.ast
var compiledPlatform string

// compiledFormat is the first line of platform.ast; a change to the
// encoding changes it.
const compiledFormat = "nova compiled platform rules 1"

// stateStages are the compiler stages that derive the compiler's state
// from modules that every other stage has already rewritten. Every other
// stage is skipped when a compiler is rebuilt from platform.ast: they
// rewrite modules (and would rewrite them twice) or only check them.
var stateStages = []ast.StageID{
	ast.StageInitLocalVarGen, ast.StageSetModuleTree, ast.StageSetRuleTree, ast.StageSetGraph,
	ast.StageBuildRuleIndices, ast.StageBuildComprehensionIndices, ast.StageBuildRequiredCapabilities,
}

// sourcesKey identifies the rule sources and the OPA that compiles them.
func sourcesKey(sources map[string][]byte) string {
	h := sha256.New()
	fmt.Fprintf(h, "%s\nopa %s\n", compiledFormat, version.Version)
	for _, name := range slices.Sorted(maps.Keys(sources)) {
		fmt.Fprintf(h, "%d:%s%d:", len(name), name, len(sources[name]))
		h.Write(sources[name])
	}
	return hex.EncodeToString(h.Sum(nil))
}

// restoreCompiled rebuilds the platform's compiler from data (platform.ast)
// when data was made from these sources by this OPA.
func restoreCompiled(data string, sources map[string][]byte) (*ast.Compiler, error) {
	r := &astReader{s: data, sources: sources}
	if got := r.line(); got != compiledFormat {
		return nil, fmt.Errorf("compiled rules: format %q, want %q", got, compiledFormat)
	}
	if got, want := r.line(), sourcesKey(sources); got != want {
		return nil, errStaleCompiled
	}
	mods, rewritten := r.compiled()
	if r.err != nil {
		return nil, fmt.Errorf("compiled rules: %w", r.err)
	}
	keep := map[ast.StageID]bool{}
	for _, s := range stateStages {
		keep[s] = true
	}
	var skip []ast.StageID
	for _, s := range ast.AllStages() {
		if !keep[s] {
			skip = append(skip, s)
		}
	}
	c := ast.NewCompiler().WithSkipStages(skip...)
	c.Compile(mods)
	if c.Failed() {
		return nil, fmt.Errorf("compiled rules: %w", c.Errors)
	}
	for k, v := range rewritten {
		c.RewrittenVars[k] = v
	}
	return c, nil
}

// errStaleCompiled: platform.ast was made from other rules or another OPA.
var errStaleCompiled = errors.New("compiled rules were made from other sources")

// encodeCompiled writes c's modules (the platform rules, compiled from
// sources) in platform.ast's form.
//
// The form is text: a header of two lines (the format and sourcesKey),
// then the files and the locations the modules point at, the compiler's
// renamed variables, and the modules. Integers are decimal and end in a space,
// strings are their length, ':' and their bytes, and every node starts
// with one letter saying what it is. A location's text is usually where
// its offset says in its file's source, and then only its length is kept.
func encodeCompiled(c *ast.Compiler, sources map[string][]byte) ([]byte, error) {
	w := &astWriter{locs: map[*ast.Location]int{}, files: map[string]int{}, sources: sources}
	names := slices.Sorted(maps.Keys(c.Modules))
	body := &astWriter{locs: w.locs, sources: sources}
	body.int(len(names))
	for _, name := range names {
		body.nl()
		body.module(name, c.Modules[name])
	}
	if body.err != nil {
		return nil, body.err
	}
	w.buf = append(w.buf, compiledFormat+"\n"...)
	w.buf = append(w.buf, sourcesKey(sources)+"\n"...)
	var files []string
	for _, l := range body.order {
		if _, ok := w.files[l.File]; !ok {
			w.files[l.File] = len(files)
			files = append(files, l.File)
		}
	}
	w.int(len(files))
	for _, f := range files {
		w.str(f)
	}
	w.nl()
	w.int(len(body.order))
	for _, loc := range body.order {
		w.nl()
		w.location(loc)
	}
	w.nl()
	vars := make([]string, 0, len(c.RewrittenVars))
	for k := range c.RewrittenVars {
		vars = append(vars, string(k))
	}
	slices.Sort(vars)
	w.int(len(vars))
	for _, k := range vars {
		w.str(k)
		w.str(string(c.RewrittenVars[ast.Var(k)]))
	}
	w.nl()
	w.buf = append(w.buf, body.buf...)
	w.nl()
	return w.buf, w.err
}

type astWriter struct {
	buf     []byte
	locs    map[*ast.Location]int
	order   []*ast.Location
	files   map[string]int
	sources map[string][]byte
	err     error
}

func (w *astWriter) fail(format string, args ...any) {
	if w.err == nil {
		w.err = fmt.Errorf("encoding the compiled rules: "+format, args...)
	}
}

func (w *astWriter) nl()        { w.buf = append(w.buf, '\n') }
func (w *astWriter) tag(c byte) { w.buf = append(w.buf, c) }
func (w *astWriter) int(n int)  { w.buf = append(strconv.AppendInt(w.buf, int64(n), 10), ' ') }

func (w *astWriter) str(s string) {
	w.buf = append(strconv.AppendInt(w.buf, int64(len(s)), 10), ':')
	w.buf = append(w.buf, s...)
}

func (w *astWriter) flag(b bool) {
	if b {
		w.int(1)
	} else {
		w.int(0)
	}
}

// loc refers to a location by its place in the table, 0 being none. A
// location two nodes share stays shared.
func (w *astWriter) loc(l *ast.Location) {
	if l == nil {
		w.int(0)
		return
	}
	i, ok := w.locs[l]
	if !ok {
		w.order = append(w.order, l)
		i = len(w.order)
		w.locs[l] = i
	}
	w.int(i)
}

func (w *astWriter) location(l *ast.Location) {
	w.int(w.files[l.File])
	w.int(l.Row)
	w.int(l.Col)
	w.int(l.Offset)
	src, ok := w.sources[l.File]
	switch {
	case l.Text == nil:
		w.tag('-')
	case ok && l.Offset >= 0 && l.Offset+len(l.Text) <= len(src) && string(src[l.Offset:l.Offset+len(l.Text)]) == string(l.Text):
		w.tag('o')
		w.int(len(l.Text))
	default:
		w.tag('t')
		w.str(string(l.Text))
	}
	w.int(len(l.Tabs))
	for _, t := range l.Tabs {
		w.int(t)
	}
}

func (w *astWriter) module(name string, m *ast.Module) {
	// Comments are not kept (evaluation never reads them); imports and
	// annotations are, by the time compilation ends, none in Nova's
	// rules, and a rule that brings some must extend this form first.
	if len(m.Imports) > 0 || len(m.Annotations) > 0 {
		w.fail("%s has imports or annotations after compiling", name)
	}
	w.str(name)
	w.loc(m.Package.Location)
	w.terms(m.Package.Path)
	w.int(len(m.Rules))
	for _, r := range m.Rules {
		w.nl()
		w.rule(r)
	}
}

func (w *astWriter) rule(r *ast.Rule) {
	if len(r.Annotations) > 0 {
		w.fail("rule at %v has annotations", r.Location)
	}
	w.tag('R')
	w.loc(r.Location)
	w.flag(r.Default)
	h := r.Head
	w.loc(h.Location)
	w.str(string(h.Name))
	w.terms(h.Reference)
	w.terms(h.Args)
	w.optTerm(h.Key)
	w.optTerm(h.Value)
	w.flag(h.Assign)
	w.body(r.Body)
	if r.Else == nil {
		w.tag('_')
	} else {
		w.rule(r.Else)
	}
}

func (w *astWriter) body(b ast.Body) {
	w.int(len(b))
	for _, e := range b {
		w.expr(e)
	}
}

func (w *astWriter) expr(e *ast.Expr) {
	w.tag('E')
	w.loc(e.Location)
	w.int(e.Index)
	w.flag(e.Generated)
	w.flag(e.Negated)
	w.int(len(e.With))
	for _, with := range e.With {
		w.loc(with.Location)
		w.term(with.Target)
		w.term(with.Value)
	}
	switch ts := e.Terms.(type) {
	case *ast.Term:
		w.tag('t')
		w.term(ts)
	case []*ast.Term:
		w.tag('c')
		w.terms(ts)
	case *ast.SomeDecl:
		w.tag('d')
		w.loc(ts.Location)
		w.terms(ts.Symbols)
	case *ast.Every:
		w.tag('e')
		w.loc(ts.Location)
		w.optTerm(ts.Key)
		w.optTerm(ts.Value)
		w.term(ts.Domain)
		w.body(ts.Body)
	default:
		w.fail("expression at %v holds %T", e.Location, e.Terms)
	}
}

func (w *astWriter) terms(ts []*ast.Term) {
	w.int(len(ts))
	for _, t := range ts {
		w.term(t)
	}
}

func (w *astWriter) optTerm(t *ast.Term) {
	if t == nil {
		w.tag('_')
		return
	}
	w.term(t)
}

func (w *astWriter) term(t *ast.Term) {
	if t == nil {
		w.fail("a nil term")
		return
	}
	w.loc(t.Location)
	switch v := t.Value.(type) {
	case ast.Null:
		w.tag('n')
	case ast.Boolean:
		if v {
			w.tag('T')
		} else {
			w.tag('F')
		}
	case ast.Number:
		w.tag('N')
		w.str(string(v))
	case ast.String:
		w.tag('S')
		w.str(string(v))
	case ast.Var:
		w.tag('V')
		w.str(string(v))
	case ast.Ref:
		w.tag('r')
		w.terms(v)
	case ast.Call:
		w.tag('C')
		w.terms(v)
	case *ast.Array:
		w.tag('A')
		w.int(v.Len())
		v.Foreach(w.term)
	case ast.Set:
		w.tag('Z')
		w.terms(v.Slice())
	case ast.Object:
		w.tag('O')
		w.int(v.Len())
		v.Foreach(func(k, val *ast.Term) {
			w.term(k)
			w.term(val)
		})
	case *ast.ArrayComprehension:
		w.tag('a')
		w.term(v.Term)
		w.body(v.Body)
	case *ast.SetComprehension:
		w.tag('z')
		w.term(v.Term)
		w.body(v.Body)
	case *ast.ObjectComprehension:
		w.tag('o')
		w.term(v.Key)
		w.term(v.Value)
		w.body(v.Body)
	default:
		w.fail("term at %v holds %T", t.Location, t.Value)
	}
}

// astReader reads platform.ast. It never panics on a malformed file: the
// first error stops it (every read after it returns zero values), and the
// caller compiles from source instead.
type astReader struct {
	s       string
	i       int
	sources map[string][]byte
	files   []string
	locs    []*ast.Location
	err     error
}

func (r *astReader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("malformed at byte %d: %s", r.i, what)
	}
}

func (r *astReader) line() string {
	if r.err != nil {
		return ""
	}
	for j := r.i; j < len(r.s); j++ {
		if r.s[j] == '\n' {
			l := r.s[r.i:j]
			r.i = j + 1
			return l
		}
	}
	r.fail("a line without its end")
	return ""
}

// skipLines passes the line breaks that only make the file readable;
// every read but a header line starts with it.
func (r *astReader) skipLines() {
	for r.err == nil && r.i < len(r.s) && r.s[r.i] == '\n' {
		r.i++
	}
}

// tag reads the next node's letter.
func (r *astReader) tag() byte {
	r.skipLines()
	if r.err != nil || r.i >= len(r.s) {
		r.fail("a node missing")
		return 0
	}
	c := r.s[r.i]
	r.i++
	return c
}

func (r *astReader) peek(c byte) bool {
	r.skipLines()
	if r.err == nil && r.i < len(r.s) && r.s[r.i] == c {
		r.i++
		return true
	}
	return false
}

func (r *astReader) int() int { return r.number(' ') }

// number reads a decimal integer ended by end.
func (r *astReader) number(end byte) int {
	r.skipLines()
	if r.err != nil {
		return 0
	}
	neg := r.i < len(r.s) && r.s[r.i] == '-'
	if neg {
		r.i++
	}
	n, digits := 0, 0
	for ; r.i < len(r.s) && r.s[r.i] >= '0' && r.s[r.i] <= '9'; r.i++ {
		if n > (1<<31)/10 {
			r.fail("an integer out of range")
			return 0
		}
		n = n*10 + int(r.s[r.i]-'0')
		digits++
	}
	if digits == 0 || r.i >= len(r.s) || r.s[r.i] != end {
		r.fail("an integer")
		return 0
	}
	r.i++
	if neg {
		return -n
	}
	return n
}

// count reads a number of things that follow, each at least min bytes
// long, so that a corrupt count cannot ask for more than the file holds.
func (r *astReader) count(min int) int {
	n := r.int()
	if n < 0 || n*min > len(r.s)-r.i {
		r.fail("a count larger than the file")
		return 0
	}
	return n
}

func (r *astReader) str() string {
	n := r.number(':')
	if r.err != nil {
		return ""
	}
	if n < 0 || n > len(r.s)-r.i {
		r.fail("a string")
		return ""
	}
	s := r.s[r.i : r.i+n]
	r.i += n
	return s
}

func (r *astReader) flag() bool { return r.int() != 0 }

func (r *astReader) compiled() (map[string]*ast.Module, map[ast.Var]ast.Var) {
	for range r.count(2) {
		r.files = append(r.files, r.str())
	}
	n := r.count(8)
	// The locations outlive the restore (the compiler's copies point at
	// them), all of them, so they are one allocation.
	slab := make([]ast.Location, n)
	r.locs = make([]*ast.Location, n)
	for i := range slab {
		r.location(&slab[i])
		r.locs[i] = &slab[i]
	}
	rewritten := map[ast.Var]ast.Var{}
	for range r.count(4) {
		k := r.str()
		rewritten[ast.Var(k)] = ast.Var(r.str())
	}
	mods := map[string]*ast.Module{}
	for range r.count(4) {
		name, m := r.module()
		if r.err != nil {
			return nil, nil
		}
		mods[name] = m
	}
	return mods, rewritten
}

func (r *astReader) location(l *ast.Location) {
	if f := r.int(); f >= 0 && f < len(r.files) {
		l.File = r.files[f]
	} else {
		r.fail("a location's file")
	}
	l.Row, l.Col, l.Offset = r.int(), r.int(), r.int()
	switch r.tag() {
	case '-':
	case 'o':
		n := r.int()
		src := r.sources[l.File]
		if n < 0 || l.Offset < 0 || l.Offset > len(src)-n {
			r.fail("a location's text outside its source")
			return
		}
		l.Text = src[l.Offset : l.Offset+n : l.Offset+n]
	case 't':
		l.Text = []byte(r.str())
	default:
		r.fail("a location's text")
	}
	if n := r.count(2); n > 0 {
		l.Tabs = make([]int, n)
		for i := range l.Tabs {
			l.Tabs[i] = r.int()
		}
	}
}

func (r *astReader) loc() *ast.Location {
	i := r.int()
	if i < 0 || i > len(r.locs) {
		r.fail("a location outside the table")
		return nil
	}
	if i == 0 {
		return nil
	}
	return r.locs[i-1]
}

func (r *astReader) module() (string, *ast.Module) {
	name := r.str()
	m := &ast.Module{Package: &ast.Package{Location: r.loc()}}
	m.Package.Path = r.terms()
	m.SetRegoVersion(ast.RegoV1)
	n := r.count(4)
	m.Rules = make([]*ast.Rule, 0, n)
	for range n {
		if r.tag() != 'R' {
			r.fail("a rule")
			return name, m
		}
		m.Rules = append(m.Rules, r.rule(m))
	}
	return name, m
}

func (r *astReader) rule(m *ast.Module) *ast.Rule {
	rule := &ast.Rule{Location: r.loc(), Default: r.flag(), Module: m}
	rule.Head = &ast.Head{Location: r.loc(), Name: ast.Var(r.str())}
	rule.Head.Reference = r.terms()
	rule.Head.Args = r.terms()
	rule.Head.Key = r.optTerm()
	rule.Head.Value = r.optTerm()
	rule.Head.Assign = r.flag()
	rule.Body = r.body()
	if !r.peek('_') {
		if r.tag() != 'R' {
			r.fail("an else rule")
			return rule
		}
		rule.Else = r.rule(m)
	}
	return rule
}

func (r *astReader) body() ast.Body {
	n := r.count(4)
	if n == 0 {
		return nil
	}
	b := make(ast.Body, 0, n)
	for range n {
		if r.tag() != 'E' {
			r.fail("an expression")
			return b
		}
		b = append(b, r.expr())
	}
	return b
}

func (r *astReader) expr() *ast.Expr {
	e := &ast.Expr{Location: r.loc(), Index: r.int(), Generated: r.flag(), Negated: r.flag()}
	if n := r.count(6); n > 0 {
		e.With = make([]*ast.With, 0, n)
		for range n {
			w := &ast.With{Location: r.loc()}
			w.Target, w.Value = r.term(), r.term()
			e.With = append(e.With, w)
		}
	}
	switch r.tag() {
	case 't':
		e.Terms = r.term()
	case 'c':
		e.Terms = r.terms()
	case 'd':
		d := &ast.SomeDecl{Location: r.loc()}
		d.Symbols = r.terms()
		e.Terms = d
	case 'e':
		ev := &ast.Every{Location: r.loc()}
		ev.Key, ev.Value = r.optTerm(), r.optTerm()
		ev.Domain = r.term()
		ev.Body = r.body()
		e.Terms = ev
	default:
		r.fail("an expression's terms")
	}
	return e
}

func (r *astReader) terms() []*ast.Term {
	n := r.count(3)
	if n == 0 {
		return nil
	}
	ts := make([]*ast.Term, n)
	for i := range ts {
		ts[i] = r.term()
	}
	return ts
}

func (r *astReader) optTerm() *ast.Term {
	if r.peek('_') {
		return nil
	}
	return r.term()
}

func (r *astReader) term() *ast.Term {
	t := &ast.Term{Location: r.loc()}
	switch r.tag() {
	case 'n':
		t.Value = ast.Null{}
	case 'T':
		t.Value = ast.Boolean(true)
	case 'F':
		t.Value = ast.Boolean(false)
	case 'N':
		t.Value = ast.Number(r.str())
	case 'S':
		t.Value = ast.String(r.str())
	case 'V':
		t.Value = ast.Var(r.str())
	case 'r':
		t.Value = ast.Ref(r.terms())
	case 'C':
		t.Value = ast.Call(r.terms())
	case 'A':
		t.Value = ast.NewArray(r.terms()...)
	case 'Z':
		t.Value = ast.NewSet(r.terms()...)
	case 'O':
		n := r.count(6)
		items := make([][2]*ast.Term, n)
		for i := range items {
			items[i] = [2]*ast.Term{r.term(), r.term()}
		}
		t.Value = ast.NewObject(items...)
	case 'a':
		c := &ast.ArrayComprehension{Term: r.term()}
		c.Body = r.body()
		t.Value = c
	case 'z':
		c := &ast.SetComprehension{Term: r.term()}
		c.Body = r.body()
		t.Value = c
	case 'o':
		c := &ast.ObjectComprehension{Key: r.term()}
		c.Value = r.term()
		c.Body = r.body()
		t.Value = c
	default:
		r.fail("a term")
		t.Value = ast.Null{}
	}
	if r.err != nil {
		// A term of a malformed file is never used; what matters is that
		// nothing below reads a nil value first.
		t.Value = ast.Null{}
	}
	return t
}
