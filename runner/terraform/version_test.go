package terraform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// versioned writes a terraform stand-in that logs each command's name to
// calls, answers `version` with what version prints, and runs body for
// every other command.
func versioned(t *testing.T, calls, version, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "terraform")
	script := "#!/bin/sh\necho \"$1\" >> " + calls + "\nif [ \"$1\" = version ]; then\n" + version + "\nexit 0\nfi\n" + body + "\n"
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

const current = `echo '{"terraform_version":"1.11.4"}'`

// TestVersionAskedOncePerWorkspace: a workspace asks the binary its version
// before its first command and never again; a run is one workspace, so one
// probe per run.
func TestVersionAskedOncePerWorkspace(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	body := `case "$1" in show) echo '{"format_version":"1.2","terraform_version":"1.11.4"}' ;; plan) exit 2 ;; esac`
	tf := versioned(t, calls, current, body)
	ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := ws.Init(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if changed, err := ws.Plan(ctx, "tfplan"); err != nil || !changed {
		t.Fatalf("plan: changed %t, %v", changed, err)
	}
	if _, err := ws.ShowPlan(ctx, "tfplan"); err != nil {
		t.Fatal(err)
	}
	if err := ws.Apply(ctx, "tfplan"); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"version", "init", "plan", "show", "apply"}, lines(t, calls)); diff != "" {
		t.Errorf("terraform commands (-want +got):\n%s", diff)
	}
}

// TestVersionRefusesWhatNovaDoesNotRun: a terraform too old for the flags
// Nova passes is refused before the command runs, under the command's own
// reason and never as an interruption; so is one whose version cannot be
// asked, and the next command asks again.
func TestVersionRefusesWhatNovaDoesNotRun(t *testing.T) {
	tests := []struct {
		name, version, mention string
		calls                  []string
	}{
		{"too old", `echo '{"terraform_version":"0.14.11"}'`, "is terraform 0.14.11; Nova needs 0.15.4 or later", []string{"version"}},
		// terraform-exec falls back on the human form of older versions.
		{"no JSON", `echo 'Terraform v0.12.31'`, "is terraform 0.12.31; Nova needs 0.15.4 or later", []string{"version", "version"}},
		{"not a version", `echo '{"terraform_version":"one"}'`, "its version", []string{"version", "version"}},
		{"fails", "echo 'broken install' >&2\nexit 3", "broken install", []string{"version", "version"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			tf := versioned(t, calls, tt.version, "exit 0")
			ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				err = ws.Apply(t.Context(), "tfplan")
				if runner.ReasonOf(err) != runner.TerraformApplyFailed || !strings.Contains(err.Error(), tt.mention) {
					t.Errorf("apply: %v (%s), want %s mentioning %q", err, runner.ReasonOf(err), runner.TerraformApplyFailed, tt.mention)
				}
			}
			if diff := cmp.Diff(tt.calls, lines(t, calls)); diff != "" {
				t.Errorf("terraform commands (-want +got):\n%s", diff)
			}
		})
	}
}
