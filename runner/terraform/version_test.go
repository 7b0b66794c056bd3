package terraform

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

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

// TestNoVersionProbeWhileCommandsSucceed: terraform accepting Nova's flags
// is all a run needs to know of its version, so a process whose commands
// succeed starts no terraform only to ask it.
func TestNoVersionProbeWhileCommandsSucceed(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	tf := versioned(t, calls, current, "exit 0")
	for range 3 {
		ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		if err := ws.Init(t.Context(), nil); err != nil {
			t.Fatal(err)
		}
	}
	if got, want := strings.Join(lines(t, calls), " "), "init init init"; got != want {
		t.Errorf("terraform commands: %s, want %s", got, want)
	}
}

// TestOneVersionProbePerProcess: a failure asks the binary its version, to
// tell a terraform Nova does not run from a failing configuration; a
// supported version is asked once for the whole process, and the failure
// stays the command's own.
func TestOneVersionProbePerProcess(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	tf := versioned(t, calls, current, "echo 'Error: Invalid provider configuration' >&2\nexit 1")
	for range 3 {
		ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
		if err != nil {
			t.Fatal(err)
		}
		err = ws.Init(t.Context(), nil)
		if runner.ReasonOf(err) != runner.TerraformInitFailed || !strings.Contains(err.Error(), "Invalid provider configuration") || strings.Contains(err.Error(), "Nova needs") {
			t.Errorf("init: %v (%s), want %s with terraform's own error", err, runner.ReasonOf(err), runner.TerraformInitFailed)
		}
	}
	if got, want := strings.Join(lines(t, calls), " "), "init version init init"; got != want {
		t.Errorf("terraform commands: %s, want %s", got, want)
	}
}

// TestVersionProbeExplainsFailures: a terraform too old for the flags Nova
// passes, or one that cannot say its version, fails on them; the command's
// error then says why first, under the command's own reason, and keeps
// what terraform said. A probe that failed is asked again by the next
// workspace.
func TestVersionProbeExplainsFailures(t *testing.T) {
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
			tf := versioned(t, calls, tt.version, "echo 'flag provided but not defined: -json' >&2\nexit 1")
			for range 2 {
				ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
				if err != nil {
					t.Fatal(err)
				}
				err = ws.Apply(t.Context(), "tfplan")
				if runner.ReasonOf(err) != runner.TerraformApplyFailed || !strings.Contains(err.Error(), tt.mention) || !strings.Contains(err.Error(), "flag provided but not defined") {
					t.Errorf("apply: %v (%s), want %s mentioning %q and terraform's error", err, runner.ReasonOf(err), runner.TerraformApplyFailed, tt.mention)
				}
			}
			if got := strings.Join(lines(t, calls), " "); got != "apply version apply version" {
				t.Errorf("terraform commands: %s, want each apply and a probe after it", got)
			}
		})
	}
}

// TestPlanNamesTheTerraformThatMadeIt: a plan's JSON names the version of
// terraform that made it, and a plan made by one too old for Nova is
// refused without asking the binary; a plan that names no version has the
// binary asked.
func TestPlanNamesTheTerraformThatMadeIt(t *testing.T) {
	tests := []struct {
		name, plan, version, calls string
		want                       runner.Reason
	}{
		{"current", `{"format_version":"1.2","terraform_version":"1.11.4"}`, current, "show", ""},
		{"too old", `{"format_version":"1.2","terraform_version":"0.15.3"}`, current, "show", runner.TerraformShowFailed},
		{"not a version", `{"format_version":"1.2","terraform_version":"one"}`, current, "show", runner.TerraformShowFailed},
		{"unnamed, binary current", `{"format_version":"1.2"}`, current, "show version", ""},
		{"unnamed, binary too old", `{"format_version":"1.2"}`, `echo '{"terraform_version":"0.14.11"}'`, "show version", runner.TerraformShowFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			calls := filepath.Join(t.TempDir(), "calls")
			tf := versioned(t, calls, tt.version, "echo '"+tt.plan+"'")
			ws, err := New(t.TempDir(), Options{ExecPath: tf, Env: map[string]string{"PATH": os.Getenv("PATH")}})
			if err != nil {
				t.Fatal(err)
			}
			_, err = ws.ShowPlan(t.Context(), "tfplan")
			switch {
			case tt.want == "" && err != nil:
				t.Errorf("show: %v", err)
			case tt.want != "" && (runner.ReasonOf(err) != tt.want || !strings.Contains(err.Error(), "Nova needs 0.15.4 or later") && !strings.Contains(err.Error(), "not a version")):
				t.Errorf("show: %v (%s), want %s saying why", err, runner.ReasonOf(err), tt.want)
			}
			if got := strings.Join(lines(t, calls), " "); got != tt.calls {
				t.Errorf("terraform commands: %s, want %s", got, tt.calls)
			}
		})
	}
}
