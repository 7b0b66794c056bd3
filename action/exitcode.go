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

// exitSeverity orders exit codes for a command over many contracts, which
// exits with its worst contract's code: error (2) > fail (1) > awaiting
// approval (3) > pass (0). An error comes first because it means Nova
// could not decide about a contract, which might hide a failure; a failure
// is a decided "no"; awaiting approval is a decided "not yet" that nothing
// is wrong with.
var exitSeverity = map[int]int{ExitPass: 0, ExitAwaitingApproval: 1, ExitFail: 2, ExitError: 3}

// worstExit is the exit code of many outcomes: the most severe of codes,
// ExitPass for none. An unknown code counts as an error.
func worstExit(codes ...int) int {
	worst := ExitPass
	for _, c := range codes {
		if _, known := exitSeverity[c]; !known {
			c = ExitError
		}
		if exitSeverity[c] > exitSeverity[worst] {
			worst = c
		}
	}
	return worst
}

// verdictOf is the verdict an exit code stands for.
func verdictOf(code int) runner.Verdict {
	for v, c := range exitCodes {
		if c == code {
			return v
		}
	}
	return runner.Errored
}
