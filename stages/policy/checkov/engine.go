// Package checkov runs checkov (`checkov -f plan.json -o json`) over the
// plan JSON as a policy engine and normalizes its report into PCRs. Without
// a checkov binary the engine reports one skipped record
// (CHECKOV_NOT_CONFIGURED) instead of passing silently.
package checkov

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/external"
)

// Engine is checkov as a runner.PolicyEngine.
type Engine struct {
	bin  string // as configured, for messages
	path string // resolved; "" when not found
	env  []string
}

var _ runner.PolicyEngine = (*Engine)(nil)

// New returns the engine for bin (a name on PATH or a path; "" means
// "checkov"). Of env, checkov sees only what external.Environ allows it.
func New(bin string, env []string) *Engine {
	if bin == "" {
		bin = "checkov"
	}
	return &Engine{bin: bin, path: external.Find(bin), env: env}
}

// Name implements runner.PolicyEngine.
func (*Engine) Name() string { return runner.EngineCheckov }

// Configured implements runner.PolicyEngine.
func (e *Engine) Configured() bool { return e.path != "" }

// Evaluate implements runner.PolicyEngine. checkov reads plan JSON, so it
// runs after plan; an absent checkov is reported once, before plan, so that
// the confidence stage already sees it.
func (e *Engine) Evaluate(ctx context.Context, p runner.PolicyPayload) ([]runner.PCR, error) {
	switch {
	case !e.Configured() && p.Phase == runner.PrePlan:
		return []runner.PCR{notConfigured(e.bin)}, nil
	case !e.Configured() || p.Phase == runner.PrePlan:
		return nil, nil
	}
	dir, err := external.WriteTemp("plan.json", p.Plan)
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	out, err := external.Run(ctx, external.Command{
		Tool: external.Checkov,
		Path: e.path,
		Args: []string{"-f", filepath.Join(dir, "plan.json"), "-o", "json"},
		Env:  e.env,
		Dir:  dir,
	})
	if err != nil {
		return nil, err
	}
	// checkov exits 1 when a check failed; anything else non-zero is a
	// crash, and so is a report that is not its JSON.
	if out.ExitCode != 0 && out.ExitCode != 1 {
		return nil, fmt.Errorf("checkov exited with status %d: %s", out.ExitCode, external.Tail(out.Stderr, 2000))
	}
	pcrs, err := Parse(out.Stdout)
	if err != nil {
		return nil, fmt.Errorf("reading checkov's report (exit status %d, stderr: %s): %w", out.ExitCode, external.Tail(out.Stderr, 500), err)
	}
	return pcrs, nil
}

func notConfigured(bin string) runner.PCR {
	return runner.PCR{
		Engine:   runner.EngineCheckov,
		RuleID:   string(runner.CheckovNotConfigured),
		Severity: runner.Info,
		Result:   runner.PCRSkipped,
		Message:  fmt.Sprintf("checkov is not installed (%q not found); its checks did not run", bin),
		Evidence: []byte(fmt.Sprintf(`{"reason":%q,"binary":%q}`, runner.CheckovNotConfigured, bin)),
	}
}
