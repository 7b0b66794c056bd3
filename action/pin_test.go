package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestPinThenValidate: a scaffolded GitHub workflow uses the action by tag
// everywhere when nova does not know its release commit; validate warns
// about the prod and dr jobs, pin resolves the tag at a git remote and
// rewrites them, and the warning is gone.
func TestPinThenValidate(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "init", "--forge", "github", "--dir", repo, "--name", "app"); code != ExitPass {
		t.Fatalf("init: exit %d %s", code, stderr)
	}
	code, stdout, stderr := runCLI(t, "validate", "--dir", repo)
	if code != ExitPass {
		t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
	}
	if n := strings.Count(stdout, "warning "+string(runner.WorkflowActionUnpinned)); n != 10 {
		t.Errorf("validate warned %d times, want 10 (the policy, plan, apply, destroy plan and destroy steps of prod and dr):\n%s", n, stdout)
	}

	source := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = source
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "release")
	git("tag", "-a", "v1", "-m", "v1")
	commit := git("rev-parse", "HEAD")

	if code, _, stderr := runCLI(t, "pin", "--dir", repo, "--source", t.TempDir()); code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
		t.Errorf("pin against a remote without the tag: exit %d %s", code, stderr)
	}
	code, stdout, stderr = runCLI(t, "pin", "--dir", repo, "--source", source)
	if code != ExitPass || strings.Count(stdout, "pinned ") != 10 {
		t.Fatalf("pin: exit %d\n%s%s", code, stdout, stderr)
	}
	data, err := os.ReadFile(filepath.Join(repo, ".github", "workflows", "nova-app.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), "uses: nova-platform/nova@"+commit+" # v1\n"); n != 10 {
		t.Errorf("%d uses pinned to %s, want 10", n, commit)
	}
	if n := strings.Count(string(data), "uses: nova-platform/nova@v1\n"); n != 10 {
		t.Errorf("%d dev and qa uses left at the tag, want 10", n)
	}
	code, stdout, _ = runCLI(t, "validate", "--dir", repo)
	if code != ExitPass || strings.Contains(stdout, string(runner.WorkflowActionUnpinned)) {
		t.Errorf("validate after pin: exit %d\n%s", code, stdout)
	}
	if code, stdout, _ = runCLI(t, "pin", "--dir", repo, "--source", source); code != ExitPass || !strings.Contains(stdout, "nothing to pin") {
		t.Errorf("second pin: exit %d %s", code, stdout)
	}
}
