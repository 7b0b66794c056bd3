package main

import (
	"errors"
	"flag"

	"github.com/nova-platform/nova/runner"
)

// Exit codes: the one table from outcome to process status. A verdict and
// a tool error differ here so that a workflow can tell "the change is not
// acceptable" from "Nova could not decide" without parsing output.
const (
	ExitPass             = 0
	ExitFail             = 1
	ExitError            = 2
	ExitAwaitingApproval = 3
)

var exitCodes = map[runner.Verdict]int{
	runner.Pass:             ExitPass,
	runner.Fail:             ExitFail,
	runner.Errored:          ExitError,
	runner.AwaitingApproval: ExitAwaitingApproval,
}

// verdictError ends nova with the exit code of a verdict that was reached
// and already reported (a run, a policy evaluation, a verification).
type verdictError struct {
	verdict runner.Verdict
	reason  runner.Reason
}

func (e *verdictError) Error() string {
	if e.reason != "" {
		return string(e.verdict) + ": " + string(e.reason)
	}
	return string(e.verdict)
}

// verdict returns nil for a pass and a verdictError otherwise.
func verdict(v runner.Verdict, reason runner.Reason) error {
	if v == runner.Pass {
		return nil
	}
	return &verdictError{verdict: v, reason: reason}
}

// Errors of the command line itself.
var (
	errNoCommand      = errors.New("no command")
	errUnknownCommand = errors.New("unknown command")
)

// exitCode maps how nova ended to its exit status; it is the only place
// that chooses one. Anything that is not a verdict — a configuration
// error, a tool that could not run, a bug — is "could not decide", never
// success.
func exitCode(err error) int {
	var v *verdictError
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return ExitPass
	case errors.As(err, &v):
		if code, ok := exitCodes[v.verdict]; ok {
			return code
		}
	}
	return ExitError
}
