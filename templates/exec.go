package templates

import (
	"fmt"
	"io"
	"reflect"
)

// Execute renders the set's template of its own name with data.
func (t *Template) Execute(w io.Writer, data any) error {
	return t.ExecuteTemplate(w, t.name, data)
}

// ExecuteTemplate renders the template called name with data.
func (t *Template) ExecuteTemplate(w io.Writer, name string, data any) error {
	body, ok := t.trees[name]
	if !ok {
		return fmt.Errorf("template: no template %q associated with template %q", name, t.name)
	}
	v := reflect.ValueOf(data)
	s := &state{t: t, w: w, name: name, vars: []variable{{"$", v}}}
	return s.walk(v, body)
}

// A template calling templates deeper than this is taken to recurse
// without end.
const maxDepth = 1000

type state struct {
	t     *Template
	w     io.Writer
	name  string
	line  int
	vars  []variable
	depth int
}

type variable struct {
	name string
	v    reflect.Value
}

func (s *state) errorf(format string, args ...any) error {
	return fmt.Errorf("template: %s:%d: %s", s.name, s.line, fmt.Sprintf(format, args...))
}

func (s *state) walk(dot reflect.Value, list []node) error {
	for _, n := range list {
		if err := s.walkNode(dot, n); err != nil {
			return err
		}
	}
	return nil
}

func (s *state) walkNode(dot reflect.Value, n node) error {
	switch n := n.(type) {
	case textNode:
		_, err := s.w.Write(n)
		return err
	case *actionNode:
		s.line = n.line
		v, err := s.pipeline(dot, n.cmd)
		if err != nil {
			return err
		}
		return s.print(v, n.esc)
	case *ifNode:
		s.line = n.line
		v, err := s.pipeline(dot, n.cond)
		if err != nil {
			return err
		}
		truth, ok := isTrue(v)
		if !ok {
			return s.errorf("if/with can't use %v", v)
		}
		if truth {
			if n.with {
				dot = v
			}
			return s.walk(dot, n.then)
		}
		return s.walk(dot, n.els)
	case *rangeNode:
		return s.walkRange(dot, n)
	case *templateNode:
		s.line = n.line
		body, ok := s.t.trees[n.name]
		if !ok {
			return s.errorf("no such template %q", n.name)
		}
		var arg reflect.Value
		if n.arg != nil {
			var err error
			if arg, err = s.pipeline(dot, n.arg); err != nil {
				return err
			}
		}
		if s.depth >= maxDepth {
			return s.errorf("exceeded maximum template depth (%d)", maxDepth)
		}
		sub := &state{t: s.t, w: s.w, name: n.name, vars: []variable{{"$", arg}}, depth: s.depth + 1}
		return sub.walk(arg, body)
	}
	return s.errorf("unknown node %T", n)
}

