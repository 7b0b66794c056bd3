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
		var a Annotation
		switch p.Result {
		case runner.PCRFail:
			a.Level = annotationLevel[p.Severity]
		case runner.PCRError:
			a.Level = "warning"
		default:
			continue
		}
		if locate != nil {
			if file, line, ok := locate(p.ResourceRef); ok {
				a.File, a.Line = file, line
			}
		}
		a.Title = fmt.Sprintf("%s (%s, %s)", p.RuleID, p.Severity, p.Engine)
		a.Message = p.Message
		if p.ResourceRef != "" && !strings.Contains(a.Message, p.ResourceRef) {
			a.Message = p.ResourceRef + ": " + a.Message
		}
		if _, err := fmt.Fprintln(w, a); err != nil {
			return err
		}
	}
	return nil
}

// Annotation is one workflow command that GitHub Actions and Gitea Actions
// show as an annotation: on File at Line and Col when they are set. File
// is relative to the repository root, as the runners resolve it.
type Annotation struct {
	// Level is error, warning or notice.
	Level          string
	File           string
	Line, Col      int
	Title, Message string
}

// String renders the command, escaped so that a message can neither span
// lines nor inject another command.
func (a Annotation) String() string {
	var props []string
	if a.File != "" {
		props = append(props, "file="+escapeProperty(a.File))
		if a.Line > 0 {
			props = append(props, "line="+strconv.Itoa(a.Line))
			if a.Col > 0 {
				props = append(props, "col="+strconv.Itoa(a.Col))
			}
		}
	}
	if a.Title != "" {
		props = append(props, "title="+escapeProperty(a.Title))
	}
	return fmt.Sprintf("::%s %s::%s", a.Level, strings.Join(props, ","), escapeData(a.Message))
}

// escapeData escapes a workflow command's message as the runner unescapes
// it, so a message can neither span lines nor inject a command.
func escapeData(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
}

func escapeProperty(s string) string {
	return strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A", ":", "%3A", ",", "%2C").Replace(s)
}
