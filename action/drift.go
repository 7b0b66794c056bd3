package main

import (
	"context"
	"fmt"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
)

// driftMarker finds a contract's drift issue again: one per contract and
// environment, whatever its title became.
func driftMarker(contractID, env string) string {
	return fmt.Sprintf("<!-- nova:drift:%s:%s -->", markerValue(contractID), markerValue(env))
}

// drift keeps the forge's drift issue of the contract in step with the
// check: opened or updated while it drifts, closed once it does not. A
// check that could not tell leaves the issue as it is.
func (r *forgeReport) drift(ctx context.Context, st *runner.State, v runView) {
	if r.cfg.Command != "drift" || r.forge.issues == nil || st.Drift == nil || st.Contract == nil {
		return
	}
	marker := driftMarker(v.ContractID, v.Environment)
	var err error
	if st.Drift.Drifted {
		title := fmt.Sprintf("Drift: contract %s in %s", v.ContractID, v.Environment)
		err = r.forge.issues.UpsertIssue(ctx, marker, title, driftIssueBody(marker, *st.Drift, v, r.runURL()))
	} else {
		comment := fmt.Sprintf("No drift found by run %s", v.RunID)
		if u := r.runURL(); u != "" {
			comment += " (" + u + ")"
		}
		err = r.forge.issues.CloseIssue(ctx, marker, comment+": what runs matches what was applied again.")
	}
	if err != nil {
		fmt.Fprintf(r.warn, "nova: could not update the drift issue: %v\n", err)
	}
}

// driftIssueBody renders a drift for people: what drifted, how, and what
// to do about it. It holds no attribute values, as the event does not;
// the names it holds come from the change and are escaped.
func driftIssueBody(marker string, rec runner.DriftRecord, v runView, runURL string) string {
	esc := templates.EscapeMarkdown
	var b strings.Builder
	fmt.Fprintf(&b, "%s\n### Drift in <code>%s</code>\n\n", marker, esc(v.Environment))
	fmt.Fprintf(&b, "Contract <code>%s</code>: run `%s` found %d resource(s) that no longer match what was applied.", esc(v.ContractID), v.RunID, len(rec.Resources))
	if runURL != "" {
		fmt.Fprintf(&b, " [Workflow run](%s).", runURL)
	}
	b.WriteString("\n\n| resource | how | attributes |\n|---|---|---|\n")
	for _, d := range rec.Resources {
		how := "changed outside Terraform"
		if d.Kind == runner.DriftConfiguration {
			how = "differs from the applied configuration"
		}
		fmt.Fprintf(&b, "| <code>%s</code> | %s (%s) | %s |\n", esc(d.Address), how, esc(strings.Join(d.Actions, ", ")), esc(strings.Join(d.Attributes, ", ")))
	}
	if rec.Note != "" {
		fmt.Fprintf(&b, "\n%s.\n", esc(rec.Note))
	}
	b.WriteString("\nRe-apply the contract (`nova run`) to put back what was approved, or change the contract to adopt what is there. This issue closes when a drift check finds none.\n")
	return b.String()
}
