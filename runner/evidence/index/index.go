// Package index is the verified catalogue of an evidence repo that `nova
// evidence query`, `export` and `report` answer from: every event with the
// commit that added it, kept in the state dir and extended as the head
// moves. It reads the repo only through runner/evidence/chain.
package index

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"time"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// The index holds every event of the repo with the commit that added it,
// as the verification found them. Verifying 100 000 events costs two
// signature checks each, seconds of CPU, so the index keeps the
// verification's result and is extended, not rebuilt, when the head moves: only the new
// commits and the chains they touch are read and checked, with the same
// chain reader verify and the store use.
//
// It is a cache, never trusted over the signed data: it records the head
// it was built at, the keys it was verified with and every contract
// directory's tree. A head it does not contain is a rewritten history, as
// for the witness; other keys, another facets version, a directory tree
// that does not match the head, or a file that does not read back whole
// make it rebuild from the repo.

const indexFile = "index"

// IndexFile is the index of a store's state dir, beside the witness.
func IndexFile(stateDir string) string { return filepath.Join(stateDir, indexFile) }

// IndexOptions says what an index is verified with and keeps.
type IndexOptions struct {
	// Verify holds the keys (required) and the witness; Contract is
	// ignored, the index covers every contract.
	Verify chain.VerifyOptions
	// Facets returns what queries filter events by beyond their envelope
	// (approvers, reason codes), computed once when an event is indexed;
	// FacetsVersion names the function, and an index built by another
	// version is rebuilt.
	Facets        func(runner.Event) []string
	FacetsVersion string
	// Rebuild ignores the stored index: a full verification, as after an
	// operator accepted a rewritten history.
	Rebuild bool
}

// IndexedEvent is one verified event as the index keeps it.
type IndexedEvent struct {
	ID          string
	Type        string
	ContractID  string
	Environment string
	RunID       string
	Seq         int64
	Time        time.Time
	// Commit is the evidence commit that added the event.
	Commit plumbing.Hash
	Facets []string

	blob, sig plumbing.Hash
	sum       [32]byte // sha256 of the event file
}

// Path is the event file's path in the repo.
func (e *IndexedEvent) Path() string { return chain.EventPath(e.ContractID, e.Seq, e.Type) }

// Index is the verified catalogue of an evidence repo at one head.
type Index struct {
	head          plumbing.Hash
	keys          string
	facetsVersion string
	// commits are every commit reachable from head, sorted.
	commits []plumbing.Hash
	dirs    []*indexedDir // by name
	// global are findings about no one contract (commit signatures, files
	// outside the layout); witness those the witness adds for this use.
	global, witness []chain.Finding
	events          []IndexedEvent

	// How this index came to be: Rebuilt when every event was verified,
	// else Added events were verified on top of a stored index.
	Rebuilt bool
	Added   int
}

// indexedDir is one contract directory. Its events are kept only when its
// chain verifies; commitFindings are about the commits that wrote it and
// stay whatever the directory becomes, chainFindings about its files at
// the head.
type indexedDir struct {
	name                          string
	tree                          plumbing.Hash
	commitFindings, chainFindings []chain.Finding
	events                        []IndexedEvent
}

// Head is the commit the index describes, "" for an empty repo.
func (ix *Index) Head() string {
	if ix.head.IsZero() {
		return ""
	}
	return ix.head.String()
}

// Events returns every verified event, by contract directory then seq.
// The slice is shared.
func (ix *Index) Events() []IndexedEvent { return ix.events }

// Check returns nil when nothing is wrong with the history or the chains
// of the given contracts (of every contract when none is given), and
// otherwise the first finding as an error carrying its reason code, as
// verify would report it: an unverifiable chain is never answered with
// the part of it that verifies.
func (ix *Index) Check(contracts ...string) error {
	findings := slices.Concat(ix.global, ix.witness)
	for _, d := range ix.dirs {
		if len(contracts) == 0 || slices.ContainsFunc(contracts, func(c string) bool { return chain.Dir(c) == d.name }) {
			findings = append(findings, d.commitFindings...)
			findings = append(findings, d.chainFindings...)
		}
	}
	if len(findings) == 0 {
		return nil
	}
	f := findings[0]
	where := f.Path
	if where == "" {
		where = "commit " + f.Commit
	} else if f.Commit != "" {
		where += " (commit " + f.Commit + ")"
	}
	more := ""
	if len(findings) > 1 {
		more = fmt.Sprintf(" and %d more finding(s)", len(findings)-1)
	}
	return runner.Errorf(f.Reason, "the evidence repo does not verify: %s: %s%s; `nova evidence verify` lists them", where, f.Message, more)
}

// Read returns the whole event e from repo, refusing bytes other than
// those that were verified.
func (ix *Index) Read(r *gitrepo.Reader, e *IndexedEvent) (runner.Event, error) {
	body, err := r.Blob(e.blob)
	if err != nil {
		return runner.Event{}, err
	}
	if sha256.Sum256(body) != e.sum {
		return runner.Event{}, runner.Errorf(runner.EvidenceSignatureInvalid, "%s: the repo's bytes are not the ones verified", e.Path())
	}
	var ev runner.Event
	if err := json.Unmarshal(body, &ev); err != nil {
		return runner.Event{}, runner.Errorf(runner.EvidenceLayoutInvalid, "%s: %w", e.Path(), err)
	}
	return ev, nil
}

