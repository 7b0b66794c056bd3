package confidence

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/nova-platform/nova/runner"
)

func TestReadReport(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("suites.xml", `<?xml version="1.0" encoding="UTF-8"?>
<testsuites>
  <testsuite name="a" tests="3" failures="1">
    <testcase name="ok"/>
    <testcase name="bad"><failure message="boom">trace</failure></testcase>
    <testcase name="skip"><skipped/></testcase>
  </testsuite>
  <testsuite name="b">
    <testcase name="err"><error message="panic"/></testcase>
    <testcase name="ok2"/>
  </testsuite>
</testsuites>`)
	write("single.xml", `<testsuite name="go" tests="4"><testcase name="a"/><testcase name="b"/><testcase name="c"/><testcase name="d"/></testsuite>`)
	write("attrs-only.xml", `<testsuite name="k6" tests="10" failures="2" errors="1" skipped="2"/>`)
	write("empty.xml", `<testsuites></testsuites>`)
	write("html.xml", `<html><body>not a report</body></html>`)
	write("broken.xml", `<testsuite><testcase name="a">`)
	write("nested/deep.xml", `<testsuites><testsuite><testsuite><testcase/></testsuite></testsuite></testsuites>`)

	tests := []struct {
		path                   string
		total, skipped, failed int
		problem                runner.Reason
	}{
		{"suites.xml", 5, 1, 2, ""},
		{"single.xml", 4, 0, 0, ""},
		{"attrs-only.xml", 10, 2, 3, ""},
		{"nested/deep.xml", 1, 0, 0, ""},
		{"empty.xml", 0, 0, 0, runner.TestsReportInvalid},
		{"html.xml", 0, 0, 0, runner.TestsReportInvalid},
		{"broken.xml", 0, 0, 0, runner.TestsReportInvalid},
		{"missing.xml", 0, 0, 0, runner.TestsReportMissing},
		{"../outside.xml", 0, 0, 0, runner.TestsReportInvalid},
		{"/etc/passwd", 0, 0, 0, runner.TestsReportInvalid},
		{"nested/../../outside.xml", 0, 0, 0, runner.TestsReportInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			r := ReadReport(dir, "unitTests", tt.path)
			if r.Problem != tt.problem {
				t.Fatalf("problem %q (%s), want %q", r.Problem, r.Detail, tt.problem)
			}
			if tt.problem == "" && (r.Total != tt.total || r.Skipped != tt.skipped || r.Failed != tt.failed) {
				t.Errorf("counts total=%d skipped=%d failed=%d, want %d %d %d", r.Total, r.Skipped, r.Failed, tt.total, tt.skipped, tt.failed)
			}
		})
	}
}
