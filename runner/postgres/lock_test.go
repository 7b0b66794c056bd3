package postgres

import (
	"bufio"
	"database/sql"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/postgres/pgtest"
)

func holder(run string) runner.LockHolder {
	return runner.LockHolder{RunID: run, PID: 4242, Host: "runner-7"}
}

// TestLockAgainstARealPostgreSQL runs every case against one throwaway
// cluster: a runner is a connection, so two Locks are two runners.
func TestLockAgainstARealPostgreSQL(t *testing.T) {
	pg := pgtest.Start(t)
	password, _ := mustURL(t, pg.URL).User.Password()
	lock := func(t *testing.T) *Lock {
		l, err := BackendLock([]string{"conn_str=" + pg.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}

	t.Run("a second runner is refused, naming the first", func(t *testing.T) {
		release, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-a")})
		if err != nil {
			t.Fatal(err)
		}
		_, err = lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b")})
		if runner.ReasonOf(err) != runner.StateLocked {
			t.Fatalf("second runner: %v, want %s", err, runner.StateLocked)
		}
		for _, want := range []string{"run-a", "pid 4242", "runner-7", "c-1/dev"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not name %q", err, want)
			}
		}
		other, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-1/prod", Holder: holder("run-b")})
		if err != nil {
			t.Fatalf("another environment: %v", err)
		}
		_ = other()
		if err := release(); err != nil {
			t.Fatal(err)
		}
		again, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-b")})
		if err != nil {
			t.Fatalf("after release: %v", err)
		}
		_ = again()
	})

	t.Run("a runner given a wait gets the lock when the holder lets go", func(t *testing.T) {
		release, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-2/dev", Holder: holder("run-a")})
		if err != nil {
			t.Fatal(err)
		}
		waiting := make(chan string, 1)
		got := make(chan error, 1)
		go func() {
			r, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-2/dev", Holder: holder("run-b"), Wait: time.Hour,
				Waiting: func(h string) { waiting <- h }})
			if err == nil {
				err = r()
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
			t.Fatalf("waiting runner: %v", err)
		}
	})

	t.Run("the wait ends with STATE_LOCKED", func(t *testing.T) {
		release, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-3/dev", Holder: holder("run-a")})
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		_, err = lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-3/dev", Holder: holder("run-b"), Wait: 10 * time.Millisecond})
		if runner.ReasonOf(err) != runner.StateLocked || !strings.Contains(err.Error(), "after waiting") || !strings.Contains(err.Error(), "run-a") {
			t.Fatalf("err = %v", err)
		}
	})

	t.Run("a killed runner leaves no lock", func(t *testing.T) {
		cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestLockHelperProcess$")
		cmd.Env = append(os.Environ(), "NOVA_PG_LOCK_HELPER="+pg.URL)
		stdout, _ := cmd.StdoutPipe()
		stdin, _ := cmd.StdinPipe()
		defer stdin.Close()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(stdout)
		for sc.Scan() && sc.Text() != "locked" {
		}
		if _, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-4/dev", Holder: holder("run-b")}); runner.ReasonOf(err) != runner.StateLocked || !strings.Contains(err.Error(), "helper-run") {
			t.Fatalf("while the helper holds it: %v", err)
		}
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		// The server notices the dead session when its socket closes; a
		// runner given a wait takes the lock then.
		release, err := lock(t).Lock(t.Context(), runner.LockRequest{Key: "c-4/dev", Holder: holder("run-b"), Wait: time.Minute})
		if err != nil {
			t.Fatalf("after the holder was killed: %v", err)
		}
		_ = release()
	})

	t.Run("inits of one database take turns", func(t *testing.T) {
		db, err := sql.Open("postgres", pg.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		var inside atomic.Bool
		err = lock(t).SerializeInit(t.Context(), func() error {
			inside.Store(true)
			var free bool
			if err := db.QueryRowContext(t.Context(), `SELECT pg_try_advisory_lock($1, $2)`, classID, initKey).Scan(&free); err != nil {
				return err
			}
			if free {
				t.Error("another session could take the init lock during an init")
			}
			return nil
		})
		if err != nil || !inside.Load() {
			t.Fatalf("SerializeInit: %v (ran init: %v)", err, inside.Load())
		}
	})

	t.Run("errors never show the password", func(t *testing.T) {
		u := mustURL(t, pg.URL)
		u.Host = "127.0.0.1:1" // nothing listens there
		l, err := BackendLock(nil, map[string]string{"PG_CONN_STR": u.String()})
		if err != nil {
			t.Fatal(err)
		}
		_, err = l.Lock(t.Context(), runner.LockRequest{Key: "c-5/dev", Holder: holder("run-a")})
		if runner.ReasonOf(err) != runner.StateLockFailed || strings.Contains(err.Error(), password) {
			t.Fatalf("unreachable database: %v", err)
		}
		if s := l.String() + l.GoString(); strings.Contains(s, password) {
			t.Errorf("the lock prints its password: %s", s)
		}
	})
}

func TestBackendLockNeedsAConnectionString(t *testing.T) {
	if _, err := BackendLock([]string{"schema_name=s"}, nil); runner.ReasonOf(err) != runner.BackendConfigInvalid {
		t.Errorf("no conn_str: %v", err)
	}
	l, err := BackendLock([]string{"conn_str=postgres://a:secret@db/x"}, map[string]string{"PG_CONN_STR": "postgres://b@other/y"})
	if err != nil || l.where() != "db/x" {
		t.Errorf("conn_str wins over PG_CONN_STR: %v %v", l, err)
	}
}

func TestApplicationNameRoundTrips(t *testing.T) {
	h := runner.LockHolder{RunID: "20261130T100000Z-0a1b2c3d", PID: 123456, Host: "ci-runner-7"}
	got, ok := parseApplicationName(applicationName(h))
	if !ok || got != h {
		t.Errorf("round trip: %+v %v", got, ok)
	}
	long := runner.LockHolder{RunID: "r", PID: 1, Host: strings.Repeat("h", 100)}
	if n := len(applicationName(long)); n > 63 {
		t.Errorf("application_name of %d bytes; PostgreSQL keeps 63", n)
	}
}

// TestLockHelperProcess is the runner that "a killed runner leaves no
// lock" kills: it takes the lock, says so, and waits.
func TestLockHelperProcess(t *testing.T) {
	conn := os.Getenv("NOVA_PG_LOCK_HELPER")
	if conn == "" {
		return // run directly: nothing to hold
	}
	l, err := BackendLock([]string{"conn_str=" + conn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Lock(t.Context(), runner.LockRequest{Key: "c-4/dev", Holder: holder("helper-run")}); err != nil {
		t.Fatal(err)
	}
	os.Stdout.WriteString("locked\n")
	_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return u
}

// BenchmarkLock is what a run pays for the cross-runner lock: connect,
// name the session, take and release an uncontended advisory lock.
func BenchmarkLock(b *testing.B) {
	pg := pgtest.Start(b)
	l, err := BackendLock([]string{"conn_str=" + pg.URL}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		release, err := l.Lock(b.Context(), runner.LockRequest{Key: "c-1/dev", Holder: holder("run-a")})
		if err != nil {
			b.Fatal(err)
		}
		_ = release()
	}
}
