package main

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"text/tabwriter"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// writeVerifyReport renders a verify report for a terminal: a summary
// table, a count per reason code, then one line per finding with its
// reason code, path and commit, so an auditor can go straight to the
// broken item. repo may be a URL with a token in it
// (https://x:TOKEN@host/…); it is shown without.
func writeVerifyReport(w io.Writer, r *chain.Report, repo string) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := r.Head
	if head == "" {
		head = "(empty)"
	}
	status := "OK"
	if !r.OK() {
		status = fmt.Sprintf("FAILED (%d findings)", len(r.Findings))
	}
	fmt.Fprintf(tw, "evidence repo\t%s\n", chain.RedactURL(repo))
	fmt.Fprintf(tw, "head\t%s\n", head)
	if r.Since != "" {
		// The counts below are what is new since it.
		fmt.Fprintf(tw, "since\t%s\n", r.Since)
	}
	fmt.Fprintf(tw, "commits\t%d\n", r.Commits)
	fmt.Fprintf(tw, "contracts\t%d\n", r.Contracts)
	fmt.Fprintf(tw, "events\t%d\n", r.Events)
	fmt.Fprintf(tw, "witnessed heads\t%d\n", r.Witnessed)
	fmt.Fprintf(tw, "result\t%s\n", status)
	if err := tw.Flush(); err != nil {
		return err
	}
	writeSigners(w, r.Signatures)
	if r.OK() {
		return nil
	}
	counts := map[runner.Reason]int{}
	for _, f := range r.Findings {
		counts[f.Reason]++
	}
	reasons := make([]string, 0, len(counts))
	for reason := range counts {
		reasons = append(reasons, string(reason))
	}
	sort.Strings(reasons)
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tCOUNT")
	for _, reason := range reasons {
		fmt.Fprintf(tw, "%s\t%d\n", reason, counts[runner.Reason(reason)])
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "REASON\tPATH\tCOMMIT\tDETAIL")
	for _, f := range r.Findings {
		path, commit := f.Path, f.Commit
		if path == "" {
			path = "-"
		}
		if commit == "" {
			commit = "-"
		} else if len(commit) > 12 {
			commit = commit[:12]
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", f.Reason, path, commit, f.Message)
	}
	return tw.Flush()
}

// writeSigners says which kinds of signature the events carry: one
// evidence repo may hold key-signed and keyless events, and for the
// keyless ones the workflows that signed them (--output json lists each
// event's).
func writeSigners(w io.Writer, sigs []chain.EventSignature) {
	kinds := map[string]int{}
	ids := map[string]int{}
	for _, s := range sigs {
		kinds[s.Kind]++
		if s.Identity != "" {
			ids[s.Identity]++
		}
	}
	fmt.Fprintf(w, "signatures: %d with a key, %d keyless\n", kinds[signing.KindKey], kinds[signing.KindKeyless])
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		fmt.Fprintf(w, "  %d by %s\n", ids[id], id)
	}
}
