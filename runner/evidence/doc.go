// Package evidence mirrors Nova's events into an evidence repo: a git
// repository, separate from the consumer's, in which every event is one
// signed commit adding contracts/<contractId>/<seq>-<type>.json and its
// detached cosign-format signature (.sig).
//
// It holds the three parts of the audit trail that must agree with each
// other: the Store (a runner.Recorder that writes an event to a local outbox
// before acknowledging it, then pushes it as a signed commit, re-chaining on
// conflicts), Verify (which an auditor runs over the repo and which names
// every break with a reason code), and the Reader (the queries the approval
// gate makes: approvals, the approved plan digest, unresolved indeterminate
// applies).
//
// Events are signed with ECDSA P-256 over their canonical bytes so that
// `cosign verify-blob` accepts them without Nova, and commits are signed
// with OpenPGP so that `git verify-commit`, GitHub and Gitea accept them.
package evidence
