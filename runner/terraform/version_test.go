package terraform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// versioned writes a terraform stand-in that logs each command's name to
// calls and answers `version` with what version prints.
func versioned(t *testing.T, calls, version string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "terraform")
	script := "#!/bin/sh\necho \"$1\" >> " + calls + "\nif [ \"$1\" = version ]; then\n" + version + "\nfi\nexit 0\n"
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func lines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// TestOneVersionProbePerProcess: however many workspaces a process opens
// on one terraform binary (a run's plan and apply, many contracts), the
// binary is asked its version once.
func TestOneVersionProbePerProcess(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	tf := versioned(t, calls, `echo '{"terraform_version":"1.11.4"}'`)
	opts := Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}}
	ProbeVersion(tf, opts.Env) // as the wiring does while the pre-plan stages run
	for range 3 {
		ws, err := New(t.TempDir(), opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Init(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(lines(t, calls), " "), "version init init init"; got != want {
		t.Errorf("terraform commands: %s, want %s", got, want)
	}
}

// TestVersionProbeRefuses: a terraform too old for the flags Nova passes,
// or one that cannot say its version, fails the command that needed the
// answer with that command's reason, before the command runs; a probe
// that failed is asked again by the next workspace.
func TestVersionProbeRefuses(t *testing.T) {
	tests := []struct {
		name, version, mention string
	}{
		{"too old", `echo '{"terraform_version":"0.14.11"}'`, "is terraform 0.14.11; Nova needs 0.15.4 or later"},
		{"no JSON", `echo 'Terraform v0.12.31'`, "does not report its version as JSON"},
		{"fails", "echo 'broken install' >&2\nexit 3", "broken install"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			tf := versioned(t, calls, tt.version)
			for range 2 {
				ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
				if err != nil {
					t.Fatal(err)
				}
				err = ws.Apply(t.Context(), "tfplan")
				if runner.ReasonOf(err) != runner.TerraformApplyFailed || !strings.Contains(err.Error(), tt.mention) {
					t.Errorf("apply: %v (%s), want %s mentioning %q", err, runner.ReasonOf(err), runner.TerraformApplyFailed, tt.mention)
				}
			}
			if got := strings.Join(lines(t, calls), " "); got != "version version" {
				t.Errorf("terraform commands: %s, want the probe twice and nothing else", got)
			}
		})
	}
}
