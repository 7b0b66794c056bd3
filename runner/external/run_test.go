package external

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		body       string
		wantOut    string
		wantCode   int
		wantStderr string
	}{
		{"success", "echo '{\"ok\":true}'", "{\"ok\":true}\n", 0, ""},
		{"normal failure code", "echo '[]'; exit 1", "[]\n", 1, ""},
		{"crash", "echo 'Traceback (most recent call last):' >&2; echo 'KeyError: x' >&2; exit 2", "", 2, "KeyError: x"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := Run(t.Context(), Command{Path: script(t, tc.body)})
			if err != nil {
				t.Fatal(err)
			}
			if string(out.Stdout) != tc.wantOut || out.ExitCode != tc.wantCode || !strings.Contains(string(out.Stderr), tc.wantStderr) {
				t.Errorf("got stdout %q code %d stderr %q", out.Stdout, out.ExitCode, out.Stderr)
			}
		})
	}
}

// TestRunPassesOnlyTheAllowedEnvironment: a tool sees neither nova's own
// environment nor the secrets in the one it is given, only its allowlist.
func TestRunPassesOnlyTheAllowedEnvironment(t *testing.T) {
	t.Setenv("NOVA_TEST_LEAK", "leaked")
	out, err := Run(t.Context(), Command{
		Tool: Checkov,
		Path: script(t, `echo "[$NOVA_TEST_LEAK][$NOVA_SIGNING_KEY][$GITHUB_TOKEN][$CHECKOV_RUN_SCA_PACKAGE_SCAN_V2]"`),
		Env:  []string{"NOVA_SIGNING_KEY=key", "GITHUB_TOKEN=ghs_x", "CHECKOV_RUN_SCA_PACKAGE_SCAN_V2=false"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(string(out.Stdout)); got != "[][][][false]" {
		t.Errorf("tool saw %q, want only its allowlisted variables", got)
	}
}

func TestRunMissingBinary(t *testing.T) {
	if _, err := Run(t.Context(), Command{Path: filepath.Join(t.TempDir(), "absent")}); err == nil {
		t.Error("running a missing binary succeeded")
	}
}

func TestFind(t *testing.T) {
	p := script(t, "true")
	if got := Find(p); got != p {
		t.Errorf("Find(%q) = %q", p, got)
	}
	if got := Find(filepath.Join(t.TempDir(), "absent")); got != "" {
		t.Errorf("Find of a missing binary = %q, want empty", got)
	}
	if got := Find(""); got != "" {
		t.Errorf("Find(\"\") = %q", got)
	}
}

func TestTail(t *testing.T) {
	long := strings.Repeat("x", 100) + "the real error"
	if got := Tail([]byte(long), 20); got != "…xxxxxxthe real error" {
		t.Errorf("Tail = %q", got)
	}
	if got := Tail(nil, 20); got != "(no output on stderr)" {
		t.Errorf("Tail(nil) = %q", got)
	}
}
