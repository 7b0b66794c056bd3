package terraform

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

// scripted writes a terraform stand-in: it answers the version probe
// before a workspace's first command, and does what body says for the
// command under test. The real binary is exercised end to end in
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

// TestExecExplainsTerraformsDiagnostics: plan and apply run with -json, and
// a failure is explained and classified from terraform's structured
// diagnostic — who holds the state lock, a stale plan — not only "exit
// status 1".
func TestExecExplainsTerraformsDiagnostics(t *testing.T) {
	locked := `{"@level":"error","@message":"Error: Error acquiring the state lock","@module":"terraform.ui","type":"diagnostic","diagnostic":{"severity":"error","summary":"Error acquiring the state lock","detail":"Error message: resource temporarily unavailable\nLock Info:\n  ID:        4b1c2d3e-5f60-7182-93a4-b5c6d7e8f901\n  Path:      /state/terraform.tfstate\n  Operation: OperationTypeApply\n  Who:       runner@ci-7\n  Version:   1.11.4\n  Created:   2026-11-30 10:00:00.000000000 +0000 UTC\n  Info:      \n\nTerraform acquires a state lock to protect the state from being written\nby multiple users at the same time."}}`
	stale := `{"@level":"error","@message":"Error: Saved plan is stale","@module":"terraform.ui","type":"diagnostic","diagnostic":{"severity":"error","summary":"Saved plan is stale","detail":"The given plan file can no longer be applied because the state was changed by another operation after the plan was created."}}`
	other := `{"@level":"error","@message":"Error: Unsupported argument","@module":"terraform.ui","type":"diagnostic","diagnostic":{"severity":"error","summary":"Unsupported argument","detail":"An argument named \"colour\" is not expected here."}}`
	tests := []struct {
		name     string
		line     string
		want     runner.Reason
		mentions []string
	}{
		{"state locked", locked, runner.StateLocked, []string{"runner@ci-7", "OperationTypeApply", "4b1c2d3e-5f60-7182-93a4-b5c6d7e8f901"}},
		{"stale plan", stale, runner.PlanStale, []string{"state was changed by another operation"}},
		{"anything else keeps its reason and says why", other, runner.TerraformApplyFailed, []string{"Unsupported argument", "colour"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var log strings.Builder
			body := "cat <<'EOF'\n" + `{"@level":"info","@message":"Terraform 1.11.4","type":"version"}` + "\n" + tt.line + "\nEOF\nexit 1\n"
			ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}, Log: &log})
			if err != nil {
				t.Fatal(err)
			}
			err = ws.Apply(t.Context(), "tfplan")
			if runner.ReasonOf(err) != tt.want {
				t.Fatalf("apply: %v (%s), want %s", err, runner.ReasonOf(err), tt.want)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			// The log reads as terraform's own output, not as JSON.
			if !strings.Contains(log.String(), "Terraform 1.11.4\n") || strings.Contains(log.String(), `"@level"`) {
				t.Errorf("log:\n%s", log.String())
			}
		})
	}
}

// TestTimeoutInterruptsAHangingTerraform: a terraform that never ends is
// interrupted after Options.Timeout and reported as timed out — not as
// cancelled by the user, not as a failure of the configuration.
func TestTimeoutInterruptsAHangingTerraform(t *testing.T) {
	// A named pipe nobody writes to: terraform blocks on it until the
	// interrupt arrives, with no sleep standing in for "a long time".
	fifo := filepath.Join(t.TempDir(), "never")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, "read line < "+fifo+"\n"), Env: map[string]string{"PATH": os.Getenv("PATH")}, Timeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	for name, run := range map[string]func() error{
		"apply": func() error { return ws.Apply(t.Context(), "tfplan") },
		"plan":  func() error { _, err := ws.Plan(t.Context(), "tfplan"); return err },
		"init":  func() error { return ws.Init(t.Context(), nil) },
		"show":  func() error { _, err := ws.ShowPlan(t.Context(), "tfplan"); return err },
	} {
		err := run()
		if runner.ReasonOf(err) != runner.TerraformTimeout || !strings.Contains(err.Error(), "timed out after 50ms") {
			t.Errorf("%s: %v (%s), want %s", name, err, runner.ReasonOf(err), runner.TerraformTimeout)
		}
	}
	// The caller's own cancellation stays an interruption.
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ws.Apply(ctx, "tfplan"); runner.ReasonOf(err) != runner.TerraformInterrupted {
		t.Errorf("cancelled apply: %v", err)
	}
}

