package confidence

import (
	"bytes"
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
)

// maxReportBytes bounds a JUnit report; anything larger is not a report a
// reviewer could read either.
const maxReportBytes = 64 << 20

// Report is what one JUnit XML report says.
type Report struct {
	Field   string `json:"field"`
	Path    string `json:"path"`
	Total   int    `json:"total"`
	Skipped int    `json:"skipped"`
	Failed  int    `json:"failed"`
	// Problem is set when the report could not be used.
	Problem runner.Reason `json:"problem,omitempty"`
	Detail  string        `json:"detail,omitempty"`
}

// Passed is the number of tests that ran and passed.
func (r Report) Passed() int { return r.Total - r.Skipped - r.Failed }

type junitSuite struct {
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Cases    []junitCase  `xml:"testcase"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitCase struct {
	Failure *struct{} `xml:"failure"`
	Error   *struct{} `xml:"error"`
	Skipped *struct{} `xml:"skipped"`
}

// ReadReport reads the JUnit report at rel inside checkout. Paths that
// leave the checkout are refused: a contract must not make Nova read files
// it does not own.
func ReadReport(dir, field, rel string) Report {
	r := Report{Field: field, Path: rel}
	data, err := checkout.ReadFile(dir, rel, maxReportBytes)
	switch {
	case err == nil:
		return parseJUnit(r, data)
	case errors.Is(err, fs.ErrNotExist):
		r.Problem, r.Detail = runner.TestsReportMissing, err.Error()
	case runner.ReasonOf(err) == runner.PathOutsideCheckout:
		r.Problem, r.Detail = runner.TestsReportInvalid, "the report path leaves the checkout: "+err.Error()
	case runner.ReasonOf(err) == runner.FileTooLarge:
		r.Problem, r.Detail = runner.TestsReportInvalid, "larger than 64 MiB"
	default:
		r.Problem, r.Detail = runner.TestsReportInvalid, err.Error()
	}
	return r
}

func parseJUnit(r Report, data []byte) Report {
	dec := xml.NewDecoder(bytes.NewReader(data))
	// Reports come from the consumer's CI; an entity declaration has no
	// business in them, and Go's decoder does not expand external ones.
	dec.Strict = true
	var root junitSuite
	var start xml.StartElement
	for {
		tok, err := dec.Token()
		if err != nil {
			r.Problem, r.Detail = runner.TestsReportInvalid, fmt.Sprintf("not JUnit XML: %v", err)
			return r
		}
		if se, ok := tok.(xml.StartElement); ok {
			start = se
			break
		}
	}
	if start.Name.Local != "testsuites" && start.Name.Local != "testsuite" {
		r.Problem, r.Detail = runner.TestsReportInvalid, fmt.Sprintf("root element <%s>, want <testsuites> or <testsuite>", start.Name.Local)
		return r
	}
	if err := dec.DecodeElement(&root, &start); err != nil {
		r.Problem, r.Detail = runner.TestsReportInvalid, fmt.Sprintf("not JUnit XML: %v", err)
		return r
	}
	r.Total, r.Skipped, r.Failed = count(root)
	if r.Total-r.Skipped <= 0 {
		r.Problem, r.Detail = runner.TestsReportInvalid, "the report holds no test that ran"
	}
	return r
}

// count prefers the test cases themselves over the summary attributes,
// which some tools leave out or get wrong; attributes count only where a
// suite lists no cases.
func count(s junitSuite) (total, skipped, failed int) {
	if len(s.Cases) > 0 {
		for _, c := range s.Cases {
			total++
			switch {
			case c.Skipped != nil:
				skipped++
			case c.Failure != nil || c.Error != nil:
				failed++
			}
		}
	} else if len(s.Suites) == 0 {
		total, skipped, failed = s.Tests, s.Skipped, s.Failures+s.Errors
	}
	for _, child := range s.Suites {
		t, sk, f := count(child)
		total, skipped, failed = total+t, skipped+sk, failed+f
	}
	return total, skipped, failed
}
