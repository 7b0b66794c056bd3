package rego

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/open-policy-agent/opa/v1/ast"

	"github.com/nova-platform/nova/runner"
)

// inputDocument builds the document platform rules see: {phase, contract, target,
// plan}. It is converted to OPA's value type once (ast.InterfaceToValue of
// the decoded JSON), however many queries read it.
func inputDocument(payload runner.PolicyPayload) (ast.Value, error) {
	doc := map[string]any{"phase": string(payload.Phase)}
	for _, part := range []struct {
		key string
		v   any
	}{{"contract", payload.Contract}, {"target", payload.Target}} {
		raw, err := json.Marshal(part.v)
		if err != nil {
			return nil, fmt.Errorf("converting the %s for Rego: %w", part.key, err)
		}
		if doc[part.key], err = decodeJSON(raw); err != nil {
			return nil, fmt.Errorf("converting the %s for Rego: %w", part.key, err)
		}
	}
	if len(payload.Plan) > 0 {
		plan, err := decodeJSON(payload.Plan)
		if err != nil {
			return nil, fmt.Errorf("reading the plan JSON: %w", err)
		}
		doc["plan"] = plan
	}
	return ast.InterfaceToValue(doc)
}

// decodeJSON decodes exactly one JSON value, its numbers as written (OPA's
// numbers are arbitrary-precision).
func decodeJSON(data []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("data after the top-level value")
	}
	return v, nil
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
