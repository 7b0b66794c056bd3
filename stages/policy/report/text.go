package report

import (
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"github.com/nova-platform/nova/runner"
)

// WriteText renders a table for a terminal or a job log, failures first,
// and a summary line.
func WriteText(w io.Writer, pcrs []runner.PCR) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "RESULT\tSEVERITY\tENGINE\tRULE\tRESOURCE\tMESSAGE")
	for _, p := range sorted(pcrs) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", p.Result, p.Severity, p.Engine, p.RuleID, or(p.ResourceRef, "-"), oneLine(p.Message, 160))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "\n%s\n", runner.CountPCRs(pcrs).String())
	return err
}

// WriteJSON renders the records and their counts as one JSON document.
func WriteJSON(w io.Writer, pcrs []runner.PCR) error {
	if pcrs == nil {
		pcrs = []runner.PCR{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(struct {
		Counts runner.Counts `json:"counts"`
		PCRs   []runner.PCR  `json:"pcrs"`
	}{runner.CountPCRs(pcrs), pcrs})
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > max {
		s = string(r[:max-1]) + "…"
	}
	return s
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