func (s *state) walkRange(dot reflect.Value, n *rangeNode) error {
	s.line = n.line
	v, err := s.pipeline(dot, n.over)
	if err != nil {
		return err
	}
	v = indirect(v)
	switch v.Kind() {
	case reflect.Invalid:
		// Like text/template: nothing to range over is not an error.
		return nil
	case reflect.Slice, reflect.Array:
	default:
		return s.errorf("range can't iterate over %v", v)
	}
	for i := 0; i < v.Len(); i++ {
		elem := v.Index(i)
		mark := len(s.vars)
		switch len(n.vars) {
		case 1:
			s.vars = append(s.vars, variable{n.vars[0], elem})
		case 2:
			s.vars = append(s.vars, variable{n.vars[0], reflect.ValueOf(i)}, variable{n.vars[1], elem})
		}
		err := s.walk(elem, n.body)
		s.vars = s.vars[:mark]
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *state) eval(dot reflect.Value, e expr) (reflect.Value, error) {
	switch e := e.(type) {
	case literal:
		return reflect.ValueOf(e.v), nil
	case fieldExpr:
		v := dot
		if e.variable != "" {
			var ok bool
			if v, ok = s.lookup(e.variable); !ok {
				return reflect.Value{}, s.errorf("undefined variable %s", e.variable)
			}
		}
		for _, f := range e.fields {
			var err error
			if v, err = s.field(v, f); err != nil {
				return reflect.Value{}, err
			}
		}
		return v, nil
	case *callExpr:
		args := make([]reflect.Value, len(e.args))
		for i, a := range e.args {
			var err error
			if args[i], err = s.eval(dot, a); err != nil {
				return reflect.Value{}, err
			}
		}
		if b := builtin(e.fn); b != nil {
			v, err := b(args)
			if err != nil {
				return reflect.Value{}, s.errorf("error calling %s: %v", e.fn, err)
			}
			return v, nil
		}
		in := make([]any, len(args))
		for i, a := range args {
			if a.IsValid() && a.CanInterface() {
				in[i] = a.Interface()
			}
		}
		out, err := s.t.funcs[e.fn](in)
		if err != nil {
			return reflect.Value{}, s.errorf("error calling %s: %v", e.fn, err)
		}
		return reflect.ValueOf(out), nil
	}
	return reflect.Value{}, s.errorf("unknown expression %T", e)
}

// pipeline evaluates the command of an action, if, with, range or
// template call. Like text/template it takes a value held by an empty
// interface out of it, so that nil in an any is no value at all.
func (s *state) pipeline(dot reflect.Value, e expr) (reflect.Value, error) {
	v, err := s.eval(dot, e)
	if err == nil && v.Kind() == reflect.Interface && v.Type().NumMethod() == 0 {
		v = reflect.ValueOf(v.Interface())
	}
	return v, err
}

func (s *state) lookup(name string) (reflect.Value, bool) {
	for i := len(s.vars) - 1; i >= 0; i-- {
		if s.vars[i].name == name {
			return s.vars[i].v, true
		}
	}
	return reflect.Value{}, false
}

// field is text/template's field lookup without its method lookup: a
// struct's exported field, or a string-keyed map's entry, through any
// pointers. A missing entry is an error here, where text/template would
// print "<no value>".
func (s *state) field(v reflect.Value, name string) (reflect.Value, error) {
	recv := v
	for v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface {
		if v.IsNil() {
			return reflect.Value{}, s.errorf("nil pointer evaluating %s.%s", recv.Type(), name)
		}
		v = v.Elem()
	}
	switch v.Kind() {
	case reflect.Invalid:
		return reflect.Value{}, s.errorf("nil data; no entry for key %q", name)
	case reflect.Struct:
		f, ok := v.Type().FieldByName(name)
		if ok && f.IsExported() {
			fv, err := v.FieldByIndexErr(f.Index)
			if err != nil {
				return reflect.Value{}, s.errorf("%v", err)
			}
			return fv, nil
		}
		if ok {
			return reflect.Value{}, s.errorf("%s is an unexported field of struct type %s", name, v.Type())
		}
	case reflect.Map:
		if v.Type().Key().Kind() == reflect.String {
			if mv := v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key())); mv.IsValid() {
				return mv, nil
			}
			return reflect.Value{}, s.errorf("map has no entry for key %q", name)
		}
	}
	return reflect.Value{}, s.errorf("can't evaluate field %s in type %s", name, recv.Type())
}

// indirect follows pointers and interfaces to a value, stopping at nil
// ones, as text/template does before ranging or printing.
func indirect(v reflect.Value) reflect.Value {
	for (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) && !v.IsNil() {
		v = v.Elem()
	}
	return v
}

// print writes v as text/template would: fmt.Fprint's text of the value
// pointers lead to, "<nil>" for a nil pointer, "<no value>" for none.
func (s *state) print(v reflect.Value, esc escaper) error {
	v = indirect(v)
	var str string
	switch {
	case !v.IsValid():
		str = "<no value>"
	case v.Kind() == reflect.Chan || v.Kind() == reflect.Func:
		return s.errorf("can't print value of type %s", v.Type())
	case !v.CanInterface():
		return s.errorf("can't print an unexported value of type %s", v.Type())
	default:
		if x, ok := v.Interface().(string); ok {
			str = x
		} else {
			str = fmt.Sprint(v.Interface())
		}
	}
	switch esc {
	case escHTML:
		str = htmlEscape(str)
	case escURLPart:
		str = htmlEscape(urlEscape(str))
	}
	_, err := io.WriteString(s.w, str)
	return err
}

// isTrue is text/template's truth: a value is false when it is its type's
// zero value or an empty collection; ok is false for no value at all.
func isTrue(v reflect.Value) (truth, ok bool) {
	if !v.IsValid() {
		return false, false
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0, true
	case reflect.Bool:
		return v.Bool(), true
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0, true
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.UnsafePointer, reflect.Interface:
		return !v.IsNil(), true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0, true
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0, true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0, true
	}
	return true, true
}
