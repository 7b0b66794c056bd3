// Package evidence mirrors Nova's events into an evidence repo: a git
// repository, separate from the consumer's, in which every event is one
// signed commit adding contracts/<shard>/<contractId>/<seq/100>xx/<seq>-<type>.json
// and its detached cosign-format signature (.sig).
//
// The Store is a runner.Recorder that writes an event to a local outbox
// before acknowledging it, then pushes it as a signed commit, re-chaining
// on conflicts; it is also the runner.EvidenceReader the gate decides
// from, returning only whole verified chains. It reads a contract's chain
// with runner/evidence/chain, which also holds Verify, what an auditor runs
// over the repo, so the store refuses exactly what Verify reports. The
// audit index is runner/evidence/index, keys live in
// runner/evidence/signing, git mechanics in runner/evidence/gitrepo.
package evidence