// TestCancellationInterruptsAndWaits: cancelling a command sends terraform
// SIGINT and waits for it to finish what it does on an interrupt — release
// its state lock — rather than killing it; the command is then
// interrupted, never failed.
func TestCancellationInterruptsAndWaits(t *testing.T) {
	dir := t.TempDir()
	started, released := filepath.Join(dir, "started"), filepath.Join(dir, "released")
	if err := syscall.Mkfifo(started, 0o600); err != nil {
		t.Fatal(err)
	}
	body := `trap 'echo released > ` + released + `; kill $pid; exit 1' INT
sleep 600 >/dev/null 2>&1 &
pid=$!
echo started > ` + started + `
wait $pid
`
	ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	go func() {
		// Opening the fifo waits for terraform to be running.
		if b, err := os.ReadFile(started); err == nil && len(b) > 0 {
			cancel()
		}
	}()
	err = ws.Apply(ctx, "tfplan")
	if runner.ReasonOf(err) != runner.TerraformInterrupted {
		t.Errorf("apply: %v (%s), want %s", err, runner.ReasonOf(err), runner.TerraformInterrupted)
	}
	if b, err := os.ReadFile(released); err != nil || string(b) != "released\n" {
		t.Errorf("terraform did not finish its interrupt: %q, %v", b, err)
	}
}

// panicky is an error whose Error method panics, as terraform-exec's does
// for a command whose context ended as it started.
type panicky struct{}

func (panicky) Error() string        { var e error; return e.Error() }
func (panicky) Is(target error) bool { return target == context.Canceled }
func (panicky) Unwrap() error        { return nil }

// TestWrapSurvivesAnErrorThatCannotSayWhat: such an error is an
// interruption, reported as one, not a crash of nova.
func TestWrapSurvivesAnErrorThatCannotSayWhat(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	err := wrap(ctx, runner.TerraformApplyFailed, "terraform apply", panicky{})
	if runner.ReasonOf(err) != runner.TerraformInterrupted || !strings.Contains(err.Error(), "terraform apply interrupted") {
		t.Errorf("wrap: %v (%s), want %s", err, runner.ReasonOf(err), runner.TerraformInterrupted)
	}
}

// TestShowRefusesAPlanTooLargeToRead: a plan whose JSON is past the bound
// is refused, whatever terraform-exec managed to decode of it.
func TestShowRefusesAPlanTooLargeToRead(t *testing.T) {
	// 64 KiB of plan JSON, read with a bound of 4 KiB.
	body := `printf '{"format_version":"1.2","terraform_version":"1.11.4","resource_changes":['
i=0; while [ $i -lt 1000 ]; do printf '{"address":"terraform_data.r%04d","type":"terraform_data","name":"r","change":{"actions":["create"]}},' $i; i=$((i+1)); done
printf '{"address":"last","change":{"actions":["create"]}}]}\n'
`
	ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}, MaxPlanJSON: 4 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ws.ShowPlan(t.Context(), "tfplan"); runner.ReasonOf(err) != runner.PlanTooLarge {
		t.Fatalf("show of a large plan: %v (%s), want %s", err, runner.ReasonOf(err), runner.PlanTooLarge)
	}
	ws, err = New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	p, err := ws.ShowPlan(t.Context(), "tfplan")
	if err != nil || len(p.ResourceChanges) != 1001 {
		t.Fatalf("show within the default bound: %v, %d changes", err, len(p.ResourceChanges))
	}
}

// TestPgLockErrorNamesNoFalseHolder: the pg backend's lock info describes
// the run that asked; repeating it as the holder would send the operator
// after their own run.
func TestPgLockErrorNamesNoFalseHolder(t *testing.T) {
	line := `{"@level":"error","@message":"Error: Error acquiring the state lock","type":"diagnostic","diagnostic":{"severity":"error","summary":"Error acquiring the state lock","detail":"Error message: Workspace is already locked: default\nLock Info:\n  ID:        fa6393a3-2405-e3cd-7fc4-8e9d72fdf749\n  Path:      \n  Operation: OperationTypePlan\n  Who:       me@this-runner\n  Version:   1.11.4\n  Created:   2026-11-30 11:06:27 +0000 UTC\n  Info:      \n"}}`
	body := "cat <<'EOF'\n" + line + "\nEOF\nexit 1\n"
	ws, err := New(t.TempDir(), Options{ExecPath: scripted(t, body), Env: map[string]string{"PATH": os.Getenv("PATH")}, Backend: "pg"})
	if err != nil {
		t.Fatal(err)
	}
	_, err = ws.Plan(t.Context(), "tfplan")
	if runner.ReasonOf(err) != runner.StateLocked || strings.Contains(err.Error(), "me@this-runner") || !strings.Contains(err.Error(), "Workspace is already locked") {
		t.Errorf("plan: %v (%s)", err, runner.ReasonOf(err))
	}
}