// UpdateIndex returns the index of repo at its head, from the index stored
// at path: as it is when the head has not moved, extended by what is new
// when it has, rebuilt by a full verification when there is none (or it
// cannot be trusted). The result is stored back at path. Problems with the
// repo are findings (see Check), not errors; the error is for failing to
// read the repo or to store the index, and for a head that does not
// contain the indexed one (EVIDENCE_HISTORY_REWRITTEN): the history this
// machine verified was rewritten, and only an operator who accepted that
// may rebuild (Rebuild).
func UpdateIndex(ctx context.Context, repo *chain.Repo, path string, opts IndexOptions) (*Index, error) {
	v := opts.Verify
	if v.EventKeys == nil || v.CommitKeys == nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "the index needs the event public key(s) and the allowed commit key(s)")
	}
	if opts.Facets == nil {
		opts.Facets = func(runner.Event) []string { return nil }
	}
	keys := v.EventKeys.Fingerprint() + "+" + v.CommitKeys.Fingerprint()
	var old *Index
	if !opts.Rebuild {
		// A missing, torn or foreign file is only a cache miss.
		old, _ = loadIndex(path)
	}
	if old != nil && (old.keys != keys || old.facetsVersion != opts.FacetsVersion) {
		old = nil
	}
	var ix *Index
	var err error
	switch {
	case old == nil:
		ix, err = buildIndex(ctx, repo, opts)
	case old.head == repo.HeadHash():
		ix = old
		if ok, err := ix.treesMatch(repo); err != nil {
			return nil, err
		} else if !ok {
			ix, err = buildIndex(ctx, repo, opts)
			if err != nil {
				return nil, err
			}
		}
	default:
		ix, err = old.extend(ctx, repo, opts)
	}
	if err != nil {
		return nil, err
	}
	ix.keys, ix.facetsVersion = keys, opts.FacetsVersion
	if ix != old || ix.Rebuilt {
		if err := ix.save(path); err != nil {
			return nil, runner.Errorf(runner.ConfigInvalid, "storing the evidence index: %w", err)
		}
	}
	ix.checkWitness(v.Witness)
	return ix, nil
}

// buildIndex verifies the whole repo as Verify does and keeps what it read.
func buildIndex(ctx context.Context, repo *chain.Repo, opts IndexOptions) (*Index, error) {
	v, err := chain.VerifyAll(ctx, repo, opts.Verify)
	if err != nil {
		return nil, err
	}
	ix := &Index{head: repo.HeadHash(), Rebuilt: true}
	for h := range v.Reachable {
		ix.commits = append(ix.commits, h)
	}
	slices.SortFunc(ix.commits, compareHash)
	byDir := map[string]*indexedDir{}
	for _, name := range slices.Sorted(maps.Keys(v.DirTrees)) {
		d := &indexedDir{name: name, tree: v.DirTrees[name]}
		byDir[name] = d
		ix.dirs = append(ix.dirs, d)
	}
	for _, f := range v.Report.Findings {
		ix.file(byDir, f)
	}
	for _, d := range ix.dirs {
		if len(d.commitFindings)+len(d.chainFindings) == 0 {
			d.events = indexedEvents(v.Chains[d.name], v.AddedBy, nil, opts.Facets)
		}
	}
	ix.flatten()
	ix.Added = len(ix.events)
	return ix, nil
}

// file files a finding under its contract directory, or with the global
// ones when it concerns none present. Commit findings stay with the
// directory for good — the commits stay in its history — while chain
// findings are about its files at the head and are read again when the
// directory changes.
func (ix *Index) file(dirs map[string]*indexedDir, f chain.Finding) {
	name, ok := findingDir(f)
	d := dirs[name]
	switch {
	case !ok || d == nil:
		ix.global = append(ix.global, f)
	case f.Reason == runner.EvidenceCommitInvalid:
		d.commitFindings = append(d.commitFindings, f)
	default:
		d.chainFindings = append(d.chainFindings, f)
	}
}

// indexedEvents turns a verified chain's files into index entries: those
// the old index held (by blob and signature) are carried over, the rest
// decoded and given their facets.
func indexedEvents(files []*chain.File, addedBy map[string]plumbing.Hash, old map[[2]plumbing.Hash]*IndexedEvent, facets func(runner.Event) []string) []IndexedEvent {
	out := make([]IndexedEvent, 0, len(files))
	for _, f := range files {
		if o, ok := old[[2]plumbing.Hash{f.Blob, f.Sig}]; ok {
			out = append(out, *o)
			continue
		}
		e := f.Event
		ie := IndexedEvent{
			ID: e.ID, Type: e.Type, ContractID: e.ContractID, Environment: e.Environment, RunID: e.RunID,
			Seq: e.Seq, Time: e.Time.UTC(), Commit: addedBy[f.Path], Facets: facets(e), blob: f.Blob, sig: f.Sig,
		}
		if sum, err := hex.DecodeString(f.Sum); err == nil {
			copy(ie.sum[:], sum)
		}
		out = append(out, ie)
	}
	return out
}
