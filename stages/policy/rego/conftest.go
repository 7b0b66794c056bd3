package rego

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	opa "github.com/open-policy-agent/opa/v1/rego"

	"github.com/nova-platform/nova/runner"
)

// exceptionName is the name conftest matches exceptions against: the rule
// name without its deny_/violation_/warn_ prefix, "" for the bare rules.
func exceptionName(rule string) string {
	if rule == "deny" || rule == "violation" || rule == "warn" {
		return ""
	}
	for _, p := range []string{"violation_", "deny_", "warn_"} {
		rule = strings.TrimPrefix(rule, p)
	}
	return rule
}

// evaluate runs the phase's consumer rules the way conftest does: a rule's
// set elements are its messages (a string, or an object with a string
// "msg"); an exception for the rule suppresses them.
func (c *consumer) evaluate(ctx context.Context, phase runner.Phase, input ast.Value) []runner.PCR {
	phaseCtx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	var out []runner.PCR
	for _, r := range c.rules[phase] {
		out = append(out, r.evaluate(ctx, phaseCtx, phase, input)...)
	}
	return out
}

func (r consumerRule) evaluate(runCtx, ctx context.Context, phase runner.Phase, input ast.Value) []runner.PCR {
	base := runner.PCR{Engine: runner.EngineRego, RuleID: r.id(), Severity: r.severity, ResourceRef: scopeOf(phase)}
	fail := func(err error) []runner.PCR {
		if overLimit(runCtx, ctx, err) {
			return []runner.PCR{limitRecord(base, r, err)}
		}
		p := base
		p.Result, p.Message = runner.PCRError, fmt.Sprintf("evaluating %s: %v", r.id(), err)
		p.Evidence = mustJSON(map[string]any{"reason": runner.PolicyEngineError, "namespace": r.namespace, "rule": r.name})
		return []runner.PCR{p}
	}
	exc, err := r.exception.Eval(ctx, opa.EvalParsedInput(input))
	if err != nil {
		return fail(err)
	}
	rs, err := r.query.Eval(ctx, opa.EvalParsedInput(input))
	if err != nil {
		return fail(err)
	}
	var msgs []message
	for _, res := range rs {
		for _, e := range res.Expressions {
			vals, _ := e.Value.([]any)
			for _, v := range vals {
				m, err := toMessage(v)
				if err != nil {
					return fail(err)
				}
				if m != nil {
					msgs = append(msgs, *m)
				}
			}
		}
	}
	if len(exc) > 0 {
		p := base
		p.Result = runner.PCRSkipped
		p.Message = fmt.Sprintf("%s is excepted by data.%s.exception; %d finding(s) not counted", r.id(), r.namespace, len(msgs))
		p.Evidence = mustJSON(map[string]any{"namespace": r.namespace, "rule": r.name, "excepted": len(msgs)})
		return []runner.PCR{p}
	}
	if len(msgs) == 0 {
		p := base
		p.Result, p.Message = runner.PCRPass, fmt.Sprintf("%s: no findings", r.id())
		p.Evidence = mustJSON(map[string]any{"namespace": r.namespace, "rule": r.name})
		return []runner.PCR{p}
	}
	sort.SliceStable(msgs, func(i, j int) bool { return msgs[i].text < msgs[j].text })
	out := make([]runner.PCR, 0, len(msgs))
	for _, m := range msgs {
		p := base
		p.Result, p.Message = runner.PCRFail, m.text
		if m.severity != "" {
			p.Severity = m.severity
		}
		if m.resource != "" {
			p.ResourceRef = m.resource
		}
		ev := map[string]any{"namespace": r.namespace, "rule": r.name}
		if len(m.metadata) > 0 {
			ev["metadata"] = m.metadata
		}
		p.Evidence = mustJSON(ev)
		out = append(out, p)
	}
	return out
}

// message is one element of a conftest rule's set.
type message struct {
	text     string
	severity runner.Severity
	resource string
	metadata map[string]any
}

// toMessage reads a set element as conftest does: a string is the message;
// an object must carry a string "msg", its other keys are metadata (Nova
// reads "severity" and "resourceRef" from them). Other values are ignored,
// as conftest ignores them.
func toMessage(v any) (*message, error) {
	switch x := v.(type) {
	case string:
		return &message{text: orPlaceholder(x)}, nil
	case map[string]any:
		msg, ok := x["msg"].(string)
		if !ok {
			return nil, fmt.Errorf(`"msg" field must be present and a string`)
		}
		m := &message{text: orPlaceholder(msg), metadata: map[string]any{}}
		for k, v := range x {
			switch k {
			case "msg":
			case "severity":
				s, _ := v.(string)
				if sev := runner.Severity(strings.ToLower(s)); validSeverity(sev) {
					m.severity = sev
				} else {
					return nil, fmt.Errorf("severity %v is not one of critical, high, medium, low, info", v)
				}
			case "resourceRef":
				m.resource, _ = v.(string)
			default:
				m.metadata[k] = v
			}
		}
		return m, nil
	}
	return nil, nil
}

// orPlaceholder keeps a finding whose rule gave an empty message: a record
// needs a message, and dropping the finding would be a silent pass.
func orPlaceholder(msg string) string {
	if msg == "" {
		return "(the rule gave no message)"
	}
	return msg
}
