package checkov

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// report is one framework's part of `checkov -o json`: a single object, or
// a list of them when more than one framework ran (terraform_plan and
// secrets over a plan file). A scan that found nothing to check prints only
// the summary counts.
type report struct {
	CheckType string `json:"check_type"`
	Results   struct {
		PassedChecks  []check  `json:"passed_checks"`
		FailedChecks  []check  `json:"failed_checks"`
		SkippedChecks []check  `json:"skipped_checks"`
		ParsingErrors []string `json:"parsing_errors"`
	} `json:"results"`
	Summary struct {
		CheckovVersion string `json:"checkov_version"`
	} `json:"summary"`
	// CheckovVersion appears at the top level of a summary-only report.
	CheckovVersion string `json:"checkov_version"`
}

type check struct {
	CheckID         string `json:"check_id"`
	BCCheckID       string `json:"bc_check_id"`
	CheckName       string `json:"check_name"`
	FilePath        string `json:"file_path"`
	FileLineRange   []int  `json:"file_line_range"`
	Resource        string `json:"resource"`
	ResourceAddress string `json:"resource_address"`
	Severity        string `json:"severity"`
	Guideline       string `json:"guideline"`
	SuppressComment string `json:"suppress_comment"`
	CheckResult     struct {
		Result string `json:"result"`
	} `json:"check_result"`
}

// severities maps checkov's (set only with a platform API key) to Nova's.
var severities = map[string]runner.Severity{
	"CRITICAL": runner.Critical, "HIGH": runner.High, "MEDIUM": runner.Medium,
	"LOW": runner.Low, "INFO": runner.Info,
}

// defaultSeverity is used when checkov gives none, which is the norm
// without a Prisma Cloud API key.
const defaultSeverity = runner.Medium

// Parse normalizes checkov's JSON report: one fail record per failed check
// and resource, one pass record per check id that passed (naming how many
// resources), one skipped record per suppressed check, and one error
// record if checkov could not parse a file; one skipped record
// (POLICY_ENGINE_NO_CHECKS) when the report holds no check at all.
func Parse(data []byte) ([]runner.PCR, error) {
	data = bytes.TrimSpace(data)
	var reports []report
	switch {
	case len(data) == 0:
		return nil, fmt.Errorf("empty output")
	case data[0] == '[':
		if err := json.Unmarshal(data, &reports); err != nil {
			return nil, err
		}
	default:
		var r report
		if err := json.Unmarshal(data, &r); err != nil {
			return nil, err
		}
		reports = []report{r}
	}
	var out []runner.PCR
	for _, r := range reports {
		out = append(out, r.records()...)
	}
	if len(out) == 0 {
		// A summary alone (no resource of the plan was one checkov checks)
		// or no report at all: without a record, an engine whose checks
		// never ran would look the same as one whose checks all passed.
		out = append(out, runner.PCR{
			Engine: runner.EngineCheckov, RuleID: string(runner.PolicyEngineNoChecks), Severity: runner.Info,
			Result: runner.PCRSkipped, ResourceRef: "plan",
			Message:  "checkov ran but reported no check: nothing in the plan is a resource its checks apply to",
			Evidence: mustJSON(map[string]any{"reason": runner.PolicyEngineNoChecks, "reports": len(reports)}),
		})
	}
	return out, nil
}

func (r report) records() []runner.PCR {
	var out []runner.PCR
	for _, c := range r.Results.FailedChecks {
		out = append(out, c.record(r.CheckType, runner.PCRFail, c.CheckName))
	}
	for _, c := range r.Results.SkippedChecks {
		msg := c.CheckName + " (suppressed"
		if c.SuppressComment != "" {
			msg += ": " + c.SuppressComment
		}
		out = append(out, c.record(r.CheckType, runner.PCRSkipped, msg+")"))
	}
	// Passes are grouped by check: a plan of hundreds of resources would
	// otherwise bury its failures under thousands of passes.
	passed := map[string][]check{}
	for _, c := range r.Results.PassedChecks {
		passed[c.CheckID] = append(passed[c.CheckID], c)
	}
	ids := make([]string, 0, len(passed))
	for id := range passed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		cs := passed[id]
		p := cs[0].record(r.CheckType, runner.PCRPass, fmt.Sprintf("%s: passed on %d resource(s)", cs[0].CheckName, len(cs)))
		p.ResourceRef = "plan"
		p.Evidence = mustJSON(map[string]any{"checkType": r.CheckType, "resources": len(cs)})
		out = append(out, p)
	}
	if len(r.Results.ParsingErrors) > 0 {
		out = append(out, runner.PCR{
			Engine: runner.EngineCheckov, RuleID: string(runner.PolicyEngineError), Severity: runner.High,
			Result:   runner.PCRError,
			Message:  fmt.Sprintf("checkov could not parse %s", strings.Join(r.Results.ParsingErrors, ", ")),
			Evidence: mustJSON(map[string]any{"reason": runner.PolicyEngineError, "checkType": r.CheckType, "files": r.Results.ParsingErrors}),
		})
	}
	return out
}

func (c check) record(checkType string, result runner.PCRResult, msg string) runner.PCR {
	sev, ok := severities[strings.ToUpper(c.Severity)]
	if !ok {
		sev = defaultSeverity
	}
	ref := c.ResourceAddress
	if ref == "" {
		ref = c.Resource
	}
	ev := map[string]any{"checkType": checkType, "file": c.FilePath}
	if c.Guideline != "" {
		ev["guideline"] = c.Guideline
	}
	if c.BCCheckID != "" {
		ev["bcCheckId"] = c.BCCheckID
	}
	if msg == "" {
		msg = c.CheckID
	}
	return runner.PCR{
		Engine: runner.EngineCheckov, RuleID: "checkov." + c.CheckID, Severity: sev, Result: result,
		Message: msg, ResourceRef: ref, Evidence: mustJSON(ev),
	}
}

func mustJSON(v any) json.RawMessage {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return raw
}
