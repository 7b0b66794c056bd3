package rego

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strings"

	"github.com/open-policy-agent/opa/v1/ast"
	opa "github.com/open-policy-agent/opa/v1/rego"

	"github.com/nova-platform/nova/runner"
)

//go:embed rules/*.rego
var rulesFS embed.FS

// Rules returns the embedded platform rules and their Rego tests.
func Rules() fs.FS {
	sub, err := fs.Sub(rulesFS, "rules")
	if err != nil {
		panic(err) // the directory is embedded above
	}
	return sub
}

// platformPackage is where platform rules live. Consumer policies are
// compiled apart and may not declare a package under "nova" at all.
const platformPackage = "nova.platform"

// RuleInfo describes one platform rule.
type RuleInfo struct {
	// Package is the rule's package below nova.platform.
	Package  string          `json:"package"`
	ID       string          `json:"id"`
	Severity runner.Severity `json:"severity"`
	Title    string          `json:"title"`
}

// platformQuery collects every rule's metadata, findings and count. A rule
// whose parts are undefined drops out of the result, so Evaluate checks the
// result against the rules it compiled.
const platformQuery = `results := [r |
	some name
	rule := data.nova.platform[name].rule
	r := {"package": name, "rule": rule, "findings": data.nova.platform[name].findings, "checked": data.nova.platform[name].checked}
]`

type platform struct {
	// compiler holds the compiled rules, for evaluating one rule alone
	// when the query over all of them fails.
	compiler *ast.Compiler
	query    opa.PreparedEvalQuery
	rules    []RuleInfo
}

// ruleSources reads the embedded rules' sources by file name, with or
// without their tests.
func ruleSources(withTests bool) (map[string]string, error) {
	out := map[string]string{}
	err := fs.WalkDir(Rules(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" || (!withTests && strings.HasSuffix(p, "_test.rego")) {
			return err
		}
		src, err := fs.ReadFile(Rules(), p)
		out[p] = string(src)
		return err
	})
	return out, err
}

// compilePlatform compiles the embedded platform rules and prepares their
// query.
func compilePlatform(ctx context.Context) (*platform, error) {
	sources, err := ruleSources(false)
	if err != nil {
		return nil, fmt.Errorf("reading platform rules: %w", err)
	}
	return compileSources(ctx, sources)
}

// compileSources compiles platform rule sources, reads their metadata and
// prepares the query over all of them.
func compileSources(ctx context.Context, sources map[string]string) (*platform, error) {
	c, err := ast.CompileModulesWithOpt(sources, ast.CompileOpts{ParserOptions: ast.ParserOptions{RegoVersion: ast.RegoV1}})
	if err != nil {
		return nil, fmt.Errorf("compiling platform rules: %w", err)
	}
	rules, err := ruleInfo(ctx, c)
	if err != nil {
		return nil, err
	}
	pq, err := opa.New(opa.Compiler(c), opa.Query(platformQuery)).PrepareForEval(ctx)
	if err != nil {
		return nil, fmt.Errorf("preparing the platform query: %w", err)
	}
	return &platform{compiler: c, query: pq, rules: rules}, nil
}

