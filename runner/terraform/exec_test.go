package terraform

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// scripted writes a terraform stand-in: it answers the version probe
// terraform-exec makes before every command, then does what body says for
// the command under test. The real binary is exercised end to end in
// action/; this pins down how each way terraform can end is classified.
func scripted(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "terraform")
	script := `#!/bin/sh
if [ "$1" = version ]; then
  echo '{"terraform_version":"1.11.4","platform":"linux_amd64","provider_selections":{},"terraform_outdated":false}'
  exit 0
fi
` + body
	if err := os.WriteFile(p, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestExecClassifiesHowTerraformEnded(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		cancel  bool
		want    runner.Reason
		mention string
	}{
		{"a clean failure is terraform's verdict", "echo 'Error: Invalid provider configuration' >&2\nexit 1\n", false, runner.TerraformApplyFailed, "Invalid provider configuration"},
		{"killed by a signal is no verdict", "kill -9 $$\n", false, runner.TerraformInterrupted, "signal: killed"},
		{"terminated is no verdict", "kill -TERM $$\n", false, runner.TerraformInterrupted, "terminated"},
		{"cancelled by nova is no verdict", "echo started; exec sleep 30\n", true, runner.TerraformInterrupted, "interrupted"},
		{"success", "exit 0\n", false, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, tt.body), Env: map[string]string{"PATH": os.Getenv("PATH")}})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			if tt.cancel {
				var cancel context.CancelFunc
				ctx, cancel = context.WithCancel(ctx)
				cancel()
			}
			err = ws.Apply(ctx, "tfplan")
			if tt.want == "" {
				if err != nil {
					t.Fatalf("apply: %v", err)
				}
				return
			}
			if runner.ReasonOf(err) != tt.want || !strings.Contains(err.Error(), tt.mention) {
				t.Errorf("apply: %v (reason %s); want %s mentioning %q", err, runner.ReasonOf(err), tt.want, tt.mention)
			}
		})
	}
}

func TestExecKeepsTheTailOfTerraformsError(t *testing.T) {
	body := "i=0; while [ $i -lt 50 ]; do echo \"noise line $i\" >&2; i=$((i+1)); done\necho 'Error: the last line explains' >&2\nexit 1\n"
	ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ws.Plan(t.Context(), "tfplan")
	if runner.ReasonOf(err) != runner.TerraformPlanFailed || !strings.Contains(err.Error(), "the last line explains") || strings.Contains(err.Error(), "noise line 3\n") || !strings.Contains(err.Error(), "lines omitted") {
		t.Errorf("plan error: %v", err)
	}
}

func TestNewNeedsABinary(t *testing.T) {
	if _, err := New(t.TempDir(), Options{}); runner.ReasonOf(err) != runner.TerraformNotFound {
		t.Errorf("no binary: %v", err)
	}
	// A binary that vanished after it was looked up fails the first
	// command; that is a failure to run, not an interruption.
	ws, err := New(t.TempDir(), Options{ExecPath: filepath.Join(t.TempDir(), "missing")})
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Init(t.Context(), nil); runner.ReasonOf(err) != runner.TerraformInitFailed {
		t.Errorf("missing binary: %v", err)
	}
}
