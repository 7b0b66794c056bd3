// Command nova runs Nova's pipeline over a consumer checkout: validate the
// contract, plan it with Terraform, hold it at the approval gate, apply
// exactly the plan that was approved, and record every decision as an event.
//
// It is both the CLI and the entrypoint of the container action.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"slices"
	"syscall"
)

func main() {
	// A command lives for seconds and allocates most of what it ever will
	// while compiling policy and reading plans: at Go's default (a
	// collection each time the heap doubles) a no-change run spent a fifth
	// of its own CPU collecting. After start-up a no-change run allocates
	// about 15 MB, so at 800 it seldom collects at all. The soft limit
	// keeps a large monorepo run from growing nine times its live heap
	// unchecked. A user's GOGC or GOMEMLIMIT wins.
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(800)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(1 << 30)
	}
	ctx, stop := context.Background(), func() {}
	if !printsOnly(os.Args[1:]) {
		// Catching signals starts a thread of its own, locked to its
		// goroutine: a few per cent of what `nova version` costs, for a
		// command with nothing to interrupt.
		ctx, stop = signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	}
	err := run(ctx, Env{
		Args:    os.Args[1:],
		Getenv:  os.Getenv,
		Environ: os.Environ(),
		Stdout:  os.Stdout,
		Stderr:  os.Stderr,
	})
	stop()
	os.Exit(exitCode(err))
}

// printsOnly says whether a command only prints a fixed text, which must
// start in a few milliseconds and allocates next to nothing.
func printsOnly(args []string) bool {
	return len(args) == 0 || slices.Contains([]string{"version", "--version", "help", "-h", "--help"}, args[0])
}