// ruleInfo reads each platform package's rule object, which needs no input.
func ruleInfo(ctx context.Context, c *ast.Compiler) ([]RuleInfo, error) {
	rs, err := opa.New(opa.Compiler(c), opa.Query(`x := {name: r | r := data.nova.platform[name].rule}`)).Eval(ctx)
	if err != nil || len(rs) != 1 {
		return nil, fmt.Errorf("reading platform rule metadata: %v", err)
	}
	var byPkg map[string]RuleInfo
	if err := remarshal(rs[0].Bindings["x"], &byPkg); err != nil {
		return nil, fmt.Errorf("reading platform rule metadata: %w", err)
	}
	var out []RuleInfo
	for pkg, r := range byPkg {
		r.Package = pkg
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out, nil
}

// PlatformRules lists the built-in rules, by id.
func PlatformRules(ctx context.Context) ([]RuleInfo, error) {
	p, err := compilePlatform(ctx)
	if err != nil {
		return nil, err
	}
	return p.rules, nil
}

// result is one element of the platform query's results.
type result struct {
	Package  string    `json:"package"`
	Rule     RuleInfo  `json:"rule"`
	Findings []finding `json:"findings"`
	Checked  int       `json:"checked"`
}

type finding struct {
	ResourceRef string         `json:"resourceRef"`
	Message     string         `json:"message"`
	Evidence    map[string]any `json:"evidence"`
}

// evaluate runs every platform rule over input: one fail record per
// finding, one pass record for a rule without findings, one error record
// for a rule that could not be evaluated.
func (p *platform) evaluate(ctx context.Context, phase runner.Phase, input ast.Value) ([]runner.PCR, error) {
	got, err := p.evalAll(ctx, input)
	failed := map[string]error{}
	if err != nil {
		if ctx.Err() != nil {
			return nil, err
		}
		// One rule that cannot evaluate must neither take the others down
		// with it nor hide behind a single engine error of another
		// severity: each rule is evaluated alone, so that a critical
		// rule's failure to evaluate is a critical error record, which
		// blocks the run.
		got, failed = p.evalEach(ctx, input)
		if ctx.Err() != nil {
			return nil, fmt.Errorf("evaluating platform rules: %w", ctx.Err())
		}
	}
	scope := scopeOf(phase)
	var out []runner.PCR
	for _, info := range p.rules {
		if err := failed[info.Package]; err != nil {
			out = append(out, ruleError(info, err))
			continue
		}
		r, ok := got[info.Package]
		if !ok {
			// Never a silent pass: a rule that produced nothing is an
			// error of the rule, recorded as such.
			out = append(out, ruleError(info, fmt.Errorf("rule %s produced no result for phase %s", info.ID, phase)))
			continue
		}
		sort.Slice(r.Findings, func(i, j int) bool {
			if r.Findings[i].ResourceRef != r.Findings[j].ResourceRef {
				return r.Findings[i].ResourceRef < r.Findings[j].ResourceRef
			}
			return r.Findings[i].Message < r.Findings[j].Message
		})
		for _, f := range r.Findings {
			out = append(out, runner.PCR{
				Engine: runner.EngineRego, RuleID: info.ID, Severity: info.Severity, Result: runner.PCRFail,
				Message: f.Message, ResourceRef: f.ResourceRef, Evidence: mustJSON(f.Evidence),
			})
		}
		if len(r.Findings) == 0 {
			out = append(out, runner.PCR{
				Engine: runner.EngineRego, RuleID: info.ID, Severity: info.Severity, Result: runner.PCRPass,
				Message: fmt.Sprintf("%s: no violation in %d checked", info.Title, r.Checked), ResourceRef: scope,
				Evidence: mustJSON(map[string]any{"checked": r.Checked}),
			})
		}
	}
	return out, nil
}

// evalAll evaluates every rule in one query, the fast path: the rules
// share what lib.rego computes from the input.
func (p *platform) evalAll(ctx context.Context, input ast.Value) (map[string]result, error) {
	rs, err := p.query.Eval(ctx, opa.EvalParsedInput(input))
	if err != nil {
		return nil, fmt.Errorf("evaluating platform rules: %w", err)
	}
	if len(rs) != 1 {
		return nil, fmt.Errorf("evaluating platform rules: %d result sets, want 1", len(rs))
	}
	var results []result
	if err := remarshal(rs[0].Bindings["results"], &results); err != nil {
		return nil, fmt.Errorf("reading platform results: %w", err)
	}
	got := map[string]result{}
	for _, r := range results {
		got[r.Package] = r
	}
	return got, nil
}

// evalEach evaluates each rule alone, and returns the results of those
// that evaluated and the errors of those that did not.
func (p *platform) evalEach(ctx context.Context, input ast.Value) (map[string]result, map[string]error) {
	got, failed := map[string]result{}, map[string]error{}
	for _, info := range p.rules {
		pkg := ast.RefTerm(ast.VarTerm("data"), ast.StringTerm("nova"), ast.StringTerm("platform"), ast.StringTerm(info.Package)).String()
		q := fmt.Sprintf(`r := {"package": %s, "findings": %s.findings, "checked": %s.checked}`, ast.StringTerm(info.Package), pkg, pkg)
		rs, err := opa.New(opa.Compiler(p.compiler), opa.Query(q), opa.ParsedInput(input)).Eval(ctx)
		var r result
		switch {
		case err != nil:
			failed[info.Package] = fmt.Errorf("evaluating rule %s: %w", info.ID, err)
		case len(rs) == 0:
			// Undefined: recorded as "produced no result" by evaluate.
		case remarshal(rs[0].Bindings["r"], &r) != nil:
			failed[info.Package] = fmt.Errorf("reading the result of rule %s", info.ID)
		default:
			got[info.Package] = r
		}
	}
	return got, failed
}

// unevaluated is what the platform reports when no rule could be
// evaluated at all (the input could not be built): an error record per
// rule, each with the rule's severity, so that the critical rules block.
func (p *platform) unevaluated(err error) []runner.PCR {
	out := make([]runner.PCR, 0, len(p.rules))
	for _, info := range p.rules {
		out = append(out, ruleError(info, fmt.Errorf("rule %s could not be evaluated: %w", info.ID, err)))
	}
	return out
}

func ruleError(info RuleInfo, err error) runner.PCR {
	return runner.PCR{
		Engine: runner.EngineRego, RuleID: info.ID, Severity: info.Severity, Result: runner.PCRError,
		Message: err.Error(), Evidence: mustJSON(map[string]any{"reason": runner.PolicyEngineError}),
	}
}

func scopeOf(phase runner.Phase) string {
	if phase == runner.PostPlan {
		return "plan"
	}
	return "contract"
}
