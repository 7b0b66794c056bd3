// Package kyvernojson runs kyverno-json (`kyverno-json scan`) over the plan
// JSON with the consumer's kyverno-json policies, and normalizes its JSON
// report into PCRs. Without the binary, or without policies to apply, the
// engine reports one skipped record (KJ_ENGINE_NOT_CONFIGURED).
package kyvernojson

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/external"
)

// DefaultPreProcess turns the plan into one payload per resource change, so
// that policies are written against a resource change and every result
// names the resource it is about.
var DefaultPreProcess = []string{"resource_changes"}

// Engine is kyverno-json as a runner.PolicyEngine.
type Engine struct {
	bin        string
	path       string
	policies   string
	preProcess []string
	env        []string
}

var _ runner.PolicyEngine = (*Engine)(nil)

// New returns the engine for bin ("" means "kyverno-json"), applying the
// policies under the policies directory after the JMESPath preProcess
// expressions (nil means DefaultPreProcess). Of env, kyverno-json sees
// only what external.Environ allows it.
func New(bin, policies string, preProcess, env []string) *Engine {
	if bin == "" {
		bin = "kyverno-json"
	}
	if preProcess == nil {
		preProcess = DefaultPreProcess
	}
	return &Engine{bin: bin, path: external.Find(bin), policies: policies, preProcess: preProcess, env: env}
}

// Name implements runner.PolicyEngine.
func (*Engine) Name() string { return runner.EngineKyverno }

// Configured implements runner.PolicyEngine: the binary and at least one
// policy file are needed.
func (e *Engine) Configured() bool { return e.missing() == "" }

func (e *Engine) missing() string {
	if e.path == "" {
		return fmt.Sprintf("kyverno-json is not installed (%q not found)", e.bin)
	}
	if !hasPolicies(e.policies) {
		return fmt.Sprintf("no kyverno-json policies in %s", e.policies)
	}
	return ""
}

// Evaluate implements runner.PolicyEngine. Policies apply to the plan JSON,
// after plan; an engine that is not configured says so once, before plan.
func (e *Engine) Evaluate(ctx context.Context, p runner.PolicyPayload) ([]runner.PCR, error) {
	why := e.missing()
	switch {
	case why != "" && p.Phase == runner.PrePlan:
		return []runner.PCR{{
			Engine: runner.EngineKyverno, RuleID: string(runner.KyvernoNotConfigured), Severity: runner.Info,
			Result: runner.PCRSkipped, Message: why + "; its policies did not run",
			Evidence: mustJSON(map[string]any{"reason": runner.KyvernoNotConfigured, "binary": e.bin, "policies": e.policies}),
		}}, nil
	case why != "" || p.Phase == runner.PrePlan:
		return nil, nil
	}
	dir, err := external.WriteTemp("plan.json", p.Plan)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	args := []string{"scan", "--payload", filepath.Join(dir, "plan.json"), "--policy", e.policies, "--output", "json"}
	for _, pp := range e.preProcess {
		args = append(args, "--pre-process", pp)
	}
	out, err := external.Run(ctx, external.Command{Tool: external.KyvernoJSON, Path: e.path, Args: args, Env: e.env, Dir: dir})
	if err != nil {
		return nil, err
	}
	// kyverno-json reports violations in its output and exits 0; a
	// non-zero exit means it could not load the policies or the payload.
	if out.ExitCode != 0 {
		return nil, fmt.Errorf("kyverno-json exited with status %d: %s", out.ExitCode, external.Tail(out.Stderr, 2000))
	}
	pcrs, err := Parse(out.Stdout)
	if err != nil {
		return nil, fmt.Errorf("reading kyverno-json's report (stderr: %s): %w", external.Tail(out.Stderr, 500), err)
	}
	return pcrs, nil
}

// hasPolicies walks the policies directory through a root, so a link in it
// cannot send the walk out of the directory (a link to / would walk the
// whole machine).
func hasPolicies(dir string) bool {
	if dir == "" {
		return false
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return false
	}
	defer root.Close()
	found := false
	_ = fs.WalkDir(root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			switch strings.ToLower(filepath.Ext(p)) {
			case ".yaml", ".yml", ".json":
				found = true
				return fs.SkipAll
			}
		}
		return nil
	})
	return found
}
