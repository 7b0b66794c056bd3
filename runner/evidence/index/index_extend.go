package index

import (
	"context"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// extend brings ix to repo's head: the commits new since ix.head are
// checked like verify checks every commit, the contract directories whose
// trees changed are read again with the chain reader (files already
// verified are not checked again), and the repo-wide rules (no event id
// twice, no event a commit added missing) are applied to what is new.
func (ix *Index) extend(ctx context.Context, repo *chain.Repo, opts IndexOptions) (*Index, error) {
	fresh, err := chain.CheckNewCommits(ctx, repo, opts.Verify, ix.hasCommit)
	if err != nil {
		return nil, err
	}
	if !fresh.Seen[ix.head] && !ix.head.IsZero() {
		head := "(none)"
		if h := repo.HeadHash(); !h.IsZero() {
			head = short(h)
		}
		return nil, runner.Errorf(runner.EvidenceHistoryRewritten,
			"the evidence repo's head %s does not contain %s, which this machine's index verified: the history was rewritten; after investigating, accept the new history with --reindex",
			head, short(ix.head))
	}
	next := &Index{head: repo.HeadHash(), global: slices.Clone(ix.global), commits: slices.Clone(ix.commits)}
	for _, c := range fresh.Commits {
		next.commits = append(next.commits, c.Hash)
	}
	slices.SortFunc(next.commits, compareHash)

	r := repo.NewReader()
	dirs, layout, err := chain.ContractDirs(r, repo.HeadHash())
	if err != nil {
		return nil, err
	}
	next.global = append(next.global, layout...)
	byDir := map[string]*indexedDir{}
	var changed []*indexedDir
	for _, de := range dirs {
		d := &indexedDir{name: de.Name, tree: de.Hash}
		if old := ix.dir(de.Name); old != nil {
			d.commitFindings = slices.Clone(old.commitFindings)
			if old.tree == de.Hash {
				d.chainFindings, d.events = old.chainFindings, old.events
			}
		}
		if ix.dir(de.Name) == nil || ix.dir(de.Name).tree != de.Hash {
			changed = append(changed, d)
		}
		byDir[de.Name] = d
		next.dirs = append(next.dirs, d)
	}
	for _, f := range fresh.Findings {
		next.file(byDir, f)
	}
	present := map[string]bool{}
	for _, d := range changed {
		old := ix.dir(d.name)
		files, layout, err := readChain(r, d.name, d.tree, old, opts.Verify)
		if err != nil {
			return nil, err
		}
		_, linked := chain.LinkChain(d.name, files)
		d.chainFindings = append(layout, linked...)
		for _, f := range files {
			present[f.Path] = true
		}
		if len(d.chainFindings)+len(d.commitFindings) > 0 {
			continue
		}
		byFile := map[[2]plumbing.Hash]*IndexedEvent{}
		if old != nil {
			for i := range old.events {
				e := &old.events[i]
				byFile[[2]plumbing.Hash{e.blob, e.sig}] = e
			}
		}
		d.events = indexedEvents(files, fresh.AddedBy, byFile, opts.Facets)
	}
	// What verify finds across the repo, for the new additions: a second
	// addition of an indexed file, an addition the head lacks.
	for p, h := range fresh.AddedBy {
		dir, seq, typ := chain.SplitEventPath(p)
		old := ix.dir(dir)
		f := chain.Finding{Reason: runner.EvidenceCommitInvalid, Path: p, Commit: h.String(), Message: "event file added again"}
		if old == nil || !hasEvent(old, seq, typ) {
			if present[p] {
				continue
			}
			f = chain.Finding{Reason: runner.EvidenceChainBroken, Path: p, Commit: h.String(), Message: "event recorded by this commit is missing at the head"}
		}
		next.file(byDir, f)
	}
	next.checkDuplicates(changed, ix)
	next.flatten()
	next.Added = len(next.events) - len(ix.events)
	return next, nil
}

// readChain reads a changed contract directory's files, checking only
// those the old index does not hold, and returns them with the findings
// about entries outside the layout.
func readChain(r *gitrepo.Reader, name string, tree plumbing.Hash, old *indexedDir, opts chain.VerifyOptions) ([]*chain.File, []chain.Finding, error) {
	entries, err := chain.ContractFiles(r, tree)
	if err != nil {
		return nil, nil, err
	}
	files, layout := chain.ListChain(name, entries)
	known := map[[2]plumbing.Hash]chain.Check{}
	if old != nil {
		// An indexed chain verified, so each event's link is the sum of
		// the file before it.
		prev := ""
		for _, e := range old.events {
			sum := hex.EncodeToString(e.sum[:])
			known[[2]plumbing.Hash{e.blob, e.sig}] = chain.Check{Sum: sum, Event: runner.Event{
				ID: e.ID, Type: e.Type, ContractID: e.ContractID, Environment: e.Environment, RunID: e.RunID,
				Seq: e.Seq, Time: e.Time, PrevEventHash: prev,
			}}
			prev = sum
		}
	}
	for _, f := range files {
		check, ok := known[[2]plumbing.Hash{f.Blob, f.Sig}]
		if !ok {
			body, err := r.Blob(f.Blob)
			if err != nil {
				return nil, nil, err
			}
			var sig []byte
			if f.HasSig {
				if sig, err = r.Blob(f.Sig); err != nil {
					return nil, nil, err
				}
			}
			check = chain.CheckFile(body, sig, f.HasSig, opts.EventKeys)
		}
		f.Apply(check)
	}
	return files, layout, nil
}

// treesMatch reports whether every contract directory at repo's head has
// the tree the index was built from: the index holds what the signed data
// holds, or it is not used.
func (ix *Index) treesMatch(repo *chain.Repo) (bool, error) {
	dirs, _, err := chain.ContractDirs(repo.NewReader(), repo.HeadHash())
	if err != nil {
		return false, err
	}
	if len(dirs) != len(ix.dirs) {
		return false, nil
	}
	for i, d := range dirs {
		if ix.dirs[i].name != d.Name || ix.dirs[i].tree != d.Hash {
			return false, nil
		}
	}
	return true, nil
}

// checkDuplicates applies verify's "no event id twice" to the events of
// the changed directories that old did not hold.
func (ix *Index) checkDuplicates(changed []*indexedDir, old *Index) {
	known := make(map[[2]plumbing.Hash]bool, len(old.events))
	ids := make(map[string]string, len(old.events))
	for i := range old.events {
		e := &old.events[i]
		known[[2]plumbing.Hash{e.blob, e.sig}] = true
		ids[e.ID] = e.Path()
	}
	for _, d := range changed {
		for i := range d.events {
			e := &d.events[i]
			if known[[2]plumbing.Hash{e.blob, e.sig}] {
				continue
			}
			if prev, dup := ids[e.ID]; dup && prev != e.Path() {
				d.chainFindings = append(d.chainFindings, chain.Finding{Reason: runner.EvidenceEventDuplicate, Path: e.Path(), Message: "event id " + e.ID + " also in " + prev})
				continue
			}
			ids[e.ID] = e.Path()
		}
	}
}

// checkWitness adds a finding for every witnessed head the history no
// longer holds (a force-push), as verify --witness does.
func (ix *Index) checkWitness(heads []string) {
	ix.witness = nil
	for _, h := range heads {
		if !plumbing.IsHash(h) || !ix.hasCommit(plumbing.NewHash(h)) {
			ix.witness = append(ix.witness, chain.Finding{Reason: runner.EvidenceHistoryRewritten, Commit: h, Message: "a head this machine pushed is no longer in the history (force-push)"})
		}
	}
}

func (ix *Index) hasCommit(h plumbing.Hash) bool {
	_, ok := slices.BinarySearchFunc(ix.commits, h, compareHash)
	return ok
}

func (ix *Index) dir(name string) *indexedDir {
	i, ok := slices.BinarySearchFunc(ix.dirs, name, func(d *indexedDir, n string) int { return strings.Compare(d.name, n) })
	if !ok {
		return nil
	}
	return ix.dirs[i]
}

// flatten lays every directory's events end to end and drops those of
// directories with findings: only whole verified chains are answered from.
func (ix *Index) flatten() {
	slices.SortFunc(ix.dirs, func(a, b *indexedDir) int { return strings.Compare(a.name, b.name) })
	// Sorted as verify sorts them, so Check names the finding verify
	// would list first, however the index was made.
	chain.SortFindings(ix.global)
	n := 0
	for _, d := range ix.dirs {
		chain.SortFindings(d.commitFindings)
		chain.SortFindings(d.chainFindings)
		if len(d.commitFindings)+len(d.chainFindings) > 0 {
			d.events = nil
		}
		n += len(d.events)
	}
	ix.events = make([]IndexedEvent, 0, n)
	for _, d := range ix.dirs {
		ix.events = append(ix.events, d.events...)
		d.events = ix.events[len(ix.events)-len(d.events):]
	}
}

func hasEvent(d *indexedDir, seq int64, typ string) bool {
	i, ok := slices.BinarySearchFunc(d.events, seq, func(e IndexedEvent, s int64) int {
		switch {
		case e.Seq < s:
			return -1
		case e.Seq > s:
			return 1
		}
		return 0
	})
	return ok && d.events[i].Type == typ
}

// findingDir is the contract directory a finding is about, if any.
func findingDir(f chain.Finding) (string, bool) {
	dir, _, ok := chain.SplitContractPath(f.Path)
	return dir, ok && chain.ValidDir(dir)
}

func compareHash(a, b plumbing.Hash) int { return strings.Compare(string(a[:]), string(b[:])) }

func short(h plumbing.Hash) string { return h.String()[:12] }

// errIndexFormat marks a stored index that cannot be read: rebuilt.
var errIndexFormat = errors.New("not a Nova evidence index")

// save writes the index atomically: a concurrent query reads the old file
// or the new one, never half of one.
func (ix *Index) save(path string) error { return writeFileAtomic(path, ix.encode()) }

// writeFileAtomic replaces path with b: a reader sees the old file or the
// new one.
func writeFileAtomic(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(b)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

func loadIndex(path string) (*Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeIndex(b)
}
