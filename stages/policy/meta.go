package policy

import (
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/open-policy-agent/opa/v1/rego"

	"github.com/nova-platform/nova/runner"
)

// MetaRuleID is the rule id of the meta-policy record.
const MetaRuleID = "nova.meta.block-on-any-critical"

//go:embed meta.rego
var metaRego string

// metaQuery is compiled once per process: the rule is part of the binary.
var metaQuery = sync.OnceValues(func() (rego.PreparedEvalQuery, error) {
	return rego.New(
		rego.Query("data.nova.meta.critical_failures"),
		rego.Module("meta.rego", metaRego),
	).PrepareForEval(context.Background())
})

// criticalFailure is one element of data.nova.meta.critical_failures.
type criticalFailure struct {
	RuleID      string `json:"ruleId"`
	ResourceRef string `json:"resourceRef"`
	Engine      string `json:"engine"`
	// Result is "fail", or "error" for a critical rule that could not be
	// evaluated.
	Result runner.PCRResult `json:"result"`
}

// evaluateMeta runs block-on-any-critical over the merged records of one
// evaluation and returns its own record: fail (carrying
// POLICY_CRITICAL_FAIL) when any record is a critical failure, or a
// critical rule's error.
func evaluateMeta(ctx context.Context, pcrs []runner.PCR, scope, contractID string, now time.Time) (runner.PCR, []criticalFailure, error) {
	pq, err := metaQuery()
	if err != nil {
		return runner.PCR{}, nil, fmt.Errorf("compiling the meta-policy: %w", err)
	}
	var input struct {
		PCRs []any `json:"pcrs"`
	}
	raw, err := json.Marshal(struct {
		PCRs []runner.PCR `json:"pcrs"`
	}{pcrs})
	if err != nil {
		return runner.PCR{}, nil, fmt.Errorf("encoding records for the meta-policy: %w", err)
	}
	if err := json.Unmarshal(raw, &input); err != nil {
		return runner.PCR{}, nil, fmt.Errorf("decoding records for the meta-policy: %w", err)
	}
	if input.PCRs == nil {
		input.PCRs = []any{}
	}
	rs, err := pq.Eval(ctx, rego.EvalInput(map[string]any{"pcrs": input.PCRs}))
	if err != nil {
		return runner.PCR{}, nil, fmt.Errorf("evaluating the meta-policy: %w", err)
	}
	if len(rs) != 1 || len(rs[0].Expressions) != 1 {
		return runner.PCR{}, nil, fmt.Errorf("evaluating the meta-policy: %d results, want 1", len(rs))
	}
	var crit []criticalFailure
	if err := remarshal(rs[0].Expressions[0].Value, &crit); err != nil {
		return runner.PCR{}, nil, fmt.Errorf("reading the meta-policy's result: %w", err)
	}
	sort.Slice(crit, func(i, j int) bool {
		if crit[i].RuleID != crit[j].RuleID {
			return crit[i].RuleID < crit[j].RuleID
		}
		return crit[i].ResourceRef < crit[j].ResourceRef
	})
	rec := runner.PCR{
		ContractID:  contractID,
		EvaluatedAt: now,
		Engine:      runner.EngineRego,
		RuleID:      MetaRuleID,
		Severity:    runner.Critical,
		ResourceRef: scope,
	}
	if len(crit) == 0 {
		rec.Result = runner.PCRPass
		rec.Message = fmt.Sprintf("no critical failure among %d record(s)", len(pcrs))
		rec.Evidence = runner.PCREvidence("", map[string]any{"checked": len(pcrs)})
		return rec, nil, nil
	}
	rec.Result = runner.PCRFail
	rec.Message = "blocked: critical failure(s) " + describeCritical(crit)
	rec.Evidence = runner.PCREvidence(runner.PolicyCriticalFail, map[string]any{"critical": crit})
	return rec, crit, nil
}

func describeCritical(crit []criticalFailure) string {
	parts := make([]string, 0, len(crit))
	for _, c := range crit {
		s := c.RuleID
		if c.ResourceRef != "" {
			s += " at " + c.ResourceRef
		}
		if c.Result == runner.PCRError {
			s += " (could not be evaluated)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ", ")
}

func remarshal(v any, out any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
