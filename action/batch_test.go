package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestARunPushesItsEventsInBatches: a run's events reach the evidence repo
// in batches, each one chain of signed commits (one per event) with one
// ref update and one witnessed head: everything up to the authorization
// in one push, made before terraform apply starts (a wrapper looks at the
// repo when terraform is asked to apply), and the rest of the run in one
// more, before the run lock is let go.
func TestARunPushesItsEventsInBatches(t *testing.T) {
	ctx := t.Context()
	c := newConsumer(t, helloContract("world", "dev"))
	repo := filepath.Join(c.env["HOME"], ".local", "share", "nova", "evidence.git")
	atApply := filepath.Join(t.TempDir(), "at-apply")
	wrapper := filepath.Join(t.TempDir(), "terraform")
	writeFile(t, wrapper, fmt.Sprintf(`#!/bin/sh
if [ "$1" = apply ]; then
  git --git-dir=%q log --first-parent --format=%%s refs/heads/main > %q 2>&1
fi
exec %q "$@"
`, repo, atApply, mustLookPath(t)))
	if err := os.Chmod(wrapper, 0o755); err != nil {
		t.Fatal(err)
	}
	c.extra = []string{"--terraform", wrapper}
	witness := func() int {
		t.Helper()
		files, _ := filepath.Glob(filepath.Join(c.env["HOME"], ".local", "state", "nova", "evidence", "*", "witness"))
		if len(files) != 1 {
			t.Fatalf("witness files %v, want one", files)
		}
		b, err := os.ReadFile(files[0])
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(b), "\n")
	}

	code, first, stderr := c.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("run: exit %d\n%s", code, stderr)
	}
	log, err := os.ReadFile(atApply)
	if err != nil {
		t.Fatalf("terraform apply never ran: %v", err)
	}
	if head, _, _ := strings.Cut(string(log), "\n"); !strings.HasPrefix(head, runner.EventApplyAuthorized+" ") {
		t.Fatalf("when terraform apply started the evidence branch's head was %q, want the authorization:\n%s", head, log)
	}
	events := readEvents(t, first.EventsFile)
	if n := strings.Count(string(log), "\n"); n != authorizedAt(t, events)+1 {
		t.Errorf("when terraform apply started the repo held %d events, want the %d up to the authorization", n, authorizedAt(t, events)+1)
	}
	if n := witness(); n != 2 {
		t.Errorf("the applying run pushed %d times, want 2 (through its authorization, then the rest)", n)
	}
	if n := commits(t, repo); n != len(events) {
		t.Errorf("the repo holds %d commits for the run's %d events, want one each", n, len(events))
	}

	code, second, stderr := c.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("no-change run: exit %d\n%s", code, stderr)
	}
	// It answers with the receipt of the change applied: one push.
	if n := witness(); n != 3 {
		t.Errorf("the no-change run pushed %d times, want 1", n-2)
	}
	if n, want := commits(t, repo), len(events)+len(readEvents(t, second.EventsFile)); n != want {
		t.Errorf("the repo holds %d commits after two runs of %d events in all, want one each", n, want)
	}
	env, stdout, stderr2 := evidenceEnv(t, map[string]string{"HOME": c.env["HOME"]})
	if code := evidenceCommand(ctx, []string{"verify"}, env); code != ExitPass {
		t.Fatalf("evidence verify: exit %d\n%s%s", code, stdout, stderr2)
	}
}

// authorizedAt is the index of the run's authorization among its events.
func authorizedAt(t *testing.T, events []runner.Event) int {
	t.Helper()
	for i, e := range events {
		if e.Type == runner.EventApplyAuthorized {
			return i
		}
	}
	t.Fatalf("the run recorded no %s: %v", runner.EventApplyAuthorized, eventTypes(events))
	return -1
}

func commits(t *testing.T, repo string) int {
	t.Helper()
	out, err := exec.Command("git", "--git-dir", repo, "rev-list", "--count", "refs/heads/main").CombinedOutput()
	if err != nil {
		t.Fatalf("git rev-list: %v\n%s", err, out)
	}
	var n int
	if _, err := fmt.Sscan(string(out), &n); err != nil {
		t.Fatalf("git rev-list: %q", out)
	}
	return n
}
