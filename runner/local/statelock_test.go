package local

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
)

func holder(run string) runner.LockHolder {
	return runner.LockHolder{RunID: run, PID: 4242, Host: "ci-7", Since: time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)}
}

func TestStateLockRefusesASecondRunNamingTheFirst(t *testing.T) {
	l := StateLock{Dir: t.TempDir()}
	release, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-a")})
	if err != nil {
		t.Fatal(err)
	}
	_, err = l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b")})
	if runner.ReasonOf(err) != runner.StateLocked {
		t.Fatalf("second lock: %v, want %s", err, runner.StateLocked)
	}
	for _, want := range []string{"run-a", "pid 4242", "ci-7", "c-1/dev"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
	// Another environment, another contract: their own locks.
	for _, key := range []string{"c-1/qa", "c-2/dev"} {
		r, err := l.Lock(t.Context(), runner.LockRequest{Key: key, Holder: holder("run-b")})
		if err != nil {
			t.Errorf("%s: %v", key, err)
			continue
		}
		_ = r()
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	again, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b")})
	if err != nil {
		t.Fatalf("after release: %v", err)
	}
	_ = again()
}

// TestStateLockWaitsForTheHolder: a run given --lock-timeout says whom it
// waits for, and gets the lock the moment the holder lets go.
func TestStateLockWaitsForTheHolder(t *testing.T) {
	l := StateLock{Dir: t.TempDir()}
	release, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-a")})
	if err != nil {
		t.Fatal(err)
	}
	waiting := make(chan string, 1)
	got := make(chan error, 1)
	go func() {
		r, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b"), Wait: time.Hour,
			Waiting: func(h string) { waiting <- h }})
		if err == nil {
			_ = r()
		}
		got <- err
	}()
	if h := <-waiting; !strings.Contains(h, "run-a") {
		t.Errorf("waiting for %q, want run-a", h)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("waiting lock: %v", err)
	}
}

func TestStateLockGivesUpAfterTheWait(t *testing.T) {
	l := StateLock{Dir: t.TempDir()}
	release, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-a")})
	if err != nil {
		t.Fatal(err)
	}
	defer release()
	_, err = l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b"), Wait: time.Millisecond})
	if runner.ReasonOf(err) != runner.StateLocked || !strings.Contains(err.Error(), "run-a") || !strings.Contains(err.Error(), "after waiting") {
		t.Fatalf("err = %v, want %s naming run-a after waiting", err, runner.StateLocked)
	}
}

// TestStateLockDiesWithItsHolder: a holder killed with SIGKILL (the OOM
// killer, a cancelled job) leaves no lock behind.
func TestStateLockDiesWithItsHolder(t *testing.T) {
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestStateLockHelperProcess$")
	cmd.Env = append(os.Environ(), "NOVA_LOCK_HELPER_DIR="+dir)
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(stdout)
	for sc.Scan() && sc.Text() != "locked" {
	}
	l := StateLock{Dir: dir}
	if _, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b")}); runner.ReasonOf(err) != runner.StateLocked || !strings.Contains(err.Error(), "helper-run") {
		t.Fatalf("while the helper holds it: %v", err)
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	release, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b")})
	if err != nil {
		t.Fatalf("after the holder was killed: %v", err)
	}
	_ = release()
}

// TestStateLockHelperProcess is the holder TestStateLockDiesWithItsHolder
// kills: it takes the lock, says so, and waits for its stdin to close.
func TestStateLockHelperProcess(t *testing.T) {
	dir := os.Getenv("NOVA_LOCK_HELPER_DIR")
	if dir == "" {
		return // run directly: nothing to hold
	}
	if _, err := (StateLock{Dir: dir}).Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("helper-run")}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

// BenchmarkStateLock is what a run pays for the machine's run lock: one
// take and release of an uncontended lock.
func BenchmarkStateLock(b *testing.B) {
	l := StateLock{Dir: b.TempDir()}
	for b.Loop() {
		release, err := l.Lock(b.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-a")})
		if err != nil {
			b.Fatal(err)
		}
		_ = release()
	}
}
