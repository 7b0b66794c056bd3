package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner/audit/report/reporttest"
)

// sampleReport is the report of examples/hello linked from the README,
// rendered from the audit fixture's real runs: `go test ./action -run
// TestReportSample -update` writes it again.
const sampleReport = "../docs/report-sample.html"

// chromium runs Debian's chromium headless on page with args, as root
// needs it (no sandbox), with no GPU and no network of its own, and
// returns its stdout and stderr.
func chromium(t *testing.T, page string, args ...string) (string, string) {
	t.Helper()
	bin, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is not on PATH: run `make tools`")
	}
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-dev-shm-usage",
		"--no-first-run", "--no-default-browser-check", "--hide-scrollbars", "--user-data-dir=" + t.TempDir(),
		"--enable-logging=stderr", "--v=0", "--window-size=1200,2400"}
	cmd := exec.CommandContext(t.Context(), bin, append(append(base, args...), "file://"+page)...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
	}
	return stdout.String(), stderr.String()
}

// consoleErrors are the lines of chromium's log that report a problem of
// the page itself: an uncaught exception, a console error, a resource the
// content security policy refused. Chromium's own complaints about the
// container (no D-Bus, no GPU) are not the page's.
func consoleErrors(log string) []string {
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, "Uncaught") || strings.Contains(line, "ERROR:CONSOLE") ||
			strings.Contains(line, "Refused to") || (strings.Contains(line, ":CONSOLE(") && strings.Contains(strings.ToLower(line), "error")) {
			out = append(out, line)
		}
	}
	return out
}

// TestReportInChromium renders the report of the fixture's real runs and
// opens it in headless Chromium: the page loads without a console error,
// in the light and the dark scheme (screenshots of both, and they differ),
// and in the DOM Chromium built every chart's numbers are in the table
// under it.
func TestReportInChromium(t *testing.T) {
	r := auditFixture(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	if code, stdout, stderr := r.nova(t, "report", "--out", page); code != ExitPass || !strings.Contains(stdout, "verified events") {
		t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
	}

	light, dark := filepath.Join(dir, "light.png"), filepath.Join(dir, "dark.png")
	_, log := chromium(t, page, "--screenshot="+light)
	_, darkLog := chromium(t, page, "--screenshot="+dark, "--force-dark-mode", "--blink-settings=preferredColorScheme=0")
	if errs := consoleErrors(log + darkLog); len(errs) > 0 {
		t.Errorf("console errors:\n%s", strings.Join(errs, "\n"))
	}
	shots := map[string][]byte{}
	for _, p := range []string{light, dark} {
		b, err := os.ReadFile(p)
		if err != nil || !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) || len(b) < 10_000 {
			t.Fatalf("screenshot %s: %d bytes, %v", p, len(b), err)
		}
		shots[p] = b
	}
	if bytes.Equal(shots[light], shots[dark]) {
		t.Error("the dark scheme looks exactly like the light one")
	}

	dom, _ := chromium(t, page, "--dump-dom")
	charts, err := reporttest.CheckFigures([]byte(dom))
	if err != nil {
		t.Fatalf("in Chromium's DOM: %v", err)
	}
	// One contract: its section alone, with all eight charts.
	if charts != 8 {
		t.Errorf("Chromium's DOM holds %d charts, want 8", charts)
	}
	for _, want := range []string{"Contract " + helloID, "qa-lead", "sre-oncall", "not-applied", "Calibration in dev", "consumer.contract.deny_audience"} {
		if !strings.Contains(dom, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}

// TestReportSample keeps docs/report-sample.html a report of
// examples/hello in the current layout: with -update it is written from
// the fixture's real runs; otherwise a fresh report of them must have the
// sample's outline, and the sample must hold its numbers in its tables.
func TestReportSample(t *testing.T) {
	r := auditFixture(t)
	fresh := filepath.Join(t.TempDir(), "report.html")
	if code, _, stderr := r.nova(t, "report", "--out", fresh); code != ExitPass {
		t.Fatalf("report: exit %d\n%s", code, stderr)
	}
	got, err := os.ReadFile(fresh)
	if err != nil {
		t.Fatal(err)
	}
	if *update {
		// The fixture's home is a temporary directory; the sample shows
		// where the repo is on a user's machine.
		got = bytes.ReplaceAll(got, []byte(r.home), []byte("~"))
		if err := os.WriteFile(sampleReport, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	sample, err := os.ReadFile(sampleReport)
	if err != nil {
		t.Fatalf("%v; write it with: go test ./action -run TestReportSample -update", err)
	}
	if _, err := reporttest.CheckFigures(sample); err != nil {
		t.Errorf("%s: %v", sampleReport, err)
	}
	want, err := reporttest.Structure(got)
	if err != nil {
		t.Fatal(err)
	}
	have, err := reporttest.Structure(sample)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, have); diff != "" {
		t.Errorf("%s is not in the report's current layout (-fresh +sample):\n%s\nregenerate with: go test ./action -run TestReportSample -update", sampleReport, diff)
	}
	if !bytes.Contains(sample, []byte("Contract "+helloID)) {
		t.Errorf("%s is not the report of examples/hello", sampleReport)
	}
}
