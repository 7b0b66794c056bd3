package rego

import (
	"context"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/ast"
	opa "github.com/open-policy-agent/opa/v1/rego"

	"github.com/nova-platform/nova/runner"
)

// conftest's rule naming: failures and warnings are recognised by name.
var (
	failureRule = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(deny|violation)(_[a-zA-Z0-9]+)*$`) })
	warningRule = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^warn(_[a-zA-Z0-9]+)*$`) })
)

// A consumer's policies come with the pull request under review, and run in
// a process whose environment holds signing keys and tokens: they get
// nothing from outside the evaluation. OPA marks the built-ins that look
// outside it as nondeterministic, and every one of those is left out of the
// consumer's capabilities but the few below, which read only the clock or
// a random source. Left out, among others: http.send and
// net.lookup_ip_addr (the network), opa.runtime (the environment), and
// json.match_schema and json.verify_schema, whose schemas' $refs load
// http(s) URLs and any file:// path, file paths whatever allow_net says.
// A built-in a later OPA adds and marks so is left out until reviewed here.
var clockOrRandomBuiltins = map[string]bool{
	"time.now_ns": true, "rand.intn": true, "uuid.rfc4122": true,
	"io.jwt.decode_verify": true, "io.jwt.encode_sign": true, "io.jwt.encode_sign_raw": true,
}

// consumerCapabilities are what a consumer's policies may call: OPA's
// built-ins less those that look outside the evaluation, plus the capped
// stand-ins of limits.go. No host is allowed to the network either, for
// whatever honours allow_net.
func consumerCapabilities() *ast.Capabilities {
	caps := ast.CapabilitiesForThisVersion()
	kept := caps.Builtins[:0]
	for _, b := range caps.Builtins {
		if !b.Nondeterministic || clockOrRandomBuiltins[b.Name] {
			kept = append(kept, b)
		}
	}
	caps.Builtins = append(kept, cappedBuiltins()...)
	caps.AllowNet = []string{}
	return caps
}

// consumer is the consumer's policies, compiled apart from the platform's.
type consumer struct {
	dir     string
	timeout time.Duration
	rules   map[runner.Phase][]consumerRule
	// err is why the consumer's policies cannot be evaluated at all
	// (POLICY_COMPILE_FAILED, POLICY_NAMESPACE_RESERVED).
	err error
}

type consumerRule struct {
	namespace, name string
	severity        runner.Severity
	query           opa.PreparedEvalQuery
	exception       opa.PreparedEvalQuery
}

func (r consumerRule) id() string { return "consumer." + r.namespace + "." + r.name }

// loadConsumer parses and compiles the .rego files of fsys. Failures are
// kept in err rather than returned: the platform rules run regardless.
func loadConsumer(ctx context.Context, fsys fs.FS, dir string, namespaces map[runner.Phase][]string) *consumer {
	c := &consumer{dir: dir, timeout: DefaultConsumerTimeout}
	mods, err := parseConsumer(fsys)
	if err != nil {
		c.err = runner.Errorf(runner.PolicyCompileFailed, "parsing consumer policies in %s: %w", dir, err)
		return c
	}
	if len(mods) == 0 {
		return c
	}
	if err := checkReserved(mods); err != nil {
		c.err = runner.Errorf(runner.PolicyNamespaceReserved, "consumer policies in %s: %w", dir, err)
		return c
	}
	if err := problematicIf(mods); err != nil {
		c.err = runner.Errorf(runner.PolicyCompileFailed, "consumer policies in %s: %w", dir, err)
		return c
	}
	capRanges(mods)
	builtins := map[string]*ast.Builtin{}
	for _, b := range cappedBuiltins() {
		builtins[b.Name] = b
	}
	comp := ast.NewCompiler().WithCapabilities(consumerCapabilities()).WithBuiltins(builtins)
	comp.Compile(mods)
	if comp.Failed() {
		c.err = runner.Errorf(runner.PolicyCompileFailed, "compiling consumer policies in %s: %w", dir, comp.Errors)
		return c
	}
	c.rules = map[runner.Phase][]consumerRule{}
	for phase, nss := range namespaces {
		for _, ns := range nss {
			rules, err := prepareNamespace(ctx, comp, ns)
			if err != nil {
				c.err = runner.Errorf(runner.PolicyCompileFailed, "consumer policies in %s: %w", dir, err)
				return c
			}
			c.rules[phase] = append(c.rules[phase], rules...)
		}
	}
	return c
}

// Limits on a consumer's policy directory: generous for real policies,
// small enough that a hostile checkout cannot make parsing the run's cost.
const (
	maxPolicyFiles     = 1000
	maxPolicyFileBytes = 1 << 20
)

func parseConsumer(fsys fs.FS) (map[string]*ast.Module, error) {
	mods := map[string]*ast.Module{}
	files := 0
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || path.Ext(p) != ".rego" {
			return err
		}
		if files++; files > maxPolicyFiles {
			return runner.Errorf(runner.FileTooLarge, "more than %d .rego files in the policy directory", maxPolicyFiles)
		}
		// Stat before reading: opening a FIFO would block the run.
		fi, err := fs.Stat(fsys, p)
		if err != nil {
			return err
		}
		if !fi.Mode().IsRegular() {
			return runner.Errorf(runner.FileNotRegular, "%s is not a regular file (%s)", p, fi.Mode().Type())
		}
		if fi.Size() > maxPolicyFileBytes {
			return runner.Errorf(runner.FileTooLarge, "%s is larger than %d bytes", p, maxPolicyFileBytes)
		}
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			return err
		}
		m, err := ast.ParseModuleWithOpts(p, string(src), ast.ParserOptions{RegoVersion: ast.RegoV1, ProcessAnnotation: true})
		if err != nil {
			return err
		}
		mods[p] = m
		return nil
	})
	return mods, err
}

