package rego

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	opa "github.com/open-policy-agent/opa/v1/rego"
	"github.com/open-policy-agent/opa/v1/topdown"
	"github.com/open-policy-agent/opa/v1/types"

	"github.com/nova-platform/nova/runner"
)

// A consumer's policies come with the change under review, so they get
// limits: a deadline for evaluating all of a phase's rules, and ranges of a
// bounded length. OPA's numbers.range allocates its whole result in one
// step, before any cancellation is looked at (count of
// numbers.range(1, 300000000) took 2.4 GB); calls to it are rewritten to a
// capped equivalent at compile time, since OPA does not let a custom
// function replace a built-in one.
const (
	// DefaultConsumerTimeout bounds one phase's consumer evaluation.
	DefaultConsumerTimeout = 10 * time.Second
	// maxRange is the longest range a consumer policy may generate.
	maxRange = 100_000
)

// capped maps the unbounded built-ins to their capped stand-ins.
var capped = map[string]*opa.Function{
	"numbers.range": {Name: "nova_capped.numbers_range",
		Decl: types.NewFunction(types.Args(types.N, types.N), types.NewArray(nil, types.N))},
	"numbers.range_step": {Name: "nova_capped.numbers_range_step",
		Decl: types.NewFunction(types.Args(types.N, types.N, types.N), types.NewArray(nil, types.N))},
}

// capRanges rewrites every call to an unbounded built-in in mods to its
// capped stand-in.
func capRanges(mods map[string]*ast.Module) {
	rewrite := func(op *ast.Term) {
		ref, ok := op.Value.(ast.Ref)
		if !ok {
			return
		}
		if f, ok := capped[ref.String()]; ok {
			op.Value = ast.MustParseRef(f.Name)
		}
	}
	for _, m := range mods {
		ast.WalkTerms(m, func(t *ast.Term) bool {
			if call, ok := t.Value.(ast.Call); ok && len(call) > 0 {
				rewrite(call[0])
			}
			return false
		})
		ast.WalkExprs(m, func(e *ast.Expr) bool {
			if terms, ok := e.Terms.([]*ast.Term); ok && len(terms) > 0 {
				rewrite(terms[0])
			}
			return false
		})
	}
}

// cappedBuiltins are the stand-ins' declarations, for the compiler's
// capabilities.
func cappedBuiltins() []*ast.Builtin {
	var out []*ast.Builtin
	for _, f := range capped {
		out = append(out, &ast.Builtin{Name: f.Name, Decl: f.Decl})
	}
	return out
}

// cappedFunctions are the stand-ins' implementations, for each query.
func cappedFunctions() []func(*opa.Rego) {
	return []func(*opa.Rego){
		opa.Function2(capped["numbers.range"], func(_ opa.BuiltinContext, a, b *ast.Term) (*ast.Term, error) {
			return boundedRange("numbers.range", a, b, ast.IntNumberTerm(1))
		}),
		opa.Function3(capped["numbers.range_step"], func(_ opa.BuiltinContext, a, b, step *ast.Term) (*ast.Term, error) {
			return boundedRange("numbers.range_step", a, b, step)
		}),
	}
}

func boundedRange(name string, a, b, step *ast.Term) (*ast.Term, error) {
	var x, y, s big.Int
	for _, p := range []struct {
		t *ast.Term
		v *big.Int
	}{{a, &x}, {b, &y}, {step, &s}} {
		n, ok := p.t.Value.(ast.Number)
		if !ok {
			return nil, fmt.Errorf("%s: operands must be integers", name)
		}
		if _, ok := p.v.SetString(string(n), 10); !ok {
			return nil, fmt.Errorf("%s: operand %s is not an integer", name, n)
		}
	}
	if s.Sign() <= 0 {
		return nil, fmt.Errorf("%s: step must be a positive integer", name)
	}
	var span big.Int
	span.Sub(&y, &x)
	span.Abs(&span)
	span.Div(&span, &s)
	if span.Cmp(big.NewInt(maxRange)) >= 0 {
		// A halt, not an ordinary built-in error: OPA turns those into
		// "undefined", and the rule would pass silently.
		return nil, opa.NewHaltError(fmt.Errorf("%s would generate %s numbers; consumer policies may generate at most %d", name, span.Add(&span, big.NewInt(1)).String(), maxRange))
	}
	n := int(span.Int64()) + 1
	terms := make([]*ast.Term, 0, n)
	down := x.Cmp(&y) > 0
	for i, v := 0, new(big.Int).Set(&x); i < n; i++ {
		terms = append(terms, ast.NewTerm(ast.Number(v.String())))
		if down {
			v.Sub(v, &s)
		} else {
			v.Add(v, &s)
		}
	}
	return ast.ArrayTerm(terms...), nil
}

// overLimit reports whether err is a consumer policy hitting a limit: the
// phase's deadline (the run itself still going) or a capped built-in.
func overLimit(ctx, phaseCtx context.Context, err error) bool {
	// Only the capped built-ins halt a consumer's evaluation.
	var halt *opa.HaltError
	if errors.As(err, &halt) {
		return true
	}
	var te *topdown.Error
	if errors.As(err, &te) && te.Code == topdown.CancelErr {
		return ctx.Err() == nil && phaseCtx.Err() != nil
	}
	return ctx.Err() == nil && errors.Is(phaseCtx.Err(), context.DeadlineExceeded)
}

// limitRecord is the error record of a rule stopped by a limit: it could
// not be evaluated, and a policy that might have blocked the change counts
// as one that did.
func limitRecord(base runner.PCR, r consumerRule, err error) runner.PCR {
	p := base
	p.Severity = runner.Critical
	p.Result = runner.PCRError
	p.Message = fmt.Sprintf("evaluating %s went past a limit of consumer policies (%v); it could not be evaluated and blocks as a critical failure would", r.id(), err)
	p.Evidence = mustJSON(map[string]any{"reason": runner.PolicyLimitExceeded, "namespace": r.namespace, "rule": r.name})
	return p
}
