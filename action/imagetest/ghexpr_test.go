package imagetest

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/rhysd/actionlint"
)

// ghExpr evaluates GitHub Actions expressions as the runner does, over
// the syntax tree actionlint parses (the emulation parses nothing
// itself). It knows the operators and functions the workflows Nova
// renders use; anything else is an error, never a guess.
type ghExpr struct {
	// contexts are github, needs, steps, secrets, vars, inputs, runner,
	// env, by lower-case name.
	contexts map[string]any
	// status answers success(), failure(), cancelled(), always().
	status func(fn string) bool
	// hashFiles answers hashFiles(patterns).
	hashFiles func(patterns []string) (string, error)
}

// eval evaluates one expression, the text between ${{ and }} (or a whole
// `if:` written without them).
func (x *ghExpr) eval(src string) (any, error) {
	node, perr := actionlint.NewExprParser().Parse(actionlint.NewExprLexer(src + "}}"))
	if perr != nil {
		return nil, fmt.Errorf("parsing %q: %s", src, perr.Message)
	}
	return x.node(node)
}

// condition evaluates an `if:` as GitHub does: with ${{ }} or without,
// and with an implicit success() unless it calls a status function.
func (x *ghExpr) condition(src string) (bool, error) {
	src = strings.TrimSpace(src)
	if src == "" {
		return x.status("success"), nil
	}
	if inner, ok := strings.CutPrefix(src, "${{"); ok && strings.HasSuffix(inner, "}}") {
		src = strings.TrimSuffix(inner, "}}")
	}
	node, perr := actionlint.NewExprParser().Parse(actionlint.NewExprLexer(src + "}}"))
	if perr != nil {
		return false, fmt.Errorf("parsing if %q: %s", src, perr.Message)
	}
	v, err := x.node(node)
	if err != nil {
		return false, err
	}
	if !callsStatus(node) && !x.status("success") {
		return false, nil
	}
	return truthy(v), nil
}

// interpolate replaces every ${{ }} in s with its value as a string.
func (x *ghExpr) interpolate(s string) (string, error) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${{")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		_, end, lerr := actionlint.LexExpression(s[i+3:])
		if lerr != nil {
			return "", fmt.Errorf("lexing %q: %s", s[i:], lerr.Message)
		}
		v, err := x.eval(s[i+3 : i+3+end-2])
		if err != nil {
			return "", err
		}
		b.WriteString(toString(v))
		s = s[i+3+end:]
	}
}

func callsStatus(n actionlint.ExprNode) bool {
	found := false
	actionlint.VisitExprNode(n, func(n, _ actionlint.ExprNode, entering bool) {
		if f, ok := n.(*actionlint.FuncCallNode); ok && entering {
			switch strings.ToLower(f.Callee) {
			case "success", "failure", "cancelled", "always":
				found = true
			}
		}
	})
	return found
}

func (x *ghExpr) node(n actionlint.ExprNode) (any, error) {
	switch n := n.(type) {
	case *actionlint.NullNode:
		return nil, nil
	case *actionlint.BoolNode:
		return n.Value, nil
	case *actionlint.IntNode:
		return float64(n.Value), nil
	case *actionlint.FloatNode:
		return n.Value, nil
	case *actionlint.StringNode:
		return n.Value, nil
	case *actionlint.VariableNode:
		v, ok := x.contexts[n.Name]
		if !ok {
			return nil, fmt.Errorf("context %q is not emulated", n.Name)
		}
		return v, nil
	case *actionlint.ObjectDerefNode:
		recv, err := x.node(n.Receiver)
		if err != nil {
			return nil, err
		}
		return property(recv, n.Property), nil
	case *actionlint.IndexAccessNode:
		recv, err := x.node(n.Operand)
		if err != nil {
			return nil, err
		}
		idx, err := x.node(n.Index)
		if err != nil {
			return nil, err
		}
		switch i := idx.(type) {
		case float64:
			if arr, ok := recv.([]any); ok && i >= 0 && int(i) < len(arr) {
				return arr[int(i)], nil
			}
			return nil, nil
		case string:
			return property(recv, i), nil
		}
		return nil, nil
	case *actionlint.NotOpNode:
		v, err := x.node(n.Operand)
		return !truthy(v), err
	case *actionlint.LogicalOpNode:
		l, err := x.node(n.Left)
		if err != nil {
			return nil, err
		}
		if (n.Kind == actionlint.LogicalOpNodeKindAnd) != truthy(l) {
			return l, nil
		}
		return x.node(n.Right)
	case *actionlint.CompareOpNode:
		l, err := x.node(n.Left)
		if err != nil {
			return nil, err
		}
		r, err := x.node(n.Right)
		if err != nil {
			return nil, err
		}
		return compare(n.Kind, l, r), nil
	case *actionlint.FuncCallNode:
		var args []any
		for _, a := range n.Args {
			v, err := x.node(a)
			if err != nil {
				return nil, err
			}
			args = append(args, v)
		}
		return x.call(strings.ToLower(n.Callee), args)
	}
	return nil, fmt.Errorf("expression node %T is not emulated", n)
}