// checkReserved refuses consumer packages under nova: that namespace holds
// the platform's rules, and a consumer package of the same name must not
// even look like one.
func checkReserved(mods map[string]*ast.Module) error {
	var bad []string
	for file, m := range mods {
		pkg := strings.TrimPrefix(m.Package.Path.String(), "data.")
		if pkg == "nova" || strings.HasPrefix(pkg, "nova.") {
			bad = append(bad, fmt.Sprintf("%s declares package %s", file, pkg))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	sort.Strings(bad)
	return fmt.Errorf("the nova namespace is reserved for platform rules: %s", strings.Join(bad, "; "))
}

// problematicIf refuses `deny if { ... }` (a boolean rule) as conftest does:
// it evaluates to true, not to a set of messages, and would pass silently.
func problematicIf(mods map[string]*ast.Module) error {
	for _, m := range mods {
		for _, r := range m.Rules {
			name := ruleName(r)
			if !failureRule().MatchString(name) && !warningRule().MatchString(name) {
				continue
			}
			if r.Head.Key == nil && r.Head.Value != nil && r.Head.Value.Equal(ast.BooleanTerm(true)) {
				return fmt.Errorf("rule %s in %s at line %d uses `if` without `contains`; write `%s contains msg if { ... }`", name, r.Location.File, r.Location.Row, name)
			}
		}
	}
	return nil
}

func ruleName(r *ast.Rule) string {
	ref := r.Head.Ref()
	if len(ref) == 0 {
		return ""
	}
	if v, ok := ref[0].Value.(ast.Var); ok {
		return string(v)
	}
	return ""
}

// prepareNamespace prepares a query per failure and warning rule of ns, in
// name order, with conftest's exception query beside it. It reads the
// compiler's modules, not the parsed ones: annotations are indexed by the
// compiled rules.
func prepareNamespace(ctx context.Context, comp *ast.Compiler, ns string) ([]consumerRule, error) {
	severities := map[string]runner.Severity{}
	annotated := map[string]bool{}
	var names []string
	files := make([]string, 0, len(comp.Modules))
	for f := range comp.Modules {
		files = append(files, f)
	}
	// In file order, so that of two annotated definitions the same one
	// wins on every run.
	sort.Strings(files)
	for _, f := range files {
		m := comp.Modules[f]
		if strings.TrimPrefix(m.Package.Path.String(), "data.") != ns {
			continue
		}
		for _, r := range m.Rules {
			name := ruleName(r)
			if !failureRule().MatchString(name) && !warningRule().MatchString(name) {
				continue
			}
			if _, seen := severities[name]; !seen {
				names = append(names, name)
				severities[name] = defaultSeverity(name)
			}
			sev, err := annotatedSeverity(comp, r)
			if err != nil {
				return nil, err
			}
			if sev != "" && !annotated[name] {
				severities[name], annotated[name] = sev, true
			}
		}
	}
	sort.Strings(names)
	var out []consumerRule
	for _, name := range names {
		q, err := opa.New(append(cappedFunctions(), opa.Compiler(comp), opa.Query(fmt.Sprintf("data.%s.%s", ns, name)))...).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("preparing data.%s.%s: %w", ns, name, err)
		}
		exq := fmt.Sprintf("data.%s.exception[_][_] == %q", ns, exceptionName(name))
		ex, err := opa.New(append(cappedFunctions(), opa.Compiler(comp), opa.Query(exq))...).PrepareForEval(ctx)
		if err != nil {
			return nil, fmt.Errorf("preparing %s: %w", exq, err)
		}
		out = append(out, consumerRule{namespace: ns, name: name, severity: severities[name], query: q, exception: ex})
	}
	return out, nil
}

func defaultSeverity(name string) runner.Severity {
	if warningRule().MatchString(name) {
		return runner.Low
	}
	return runner.High
}

// annotatedSeverity reads `custom: {severity: ...}` from a rule's METADATA
// block.
func annotatedSeverity(comp *ast.Compiler, r *ast.Rule) (runner.Severity, error) {
	as := comp.GetAnnotationSet()
	if as == nil {
		return "", nil
	}
	for _, a := range as.GetRuleScope(r) {
		v, ok := a.Custom["severity"]
		if !ok {
			continue
		}
		s, _ := v.(string)
		sev := runner.Severity(strings.ToLower(s))
		if !validSeverity(sev) {
			return "", fmt.Errorf("rule %s at %s:%d: custom severity %v is not one of critical, high, medium, low, info", ruleName(r), r.Location.File, r.Location.Row, v)
		}
		return sev, nil
	}
	return "", nil
}

func validSeverity(s runner.Severity) bool {
	for _, v := range runner.Severities {
		if s == v {
			return true
		}
	}
	return false
}
