package nfr

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
)

// instanceMatch is how one instance of the stack stands towards an NFR.
type instanceMatch struct {
	Instance string `json:"instance"`
	Module   string `json:"module"`
	// Declares: the module declares a capability for the NFR at all.
	Declares bool `json:"declares"`
	// Holds: one of those capabilities holds with the instance's values.
	Holds bool `json:"holds"`
	Level any  `json:"level,omitempty"`
	// Because explains Holds in terms of the instance's inputs.
	Because string `json:"because"`
}

// match evaluates every capability the instance's module declares for the
// NFR named nfr and keeps the best one that holds.
func match(reg *registry.Registry, inst runner.Instance, nfr string, m measure) instanceMatch {
	out := instanceMatch{Instance: inst.Name, Module: inst.Module}
	mod, ok := reg.Module(inst.Module)
	if !ok {
		out.Because = fmt.Sprintf("module %s is not in the registry", inst.Module)
		return out
	}
	var reasons []string
	for _, c := range mod.Capabilities {
		if c.NFR != nfr {
			continue
		}
		out.Declares = true
		holds, level, because := evaluate(mod, inst, c)
		if !holds {
			reasons = append(reasons, because)
			continue
		}
		if !out.Holds || better(m, level, out.Level) {
			out.Holds, out.Level, out.Because = true, level, because
		}
	}
	switch {
	case !out.Declares:
		out.Because = fmt.Sprintf("module %s declares no %s capability", inst.Module, nfr)
	case !out.Holds:
		out.Because = join(reasons)
	}
	return out
}

// evaluate decides whether capability c holds for inst, following the
// registry's capability table (docs/registry.md).
func evaluate(mod *registry.Module, inst runner.Instance, c registry.Capability) (holds bool, level any, because string) {
	level = any(true)
	if c.Provides != nil && (c.Input == "" || c.Equals != nil || c.NotEmpty) {
		level = c.Provides
	}
	if c.Input == "" {
		return true, level, fmt.Sprintf("module %s provides it", mod.Name)
	}
	v, source, known := value(mod, inst, c.Input)
	switch {
	case c.Equals != nil:
		if !known {
			return false, nil, fmt.Sprintf("%s is %s, unknown until apply; it must equal %s", c.Input, source, show(c.Equals))
		}
		if equal(v, c.Equals) {
			return true, level, fmt.Sprintf("%s is %s (%s)", c.Input, show(v), source)
		}
		return false, nil, fmt.Sprintf("%s is %s (%s); it must equal %s", c.Input, show(v), source, show(c.Equals))
	case c.NotEmpty:
		// A wired output is a value another module creates: an ARN, a
		// name. It is not empty once it exists.
		if !known || !empty(v) {
			return true, level, fmt.Sprintf("%s is set (%s)", c.Input, source)
		}
		return false, nil, fmt.Sprintf("%s is empty (%s); it must be set", c.Input, source)
	case c.Provides != nil:
		want, ok1 := number(c.Provides)
		got, ok2 := number(v)
		if !known || !ok1 || !ok2 {
			return false, nil, fmt.Sprintf("%s is %s; it must be at least %s", c.Input, source, show(c.Provides))
		}
		if got >= want {
			return true, level, fmt.Sprintf("%s is %s (%s), at least %s", c.Input, show(v), source, show(c.Provides))
		}
		return false, nil, fmt.Sprintf("%s is %s (%s); it must be at least %s", c.Input, show(v), source, show(c.Provides))
	}
	return true, level, fmt.Sprintf("module %s provides it", mod.Name)
}

// value returns what the instance gives input: its bound value, the
// module's default, or, for a wired input, nothing known before apply.
func value(mod *registry.Module, inst runner.Instance, input string) (v any, source string, known bool) {
	if b, ok := inst.Inputs[input]; ok {
		return b.Value, "set by the stack or contract", true
	}
	if w, ok := inst.Wires[input]; ok {
		return nil, fmt.Sprintf("wired from %s.%s", w.Instance, w.Output), false
	}
	if in, ok := mod.Input(input); ok && in.HasDefault {
		return in.Default, "the module's default", true
	}
	return nil, "not set", true
}

// better reports whether level a beats level b for the measure.
func better(m measure, a, b any) bool {
	switch m {
	case atLeast:
		x, _ := number(a)
		y, _ := number(b)
		return x > y
	case atMost:
		x, _ := number(a)
		y, _ := number(b)
		return x < y
	case class:
		x, _ := a.(string)
		y, _ := b.(string)
		return classRank[x] > classRank[y]
	}
	return false
}

func number(v any) (float64, bool) {
	switch x := v.(type) {
	case json.Number:
		f, err := x.Float64()
		return f, err == nil
	case float64:
		return x, true
	case int:
		return float64(x), true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	return 0, false
}

// equal compares values as JSON, so json.Number 2 equals a registry's 2.
func equal(a, b any) bool {
	x, err1 := json.Marshal(a)
	y, err2 := json.Marshal(b)
	return err1 == nil && err2 == nil && string(x) == string(y)
}

func empty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

func join(parts []string) string {
	s := ""
	for i, p := range parts {
		if i > 0 {
			s += "; or "
		}
		s += p
	}
	return s
}
