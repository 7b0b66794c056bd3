package rego

import (
	"encoding/json"
	"fmt"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nova-platform/nova/runner"
)

// input builds the document platform rules see:
// {phase, contract, target, plan, plan_index}. The plan is read straight
// from its JSON into OPA's value type, once, however many queries read it;
// plan_index (see planIndex) is computed in the same pass.
func (p *platform) input(payload runner.PolicyPayload) (ast.Value, error) {
	items := [][2]*ast.Term{{ast.InternedTerm("phase"), ast.StringTerm(string(payload.Phase))}}
	for _, part := range []struct {
		key string
		v   any
	}{{"contract", payload.Contract}, {"target", payload.Target}} {
		v, err := toValue(part.v)
		if err != nil {
			return nil, fmt.Errorf("converting the %s for Rego: %w", part.key, err)
		}
		items = append(items, [2]*ast.Term{ast.InternedTerm(part.key), ast.NewTerm(v)})
	}
	if len(payload.Plan) > 0 {
		v, index, err := planValue(payload.Plan, &suspectScanner{suspectWords: p.suspects})
		if err != nil {
			return nil, fmt.Errorf("reading the plan JSON: %w", err)
		}
		items = append(items, [2]*ast.Term{ast.InternedTerm("plan"), ast.NewTerm(v)})
		if index != nil {
			items = append(items, [2]*ast.Term{ast.InternedTerm("plan_index"), ast.NewTerm(index.value())})
		}
	}
	return ast.NewObject(items...), nil
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
	return valueOf(raw)
}
