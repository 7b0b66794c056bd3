package main

import "github.com/nova-platform/nova/runner"

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

// exitCode maps a run's verdict to the process exit code; an unknown
// verdict is a bug and must never look like success.
func exitCode(v runner.Verdict) int {
	if code, ok := exitCodes[v]; ok {
		return code
	}
	return ExitError
}
