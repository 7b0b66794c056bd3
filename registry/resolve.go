package registry

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nova-platform/nova/runner"
)

// MaxDepth is the deepest instance tree a stack may have; deeper trees are
// rejected rather than rendered, since nobody can review them.
const MaxDepth = 5

var (
	placeholder = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{(input|nova)\.([a-z][a-z0-9_]*)\}`) })
	identifier  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`) })
	// reference matches anything written like a placeholder, so that a typo
	// such as ${inputs.name} or ${input.Name} is reported instead of reaching
	// Terraform verbatim. Undotted forms like IAM's ${aws:username} pass.
	reference = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\$\{\s*[A-Za-z_][A-Za-z0-9_-]*\s*\.[^}]*\}`) })
)

// Resolve turns a validated contract into its target stack. It reports every
// problem it finds rather than the first, so an author can fix a contract in
// one pass; the target is nil whenever findings are returned.
func (r *Registry) Resolve(c *runner.Contract) (*runner.TargetStack, []runner.Finding) {
	st, ok := r.stackFor(c.Stack)
	if !ok {
		return nil, []runner.Finding{{
			Reason:  runner.StackUnknown,
			Field:   "/stack",
			Message: fmt.Sprintf("stack %q is neither an L2 stack nor an L1 module in the registry", c.Stack),
		}}
	}
	res := &resolution{reg: r, stack: st, contract: c}
	res.inputs()
	res.structure()
	res.bindings()
	res.wires()
	if len(res.findings) > 0 {
		return nil, res.findings
	}
	return res.target(), nil
}

// stackFor finds the named stack; an L1 module named directly is treated as
// a stack of one instance whose inputs are the module's own.
func (r *Registry) stackFor(name string) (*Stack, bool) {
	if s, ok := r.stacks[name]; ok {
		return s, true
	}
	m, ok := r.modules[name]
	if !ok {
		return nil, false
	}
	bind := map[string]any{}
	for _, in := range m.Inputs {
		bind[in.Name] = "${input." + in.Name + "}"
	}
	return &Stack{
		Name:    m.Name,
		Version: m.Version,
		Inputs:  m.Inputs,
		// No version pin: naming a module directly takes whatever version
		// the registry holds, which the provenance input accounts for.
		Instances: []StackInstance{{Name: strings.ReplaceAll(m.Name, "-", "_"), Module: m.Name, Inputs: bind}},
		File:      m.Dir + "/module.yaml",
	}, true
}

type resolution struct {
	reg      *Registry
	stack    *Stack
	contract *runner.Contract
	findings []runner.Finding

	values    map[string]any // stack inputs after defaults
	modules   map[string]*Module
	parent    map[string]string
	depth     map[string]int
	bound     map[string]map[string]runner.Value
	wired     map[string]map[string]runner.Ref
	treeValid bool
}

func (res *resolution) fail(reason runner.Reason, field, format string, a ...any) {
	res.findings = append(res.findings, runner.Finding{Reason: reason, Field: field, Message: fmt.Sprintf(format, a...)})
}

// inputs checks the contract's inputs against the stack's declared inputs.
func (res *resolution) inputs() {
	res.values = map[string]any{}
	names := make([]string, 0, len(res.contract.Inputs))
	for name := range res.contract.Inputs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		v := res.contract.Inputs[name]
		in, ok := findInput(res.stack.Inputs, name)
		if !ok {
			res.fail(runner.InputUnknown, "/inputs/"+name, "stack %s has no input %q (it takes: %s)", res.stack.Name, name, inputNames(res.stack.Inputs))
			continue
		}
		if err := in.Type.Conforms(v); err != nil {
			res.fail(runner.ReasonOf(err), "/inputs/"+name, "input %s: %v", name, err)
			continue
		}
		res.values[name] = v
	}
	for _, in := range res.stack.Inputs {
		if _, set := res.contract.Inputs[in.Name]; set {
			continue
		}
		if !in.HasDefault {
			res.fail(runner.InputRequiredMissing, "/inputs/"+in.Name, "stack %s requires input %s (%s)", res.stack.Name, in.Name, in.Type)
			continue
		}
		res.values[in.Name] = in.Default
	}
}

// structure checks instance names, module references and the tree shape.
func (res *resolution) structure() {
	res.modules = map[string]*Module{}
	res.parent = map[string]string{}
	declared := map[string]bool{}
	for _, inst := range res.stack.Instances {
		if !identifier().MatchString(inst.Name) || declared[inst.Name] {
			res.fail(runner.InstanceNameInvalid, "/stack", "%s: instance name %q is not a unique identifier", res.stack.File, inst.Name)
			continue
		}
		declared[inst.Name] = true
		m, ok := res.reg.modules[inst.Module]
		switch {
		case !ok:
			res.fail(runner.ModuleUnknown, "/stack", "%s: instance %s uses module %q, which is not in the registry", res.stack.File, inst.Name, inst.Module)
		case inst.Version != "" && inst.Version != m.Version:
			res.fail(runner.ModuleVersionMismatch, "/stack", "%s: instance %s pins %s@%s, the registry holds %s", res.stack.File, inst.Name, inst.Module, inst.Version, m.Version)
		default:
			res.modules[inst.Name] = m
		}
	}
	children := map[string][]string{}
	for _, inst := range res.stack.Instances {
		for _, child := range inst.Children {
			if !declared[child] {
				res.fail(runner.StackInstanceUnknown, "/stack", "%s: instance %s lists child %q, which the stack does not declare", res.stack.File, inst.Name, child)
				continue
			}
			if p, has := res.parent[child]; has {
				res.fail(runner.StackMultipleParents, "/stack", "%s: instance %s is a child of both %s and %s", res.stack.File, child, p, inst.Name)
				continue
			}
			res.parent[child] = inst.Name
			children[inst.Name] = append(children[inst.Name], child)
		}
	}
	if cycle := findCycle(res.instanceNames(), children); cycle != nil {
		res.fail(runner.StackCycle, "/stack", "%s: instances form a cycle: %s", res.stack.File, strings.Join(cycle, " → "))
		return
	}
	res.depth = map[string]int{}
	for _, inst := range res.stack.Instances {
		if _, has := res.parent[inst.Name]; !has && declared[inst.Name] {
			res.walkDepth(inst.Name, 1, children)
		}
	}
	res.treeValid = true
}

func (res *resolution) walkDepth(name string, d int, children map[string][]string) {
	res.depth[name] = d
	if d == MaxDepth+1 {
		res.fail(runner.StackDepthExceeded, "/stack", "%s: instance %s is at depth %d; stacks may nest at most %d levels", res.stack.File, name, d, MaxDepth)
		return
	}
	for _, c := range children[name] {
		res.walkDepth(c, d+1, children)
	}
}

// bindings substitutes placeholders into each instance's inputs and checks
// them against the module's types.
func (res *resolution) bindings() {
	res.bound = map[string]map[string]runner.Value{}
	for _, inst := range res.stack.Instances {
		m := res.modules[inst.Name]
		if m == nil {
			continue
		}
		out := map[string]runner.Value{}
		for _, key := range slices.Sorted(maps.Keys(inst.Inputs)) {
			in, ok := m.Input(key)
			if !ok {
				res.fail(runner.InputUnknown, "/stack", "%s: instance %s binds %q, which module %s does not take", res.stack.File, inst.Name, key, m.Name)
				continue
			}
			v, omit, err := res.substitute(inst.Inputs[key], 0)
			if err != nil {
				res.fail(runner.ReasonOf(err), "/stack", "%s: instance %s input %s: %v", res.stack.File, inst.Name, key, err)
				continue
			}
			if omit {
				continue
			}
			if err := in.Type.Conforms(v); err != nil {
				res.fail(runner.ReasonOf(err), "/stack", "%s: instance %s input %s: %v", res.stack.File, inst.Name, key, err)
				continue
			}
			out[key] = runner.Value{Type: in.Type.String(), Value: v}
		}
		res.bound[inst.Name] = out
	}
}

// substitute replaces placeholders in v. A string that is exactly one
// placeholder takes the referenced value with its type; placeholders inside
// longer strings must be scalars. omit reports a whole-string reference to an
// input whose value is null, which leaves the module's own default in force.
// Errors carry the reason to report: an unknown reference, a value that
// cannot be placed in a string, or nesting beyond maxValueDepth.
func (res *resolution) substitute(v any, depth int) (out any, omit bool, err error) {
	if depth > maxValueDepth {
		return nil, false, runner.Errorf(runner.InputValueTooDeep, "value nests deeper than %d levels", maxValueDepth)
	}
	switch x := v.(type) {
	case string:
		for _, ref := range reference().FindAllString(x, -1) {
			if m := placeholder().FindString(ref); m != ref {
				return nil, false, runner.Errorf(runner.InputReferenceUnknown, "%s is not a placeholder (write ${input.NAME} or ${nova.NAME})", ref)
			}
		}
		if m := placeholder().FindStringSubmatch(x); m != nil && m[0] == x {
			val, err := res.lookup(m[1], m[2])
			return val, err == nil && val == nil, err
		}
		var firstErr error
		s := placeholder().ReplaceAllStringFunc(x, func(ph string) string {
			m := placeholder().FindStringSubmatch(ph)
			val, err := res.lookup(m[1], m[2])
			if err == nil {
				var str string
				if str, err = scalarString(val); err == nil {
					return str
				}
				err = runner.Errorf(runner.InputTypeMismatch, "${%s.%s} inside a string: %w", m[1], m[2], err)
			}
			if firstErr == nil {
				firstErr = err
			}
			return ""
		})
		return s, false, firstErr
	case []any:
		items := make([]any, 0, len(x))
		for _, item := range x {
			nv, skip, err := res.substitute(item, depth+1)
			if err != nil {
				return nil, false, err
			}
			if !skip {
				items = append(items, nv)
			}
		}
		return items, false, nil
	case map[string]any:
		m := make(map[string]any, len(x))
		// Sorted, so that the same stack always reports the same error first.
		for _, k := range slices.Sorted(maps.Keys(x)) {
			nv, skip, err := res.substitute(x[k], depth+1)
			if err != nil {
				return nil, false, err
			}
			if !skip {
				m[k] = nv
			}
		}
		return m, false, nil
	}
	return v, false, nil
}

func (res *resolution) lookup(ns, name string) (any, error) {
	if ns == "nova" {
		switch name {
		case "contract_id":
			return res.contract.ID, nil
		case "contract_short":
			return shortID(res.contract.ID), nil
		case "environment":
			return string(res.contract.Environment), nil
		case "stack":
			return res.stack.Name, nil
		}
		return nil, runner.Errorf(runner.InputReferenceUnknown, "unknown Nova value ${nova.%s} (known: contract_id, contract_short, environment, stack)", name)
	}
	if _, ok := findInput(res.stack.Inputs, name); !ok {
		return nil, runner.Errorf(runner.InputReferenceUnknown, "${input.%s} names no input of stack %s", name, res.stack.Name)
	}
	return res.values[name], nil
}

// wires checks each wire's endpoints, types and exclusivity, and that wires
// do not form a cycle Terraform would reject later with a worse message.
func (res *resolution) wires() {
	res.wired = map[string]map[string]runner.Ref{}
	deps := map[string][]string{}
	for i, w := range res.stack.Wires {
		field := fmt.Sprintf("wire %d (%s → %s)", i+1, w.From, w.To)
		fromInst, fromOut, ok1 := strings.Cut(w.From, ".")
		toInst, toIn, ok2 := strings.Cut(w.To, ".")
		if !ok1 || !ok2 {
			res.fail(runner.WireEndpointUnknown, "/stack", "%s: %s: endpoints must be instance.name", res.stack.File, field)
			continue
		}
		fromMod, toMod := res.modules[fromInst], res.modules[toInst]
		if fromMod == nil || toMod == nil {
			res.fail(runner.WireEndpointUnknown, "/stack", "%s: %s: unknown instance", res.stack.File, field)
			continue
		}
		out, okOut := fromMod.Output(fromOut)
		in, okIn := toMod.Input(toIn)
		if !okOut || !okIn {
			res.fail(runner.WireEndpointUnknown, "/stack", "%s: %s: %s has no output %q or %s has no input %q", res.stack.File, field, fromMod.Name, fromOut, toMod.Name, toIn)
			continue
		}
		if in.Type.Kind != "any" && in.Type.String() != out.Type.String() {
			res.fail(runner.WireTypeMismatch, "/stack", "%s: %s: output is %s, input is %s", res.stack.File, field, out.Type, in.Type)
			continue
		}
		if _, dup := res.wired[toInst][toIn]; dup {
			res.fail(runner.WireInputConflict, "/stack", "%s: %s: input %s is wired twice", res.stack.File, field, w.To)
			continue
		}
		if _, dup := res.bound[toInst][toIn]; dup {
			res.fail(runner.WireInputConflict, "/stack", "%s: %s: input %s is both wired and bound to a value", res.stack.File, field, w.To)
			continue
		}
		if res.wired[toInst] == nil {
			res.wired[toInst] = map[string]runner.Ref{}
		}
		res.wired[toInst][toIn] = runner.Ref{Instance: fromInst, Output: fromOut}
		deps[toInst] = append(deps[toInst], fromInst)
	}
	if cycle := findCycle(res.instanceNames(), deps); cycle != nil {
		res.fail(runner.StackCycle, "/stack", "%s: wires form a cycle: %s", res.stack.File, strings.Join(cycle, " ← "))
	}
	for _, inst := range res.stack.Instances {
		m := res.modules[inst.Name]
		if m == nil {
			continue
		}
		for _, in := range m.Inputs {
			_, isBound := res.bound[inst.Name][in.Name]
			_, isWired := res.wired[inst.Name][in.Name]
			if !in.HasDefault && !isBound && !isWired {
				res.fail(runner.InputRequiredMissing, "/stack", "%s: instance %s leaves required input %s of module %s unset", res.stack.File, inst.Name, in.Name, m.Name)
			}
		}
	}
}

// target builds the IR, parents before children in declaration order.
func (res *resolution) target() *runner.TargetStack {
	t := &runner.TargetStack{Stack: res.stack.Name, StackVersion: res.stack.Version}
	byName := map[string]StackInstance{}
	for _, inst := range res.stack.Instances {
		byName[inst.Name] = inst
	}
	var visit func(name string)
	visit = func(name string) {
		inst := byName[name]
		m := res.modules[name]
		ir := runner.Instance{
			Name: name, Module: m.Name, Version: m.Version, Pinned: inst.Version != "",
			Parent: res.parent[name], Depth: res.depth[name],
			Inputs: res.bound[name], Wires: res.wired[name],
		}
		for _, o := range m.Outputs {
			ir.Outputs = append(ir.Outputs, o.Name)
			if o.Sensitive {
				ir.SensitiveOutputs = append(ir.SensitiveOutputs, o.Name)
			}
		}
		t.Instances = append(t.Instances, ir)
		for _, c := range inst.Children {
			visit(c)
		}
	}
	for _, inst := range res.stack.Instances {
		if _, has := res.parent[inst.Name]; !has {
			visit(inst.Name)
		}
	}
	return t
}

func (res *resolution) instanceNames() []string {
	names := make([]string, 0, len(res.stack.Instances))
	for _, inst := range res.stack.Instances {
		names = append(names, inst.Name)
	}
	return names
}

// findCycle returns one cycle in the graph, or nil.
func findCycle(nodes []string, edges map[string][]string) []string {
	const (
		unvisited = iota
		inProgress
		done
	)
	state := map[string]int{}
	var stack []string
	var cycle []string
	var visit func(n string) bool
	visit = func(n string) bool {
		state[n] = inProgress
		stack = append(stack, n)
		for _, next := range edges[n] {
			switch state[next] {
			case inProgress:
				for i, s := range stack {
					if s == next {
						cycle = append(append([]string{}, stack[i:]...), next)
						return true
					}
				}
			case unvisited:
				if visit(next) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		state[n] = done
		return false
	}
	for _, n := range nodes {
		if state[n] == unvisited && visit(n) {
			return cycle
		}
	}
	return nil
}

func scalarString(v any) (string, error) {
	switch x := v.(type) {
	case string:
		return x, nil
	case json.Number:
		return x.String(), nil
	case bool:
		return fmt.Sprint(x), nil
	case nil:
		return "", fmt.Errorf("value is null")
	}
	return "", fmt.Errorf("a %s cannot be placed inside a string", describe(v))
}

func shortID(id string) string {
	id = strings.ReplaceAll(id, "-", "")
	if len(id) > 8 {
		return id[:8]
	}
	return id
}

func inputNames(inputs []Input) string {
	names := make([]string, 0, len(inputs))
	for _, in := range inputs {
		names = append(names, in.Name)
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
