package rego

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nova-platform/nova/runner"
)

// platformInput builds the document platform rules see:
// {phase, contract, target, plan}. The plan is parsed straight from its
// JSON into OPA's value type, once, however many queries read it.
func platformInput(p runner.PolicyPayload) (ast.Value, error) {
	obj := ast.NewObject(ast.Item(ast.StringTerm("phase"), ast.StringTerm(string(p.Phase))))
	for _, part := range []struct {
		key string
		v   any
	}{{"contract", p.Contract}, {"target", p.Target}} {
		v, err := toValue(part.v)
		if err != nil {
			return nil, fmt.Errorf("converting the %s for Rego: %w", part.key, err)
		}
		obj.Insert(ast.StringTerm(part.key), ast.NewTerm(v))
	}
	if len(p.Plan) > 0 {
		v, err := ast.ValueFromReader(bytes.NewReader(p.Plan))
		if err != nil {
			return nil, fmt.Errorf("reading the plan JSON: %w", err)
		}
		obj.Insert(ast.StringTerm("plan"), ast.NewTerm(v))
	}
	return obj, nil
}

// consumerInput is the document conftest would see for the same phase: the
// contract as `conftest test .nova/contract.yml` parses it, or the plan as
// `conftest test plan.json` does.
func consumerInput(p runner.PolicyPayload, platform ast.Value) ast.Value {
	key := "contract"
	if p.Phase == runner.PostPlan {
		key = "plan"
	}
	if obj, ok := platform.(ast.Object); ok {
		if t := obj.Get(ast.StringTerm(key)); t != nil {
			return t.Value
		}
	}
	return ast.NewObject()
}

func toValue(v any) (ast.Value, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	return ast.ValueFromReader(bytes.NewReader(raw))
}
