package nfr

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform"
	"github.com/nova-platform/nova/stages/policy/external"
)

// Infracost configures the cost estimator.
type Infracost struct {
	// Bin is the binary, on PATH or a path; "" means "infracost".
	Bin string
	// APIKey is infracost's INFRACOST_API_KEY; without it nothing is
	// estimated.
	APIKey string
	// Env is nova's environment, of which infracost sees only what
	// external.Environ allows it.
	Env []string
}

// estimate is the outcome of one cost estimation.
type estimate struct {
	cost runner.CostEstimate
	// detail explains a skip or a failure, for the record and summary.
	detail string
	// input says what was priced: "plan" or "root module".
	input string
	diff  *float64
}

func (s *Stage) estimateCost(ctx context.Context, st *runner.State) estimate {
	path := external.Find(or(s.infracost.Bin, "infracost"))
	switch {
	case path == "":
		return skipped(runner.InfracostNotConfigured, fmt.Sprintf("infracost is not installed (%q not found)", or(s.infracost.Bin, "infracost")))
	case s.infracost.APIKey == "":
		return skipped(runner.InfracostNotConfigured, "INFRACOST_API_KEY is not set")
	}
	dir, input, err := s.costInput(st)
	if err != nil {
		return skipped(runner.InfracostFailed, err.Error())
	}
	defer os.RemoveAll(dir)
	target := filepath.Join(dir, "plan.json")
	if input != "plan" {
		target = filepath.Join(dir, "root")
	}
	env := append(append([]string{}, s.infracost.Env...),
		"INFRACOST_API_KEY="+s.infracost.APIKey,
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
	e, err := parseBreakdown(out.Stdout)
	if err != nil {
		return skipped(runner.InfracostFailed, fmt.Sprintf("reading infracost's JSON: %v (stderr: %s)", err, external.Tail(out.Stderr, 500)))
	}
	e.input = input
	return e
}

func skipped(r runner.Reason, detail string) estimate {
	return estimate{cost: runner.CostEstimate{Skipped: true, Reason: r}, detail: detail}
}

// costInput prepares what infracost prices: the plan JSON when there is one
// (after plan, or `nova policy --plan`), otherwise the root module the plan
// stage would render, with its module copies.
func (s *Stage) costInput(st *runner.State) (dir, input string, err error) {
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
	if err := renderRoot(filepath.Join(dir, "root"), s.reg, st.Target); err != nil {
		os.RemoveAll(dir)
		return "", "", fmt.Errorf("rendering the root module for infracost: %w", err)
	}
	return dir, "root module", nil
}

// renderRoot writes the root module and the registry modules it uses, as
// the plan stage lays them out.
func renderRoot(root string, reg *registry.Registry, t *runner.TargetStack) error {
	src, err := terraform.RenderRoot(t, "")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(root, "main.tf"), src, 0o644); err != nil {
		return err
	}
	done := map[string]bool{}
	for _, inst := range t.Instances {
		rel := terraform.ModuleDir(inst.Module, inst.Version)
		if done[rel] {
			continue
		}
		done[rel] = true
		m, ok := reg.Module(inst.Module)
		if !ok {
			return fmt.Errorf("module %s is not in the registry", inst.Module)
		}
		mfs, err := reg.TerraformFS(m)
		if err != nil {
			return err
		}
		if err := os.CopyFS(filepath.Join(root, filepath.FromSlash(rel)), mfs); err != nil {
			return fmt.Errorf("copying module %s: %w", m.Name, err)
		}
	}
	return nil
}

// breakdown is the part of `infracost breakdown --format json` Nova reads.
// Costs are decimal strings, null when nothing could be priced.
type breakdown struct {
	Currency             string  `json:"currency"`
	TotalMonthlyCost     *string `json:"totalMonthlyCost"`
	DiffTotalMonthlyCost *string `json:"diffTotalMonthlyCost"`
	Projects             []any   `json:"projects"`
}

func parseBreakdown(data []byte) (estimate, error) {
	var b breakdown
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&b); err != nil {
		return estimate{}, err
	}
	if b.Projects == nil {
		return estimate{}, fmt.Errorf("no projects in the output")
	}
	e := estimate{cost: runner.CostEstimate{Currency: b.Currency}}
	// A total of null means no resource had a price (terraform_data only,
	// say): nothing that costs money.
	if b.TotalMonthlyCost != nil {
		v, err := strconv.ParseFloat(*b.TotalMonthlyCost, 64)
		if err != nil {
			return estimate{}, fmt.Errorf("totalMonthlyCost %q: %w", *b.TotalMonthlyCost, err)
		}
		e.cost.Monthly = v
	}
	if b.DiffTotalMonthlyCost != nil {
		v, err := strconv.ParseFloat(*b.DiffTotalMonthlyCost, 64)
		if err != nil {
			return estimate{}, fmt.Errorf("diffTotalMonthlyCost %q: %w", *b.DiffTotalMonthlyCost, err)
		}
		e.diff = &v
	}
	return e, nil
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
