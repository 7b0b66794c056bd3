package confidence

import (
	"fmt"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// Table renders the signal as a plain-text table for terminals and logs.
func Table(c runner.Confidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%-11s %6s %7s %13s  %s\n", "input", "value", "weight", "contribution", "why")
	for _, name := range Inputs {
		in := c.PerInput[name]
		fmt.Fprintf(&b, "%-11s %6.3f %7.2f %13.3f  %s%s\n", name, in.Value, in.Weight, in.Contribution, in.Explanation, reasonSuffix(in.Reasons))
	}
	fmt.Fprintf(&b, "%-11s %6.3f %7s %13s  %s\n", "score", c.Score, "", "", verdictLine(c))
	return b.String()
}

// Markdown renders the signal for PR comments and job summaries: the same
// table, plus one horizontal bar per input so the weak input stands out.
// An explanation can name a file or quote a test report from the change,
// so it is escaped.
func Markdown(c runner.Confidence) string {
	var b strings.Builder
	fmt.Fprintf(&b, "**Confidence %.3f** · threshold %.3f · %s\n\n", c.Score, c.Threshold, verdictLine(c))
	b.WriteString("| input | value | weight | contribution | why |\n|---|---:|---:|---:|---|\n")
	for _, name := range Inputs {
		in := c.PerInput[name]
		fmt.Fprintf(&b, "| %s | %.3f | %.2f | %.3f | %s%s |\n", name, in.Value, in.Weight, in.Contribution,
			templates.EscapeMarkdown(in.Explanation), reasonSuffix(in.Reasons))
	}
	b.WriteString("\n```\n")
	for _, name := range Inputs {
		in := c.PerInput[name]
		fmt.Fprintf(&b, "%-11s %s %.3f\n", name, bar(in.Value, 20), in.Value)
	}
	b.WriteString("```\n\n" + Arithmetic(c) + "\n")
	return b.String()
}

// Arithmetic spells the score out as the sum of its contributions.
func Arithmetic(c runner.Confidence) string {
	parts := make([]string, len(Inputs))
	for i, name := range Inputs {
		parts[i] = fmt.Sprintf("%.3f", c.PerInput[name].Contribution)
	}
	return fmt.Sprintf("score = %s = %.3f; threshold %.3f", strings.Join(parts, " + "), c.Score, c.Threshold)
}

func verdictLine(c runner.Confidence) string {
	switch c.Band {
	case runner.BandPass:
		return fmt.Sprintf("pass (≥ %.3f)", c.Threshold)
	case runner.BandFail:
		return fmt.Sprintf("fail (< %.3f)", c.Threshold)
	}
	return fmt.Sprintf("blocked (%s)", reasonList(c.ReasonCodes[:1]))
}

func reasonSuffix(rs []runner.Reason) string {
	if len(rs) == 0 {
		return ""
	}
	return " [" + reasonList(rs) + "]"
}

func reasonList(rs []runner.Reason) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = string(r)
	}
	return strings.Join(s, ", ")
}

// bar draws v in [0,1] as width cells, rounding to the nearest cell.
func bar(v float64, width int) string {
	full := int(v*float64(width) + 0.5)
	return strings.Repeat("█", full) + strings.Repeat("░", width-full)
}
