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
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
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
