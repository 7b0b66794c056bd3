// Package evidence mirrors Nova's events into an evidence repo: a git
// repository, separate from the consumer's, in which every event is one
// signed commit adding contracts/<shard>/<contractId>/<seq/100>xx/<seq>-<type>.json
// and its detached cosign-format signature (.sig).
//
// The Store is a runner.Recorder that writes an event to a local outbox
// before acknowledging it, then pushes it as a signed commit, re-chaining
// on conflicts; it is also the runner.EvidenceReader the gate decides
// from, returning only whole verified chains. Verify is what an auditor
// runs over the repo; it names every break with a reason code. Both read a
// contract's chain with the same code, so the store refuses exactly what
// Verify reports. Keys live in runner/evidence/signing, git mechanics in
// runner/evidence/gitrepo.
package evidence
