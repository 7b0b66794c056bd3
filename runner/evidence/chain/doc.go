// Package chain reads an evidence repo: its layout
// (contracts/<shard>/<contractId>/<seq/100>xx/<seq>-<type>.json and .sig),
// each contract's chain of signed events, and the verification of the
// whole history that `nova evidence verify` runs.
//
// A contract's chain is read in the same steps wherever it is read
// (ContractFiles, ListChain, CheckFile and File.Apply, LinkChain), so the
// store (runner/evidence), Verify and the audit index
// (runner/evidence/index) refuse exactly the same things, with the same
// reason codes.
package chain
