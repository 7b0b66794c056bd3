package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// annotationLevel maps a failing record's severity to a workflow command.
var annotationLevel = map[runner.Severity]string{
	runner.Critical: "error", runner.High: "error", runner.Medium: "warning", runner.Low: "warning", runner.Info: "notice",
}

// WriteAnnotations writes a workflow command (`::error file=…,line=…::msg`)
// for each failing record, and a warning for each engine that could not
// evaluate. GitHub Actions and Gitea Actions turn them into annotations on
// the contract file at the line of the field when the record names one.
// They must go to the job's standard output.
func WriteAnnotations(w io.Writer, pcrs []runner.PCR, locate Locator) error {
	for _, p := range sorted(pcrs) {
		var level string
		switch p.Result {
		case runner.PCRFail:
			level = annotationLevel[p.Severity]
		case runner.PCRError:
			level = "warning"
		default:
			continue
		}
		var props []string
		if locate != nil {
			if file, line, ok := locate(p.ResourceRef); ok {
				props = append(props, "file="+escapeProperty(file))
				if line > 0 {
					props = append(props, "line="+strconv.Itoa(line))
				}
			}
		}
		props = append(props, "title="+escapeProperty(fmt.Sprintf("%s (%s, %s)", p.RuleID, p.Severity, p.Engine)))
		msg := p.Message
		if p.ResourceRef != "" && !strings.Contains(msg, p.ResourceRef) {
			msg = p.ResourceRef + ": " + msg
		}
		if _, err := fmt.Fprintf(w, "::%s %s::%s\n", level, strings.Join(props, ","), escapeData(msg)); err != nil {
			return err
		}
	}
	return nil
}

// escapeData escapes a workflow command's message as the runner unescapes
// it, so a message can neither span lines nor inject a command.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
