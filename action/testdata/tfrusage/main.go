// Command tfrusage stands in for terraform in BenchmarkRunNoChange: it runs
// the real binary and appends one line per command to a record file — the
// command, the CPU time terraform used and the CPU time this wrapper used,
// in microseconds — so the benchmark can subtract both from the CPU time
// of nova and its children and keep what Nova itself spent. The real
// binary and the record file are fixed at build time (-ldflags -X), since
// Nova gives terraform an environment of its own choosing.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

var terraform, record string

func main() {
	cmd := exec.Command(terraform, os.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	// Nova interrupts terraform with SIGINT; it must reach terraform.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "tfrusage:", err)
		os.Exit(127)
	}
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	ps := cmd.ProcessState
	var self syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &self)
	name := "(none)"
	if len(os.Args) > 1 {
		name = os.Args[1]
	}
	line := fmt.Sprintf("%s %d %d\n", name, (ps.UserTime() + ps.SystemTime()).Microseconds(), micros(self.Utime)+micros(self.Stime))
	// One write of a short line to a file opened for appending: lines of
	// concurrent commands never interleave.
	if f, err := os.OpenFile(record, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644); err == nil {
		_, _ = f.WriteString(line)
		_ = f.Close()
	}
	if ps.Exited() {
		os.Exit(ps.ExitCode())
	}
	os.Exit(128 + int(ps.Sys().(syscall.WaitStatus).Signal()))
}

func micros(t syscall.Timeval) int64 { return t.Sec*1e6 + t.Usec }
