// Package runner is Nova's pipeline core: the contract and target-stack
// domain types, stages and their verdicts, reason codes, events and the gate.
//
// Everything that wraps an outside dependency (Terraform, git, a forge API)
// lives in a subpackage named after it; this package only declares the narrow
// interfaces it consumes.
package runner