func (x *ghExpr) call(fn string, args []any) (any, error) {
	str := func(i int) string {
		if i < len(args) {
			return toString(args[i])
		}
		return ""
	}
	switch fn {
	case "success", "failure", "cancelled", "always":
		return x.status(fn), nil
	case "startswith":
		return strings.HasPrefix(strings.ToLower(str(0)), strings.ToLower(str(1))), nil
	case "endswith":
		return strings.HasSuffix(strings.ToLower(str(0)), strings.ToLower(str(1))), nil
	case "contains":
		if arr, ok := args[0].([]any); ok {
			for _, e := range arr {
				if compare(actionlint.CompareOpNodeKindEq, e, args[1]).(bool) {
					return true, nil
				}
			}
			return false, nil
		}
		return strings.Contains(strings.ToLower(str(0)), strings.ToLower(str(1))), nil
	case "fromjson":
		var v any
		if err := json.Unmarshal([]byte(str(0)), &v); err != nil {
			return nil, fmt.Errorf("fromJSON(%q): %v", str(0), err)
		}
		return v, nil
	case "tojson":
		b, err := json.MarshalIndent(args[0], "", "  ")
		return string(b), err
	case "format":
		out := str(0)
		for i := 1; i < len(args); i++ {
			out = strings.ReplaceAll(out, "{"+strconv.Itoa(i-1)+"}", str(i))
		}
		return out, nil
	case "hashfiles":
		var patterns []string
		for i := range args {
			patterns = append(patterns, str(i))
		}
		return x.hashFiles(patterns)
	}
	return nil, fmt.Errorf("function %s is not emulated", fn)
}

// property is a case-insensitive property of an object; null otherwise.
func property(v any, name string) any {
	m, ok := v.(map[string]any)
	if !ok {
		return nil
	}
	if p, ok := m[name]; ok {
		return p
	}
	for k, p := range m {
		if strings.EqualFold(k, name) {
			return p
		}
	}
	return nil
}

// compare follows GitHub's rules: values of one type compare as they are
// (strings without regard to case), values of two types as numbers.
func compare(kind actionlint.CompareOpNodeKind, l, r any) any {
	var c int
	ls, lok := l.(string)
	rs, rok := r.(string)
	switch {
	case lok && rok:
		c = strings.Compare(strings.ToLower(ls), strings.ToLower(rs))
	case l == nil && r == nil:
		c = 0
	default:
		if _, ok := l.(map[string]any); ok {
			return kind == actionlint.CompareOpNodeKindNotEq
		}
		if _, ok := r.(map[string]any); ok {
			return kind == actionlint.CompareOpNodeKindNotEq
		}
		a, b := toNumber(l), toNumber(r)
		switch {
		case math.IsNaN(a) || math.IsNaN(b):
			return kind == actionlint.CompareOpNodeKindNotEq
		case a < b:
			c = -1
		case a > b:
			c = 1
		}
	}
	switch kind {
	case actionlint.CompareOpNodeKindEq:
		return c == 0
	case actionlint.CompareOpNodeKindNotEq:
		return c != 0
	case actionlint.CompareOpNodeKindLess:
		return c < 0
	case actionlint.CompareOpNodeKindLessEq:
		return c <= 0
	case actionlint.CompareOpNodeKindGreater:
		return c > 0
	case actionlint.CompareOpNodeKindGreaterEq:
		return c >= 0
	}
	return false
}

func toNumber(v any) float64 {
	switch v := v.(type) {
	case nil:
		return 0
	case bool:
		if v {
			return 1
		}
		return 0
	case float64:
		return v
	case string:
		if strings.TrimSpace(v) == "" {
			return 0
		}
		f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
		if err != nil {
			return math.NaN()
		}
		return f
	}
	return math.NaN()
}

func truthy(v any) bool {
	switch v := v.(type) {
	case nil:
		return false
	case bool:
		return v
	case float64:
		return v != 0 && !math.IsNaN(v)
	case string:
		return v != ""
	}
	return true
}

// toString is a value as ${{ }} puts it in text.
func toString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case bool:
		return strconv.FormatBool(v)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case string:
		return v
	}
	b, _ := json.MarshalIndent(v, "", "  ")
	return string(b)
}
