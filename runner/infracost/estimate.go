// Package infracost estimates the monthly cost of a change by running
// infracost over the plan JSON, or before a plan exists over the rendered
// root module. It implements runner.CostEstimator.
package infracost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/external"
)

// Estimator runs infracost.
type Estimator struct {
	// Bin is the binary, on PATH or a path; "" means "infracost".
	Bin string
	// APIKey is infracost's INFRACOST_API_KEY; without it nothing is
	// estimated.
	APIKey string
	// Env is nova's environment, of which infracost sees only what
	// external.Environ allows it.
	Env []string
	// Engine renders the root module to price before there is a plan.
	Engine runner.Engine
}

var _ runner.CostEstimator = (*Estimator)(nil)

// Estimate implements runner.CostEstimator.
func (e *Estimator) Estimate(ctx context.Context, st *runner.State) runner.CostReport {
	bin := e.Bin
	if bin == "" {
		bin = "infracost"
	}
	path := external.Find(bin)
	switch {
	case path == "":
		return skipped(runner.InfracostNotConfigured, fmt.Sprintf("infracost is not installed (%q not found)", bin))
	case e.APIKey == "":
		return skipped(runner.InfracostNotConfigured, "INFRACOST_API_KEY is not set")
	}
	dir, priced, err := e.input(st)
	if err != nil {
		return skipped(runner.InfracostFailed, err.Error())
	}
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "plan.json")
	if priced != "plan" {
		target = filepath.Join(dir, "root")
	}
	env := append(append([]string{}, e.Env...),
		"INFRACOST_API_KEY="+e.APIKey,
		// A cost estimate must not depend on whether a newer release
		// exists, nor decorate its JSON with colour codes.
		"INFRACOST_SKIP_UPDATE_CHECK=true", "INFRACOST_NO_COLOR=true")
	out, err := external.Run(ctx, external.Command{
		Tool: external.Infracost, Path: path, Args: []string{"breakdown", "--path", target, "--format", "json"}, Env: env, Dir: dir,
	})
	if err != nil {
		return skipped(runner.InfracostFailed, err.Error())
	}
	if out.ExitCode != 0 {
		return skipped(runner.InfracostFailed, fmt.Sprintf("infracost exited with status %d: %s", out.ExitCode, external.Tail(out.Stderr, 2000)))
	}
	rep, err := parseBreakdown(out.Stdout)
	if err != nil {
		return skipped(runner.InfracostFailed, fmt.Sprintf("reading infracost's JSON: %v (stderr: %s)", err, external.Tail(out.Stderr, 500)))
	}
	rep.Priced = priced
	return rep
}

func skipped(r runner.Reason, detail string) runner.CostReport {
	return runner.CostReport{Estimate: runner.CostEstimate{Skipped: true, Reason: r}, Detail: detail}
}

// input prepares what infracost prices: the plan JSON when there is one
// (after plan, or `nova policy --plan`), otherwise the root module the plan
// stage would render, with its module copies.
func (e *Estimator) input(st *runner.State) (dir, priced string, err error) {
	dir, err = os.MkdirTemp("", "nova-cost-*")
	if err != nil {
		return "", "", fmt.Errorf("creating a directory for infracost: %w", err)
	}
	if len(st.PlanJSON) > 0 {
		if err := os.WriteFile(filepath.Join(dir, "plan.json"), st.PlanJSON, 0o600); err != nil {
			os.RemoveAll(dir)
			return "", "", fmt.Errorf("writing the plan for infracost: %w", err)
		}
		return dir, "plan", nil
	}
	if e.Engine == nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("no engine to render the root module for infracost")
	}
	if err := e.Engine.Render(filepath.Join(dir, "root"), st.Contract, st.Target); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("rendering the root module for infracost: %w", err)
	}
	return dir, "root module", nil
}

// breakdown is the part of `infracost breakdown --format json` Nova reads.
// Costs are decimal strings, null when nothing could be priced.
type breakdown struct {
	Currency             string  `json:"currency"`
	TotalMonthlyCost     *string `json:"totalMonthlyCost"`
	DiffTotalMonthlyCost *string `json:"diffTotalMonthlyCost"`
	Projects             []any   `json:"projects"`
}

func parseBreakdown(data []byte) (runner.CostReport, error) {
	var b breakdown
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&b); err != nil {
		return runner.CostReport{}, err
	}
	if b.Projects == nil {
		return runner.CostReport{}, fmt.Errorf("no projects in the output")
	}
	rep := runner.CostReport{Estimate: runner.CostEstimate{Currency: b.Currency}}
	// A total of null means no resource had a price (terraform_data only,
	// say): nothing that costs money.
	if b.TotalMonthlyCost != nil {
		v, err := strconv.ParseFloat(*b.TotalMonthlyCost, 64)
		if err != nil {
			return runner.CostReport{}, fmt.Errorf("totalMonthlyCost %q: %w", *b.TotalMonthlyCost, err)
		}
		rep.Estimate.Monthly = v
	}
	if b.DiffTotalMonthlyCost != nil {
		v, err := strconv.ParseFloat(*b.DiffTotalMonthlyCost, 64)
		if err != nil {
			return runner.CostReport{}, fmt.Errorf("diffTotalMonthlyCost %q: %w", *b.DiffTotalMonthlyCost, err)
		}
		rep.Diff = &v
	}
	return rep, nil
}
