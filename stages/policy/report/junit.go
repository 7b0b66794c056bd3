package report

import (
	"encoding/xml"
	"fmt"
	"io"

	"github.com/nova-platform/nova/runner"
)

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Skipped  int         `xml:"skipped,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	ClassName string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitProblem `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr,omitempty"`
	Body    string `xml:",chardata"`
}

// WriteJUnit renders the records as JUnit XML: one test suite per engine,
// one test case per record (failures fail, engine errors error, skips
// skip).
func WriteJUnit(w io.Writer, pcrs []runner.PCR) error {
	out := junitSuites{Name: "nova policy"}
	index := map[string]int{}
	for _, p := range pcrs {
		i, ok := index[p.Engine]
		if !ok {
			i = len(out.Suites)
			index[p.Engine] = i
			out.Suites = append(out.Suites, junitSuite{Name: p.Engine})
		}
		s := &out.Suites[i]
		name := p.RuleID
		if p.ResourceRef != "" {
			name += " " + p.ResourceRef
		}
		c := junitCase{ClassName: "nova." + p.Engine, Name: name}
		problem := &junitProblem{Message: p.Message, Type: string(p.Severity), Body: fmt.Sprintf("%s %s %s: %s\nevidence: %s", p.Severity, p.Result, p.RuleID, p.Message, p.Evidence)}
		switch p.Result {
		case runner.PCRFail:
			c.Failure = problem
			s.Failures++
		case runner.PCRError:
			c.Error = problem
			s.Errors++
		case runner.PCRSkipped:
			c.Skipped = &junitProblem{Message: p.Message}
			s.Skipped++
		}
		s.Tests++
		s.Cases = append(s.Cases, c)
	}
	for _, s := range out.Suites {
		out.Tests += s.Tests
		out.Failures += s.Failures
		out.Errors += s.Errors
		out.Skipped += s.Skipped
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(out); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
