// Package report renders policy records (PCRs) for people and for tools: a
// text table, JSON, SARIF 2.1.0 for code-scanning uploads, JUnit XML for
// test reporters, and GitHub/Gitea workflow-command annotations. It only
// formats records; every decision was made by the stages that produced
// them.
package report

import (
	"fmt"
	"io"
	"sort"

	"github.com/nova-platform/nova/runner"
)

// Format is an output format of `nova policy --output`.
type Format string

const (
	Text  Format = "text"
	JSON  Format = "json"
	SARIF Format = "sarif"
	JUnit Format = "junit"
)

// Formats lists every format, for flags and messages.
var Formats = []Format{Text, JSON, SARIF, JUnit}

// ParseFormat reads a format name.
func ParseFormat(s string) (Format, error) {
	for _, f := range Formats {
		if string(f) == s {
			return f, nil
		}
	}
	return "", fmt.Errorf("unknown output format %q (want text, json, sarif or junit)", s)
}

// Locator maps a record's resourceRef to a file and a 1-based line, when
// the reference points into a file (a contract field).
type Locator func(resourceRef string) (file string, line int, ok bool)

// Options carries what renderers need beyond the records.
type Options struct {
	// Locate places records in files; nil places none.
	Locate Locator
	// ContractFile is the contract's path as the repository names it; SARIF
	// anchors records that point at no file (stack instances, planned
	// resources) there, since code scanning needs a location for every
	// result.
	ContractFile string
	// Version is Nova's version, recorded as the SARIF tool's.
	Version string
}

// Write renders pcrs in format f.
func Write(w io.Writer, f Format, pcrs []runner.PCR, opts Options) error {
	switch f {
	case Text:
		return WriteText(w, pcrs)
	case JSON:
		return WriteJSON(w, pcrs)
	case SARIF:
		return WriteSARIF(w, pcrs, opts)
	case JUnit:
		return WriteJUnit(w, pcrs)
	}
	return fmt.Errorf("unknown output format %q", f)
}

// resultOrder puts what needs attention first.
var resultOrder = map[runner.PCRResult]int{runner.PCRFail: 0, runner.PCRError: 1, runner.PCRSkipped: 2, runner.PCRPass: 3}

func severityRank(s runner.Severity) int {
	for i, v := range runner.Severities {
		if v == s {
			return i
		}
	}
	return len(runner.Severities)
}

// sorted returns the records failures first, most severe first, keeping
// the engines' order otherwise.
func sorted(pcrs []runner.PCR) []runner.PCR {
	out := append([]runner.PCR(nil), pcrs...)
	sort.SliceStable(out, func(i, j int) bool {
		if a, b := resultOrder[out[i].Result], resultOrder[out[j].Result]; a != b {
			return a < b
		}
		return severityRank(out[i].Severity) < severityRank(out[j].Severity)
	})
	return out
}

func locate(opts Options, ref string) (string, int, bool) {
	if opts.Locate == nil {
		return "", 0, false
	}
	return opts.Locate(ref)
}
