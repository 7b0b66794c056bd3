package evidence

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// extend brings ix to repo's head: the commits new since ix.head are
// checked like verify checks every commit, the contract directories whose
// trees changed are read again with the chain reader (files already
// verified are not checked again), and the repo-wide rules (no event id
// twice, no event a commit added missing) are applied to what is new.
func (ix *Index) extend(ctx context.Context, repo *Repo, opts IndexOptions) (*Index, error) {
	v := &verifier{opts: opts.Verify, addedBy: map[string]plumbing.Hash{}}
	readers, closeReaders, err := repo.readers(runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	defer closeReaders()
	v.readers = readers
	r := v.readers[0]
	fresh, sawHead, err := ix.newCommits(ctx, r, repo.head)
	if err != nil {
		return nil, err
	}
	if !sawHead && !ix.head.IsZero() {
		return nil, runner.Errorf(runner.EvidenceHistoryRewritten,
			"the evidence repo's head %s does not contain %s, which this machine's index verified: the history was rewritten; after investigating, accept the new history with --reindex",
			shortOrNone(repo.head), short(ix.head))
	}
	if err := v.checkCommits(ctx, fresh); err != nil {
		return nil, err
	}
	next := &Index{head: repo.head, global: slices.Clone(ix.global), commits: slices.Clone(ix.commits)}
	for _, c := range fresh {
		next.commits = append(next.commits, c.Hash)
	}
	slices.SortFunc(next.commits, compareHash)

	dirs, layout, err := headDirs(r, repo.head)
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
	for _, f := range v.report.Findings {
		next.file(byDir, f)
	}
	present := map[string]bool{}
	for _, d := range changed {
		old := ix.dir(d.name)
		files, layout, err := readChain(r, d.name, d.tree, old, opts.Verify)
		if err != nil {
			return nil, err
		}
		_, linked := linkChain(d.name, files)
		d.chainFindings = append(layout, linked...)
		for _, f := range files {
			present[f.path] = true
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
		d.events = indexedEvents(files, v.addedBy, byFile, opts.Facets)
	}
	// What verify finds across the repo, for the new additions: a second
	// addition of an indexed file, an addition the head lacks.
	for p, h := range v.addedBy {
		dir, seq, typ := splitEventPath(p)
		old := ix.dir(dir)
		f := Finding{Reason: runner.EvidenceCommitInvalid, Path: p, Commit: h.String(), Message: "event file added again"}
		if old == nil || !hasEvent(old, seq, typ) {
			if present[p] {
				continue
			}
			f = Finding{Reason: runner.EvidenceChainBroken, Path: p, Commit: h.String(), Message: "event recorded by this commit is missing at the head"}
		}
		next.file(byDir, f)
	}
	next.checkDuplicates(changed, ix)
	next.flatten()
	next.Added = len(next.events) - len(ix.events)
	return next, nil
}

// newCommits walks back from head to the commits the index holds and
// returns the ones it does not, newest first, and whether the walk met the
// indexed head: it meets it exactly when head's history contains it.
func (ix *Index) newCommits(ctx context.Context, r *gitrepo.Reader, head plumbing.Hash) ([]*gitrepo.Commit, bool, error) {
	fresh, seen, err := walkCommits(ctx, r, head, ix.hasCommit)
	if err != nil {
		return nil, false, err
	}
	return fresh, seen[ix.head], nil
}

// readChain reads a changed contract directory's files, checking only
// those the old index does not hold, and returns them with the findings
// about entries outside the layout.
func readChain(r *gitrepo.Reader, name string, tree plumbing.Hash, old *indexedDir, opts VerifyOptions) ([]*eventFile, []Finding, error) {
	entries, err := contractFiles(r, tree)
	if err != nil {
		return nil, nil, err
	}
	files, layout := listChain(name, entries)
	known := map[[2]plumbing.Hash]fileCheck{}
	if old != nil {
		// An indexed chain verified, so each event's link is the sum of
		// the file before it.
		prev := ""
		for _, e := range old.events {
			sum := hex.EncodeToString(e.sum[:])
			known[[2]plumbing.Hash{e.blob, e.sig}] = fileCheck{sum: sum, event: runner.Event{
				ID: e.ID, Type: e.Type, ContractID: e.ContractID, Environment: e.Environment, RunID: e.RunID,
				Seq: e.Seq, Time: e.Time, PrevEventHash: prev,
			}}
			prev = sum
		}
	}
	for _, f := range files {
		check, ok := known[[2]plumbing.Hash{f.blob, f.sig}]
		if !ok {
			body, err := r.Blob(f.blob)
			if err != nil {
				return nil, nil, err
			}
			var sig []byte
			if f.hasSig {
				if sig, err = r.Blob(f.sig); err != nil {
					return nil, nil, err
				}
			}
			check = checkFile(body, sig, f.hasSig, opts.EventKeys)
		}
		f.apply(check)
	}
	return files, layout, nil
}

// headDirs lists the contract directories at head, by name, and a
// finding for every entry outside the layout.
func headDirs(r *gitrepo.Reader, head plumbing.Hash) ([]gitrepo.Entry, []Finding, error) {
	if head.IsZero() {
		return nil, nil, nil
	}
	c, err := r.Commit(head)
	if err != nil {
		return nil, nil, err
	}
	root, err := r.Tree(c.TreeHash)
	if err != nil {
		return nil, nil, err
	}
	var dirs []gitrepo.Entry
	var findings []Finding
	for _, e := range root {
		if e.Name != contractsDir || e.Mode != filemode.Dir {
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: e.Name, Message: "outside contracts/"})
			continue
		}
		shards, err := r.Tree(e.Hash)
		if err != nil {
			return nil, nil, err
		}
		for _, s := range shards {
			d, f, err := shardDirs(r, s)
			if err != nil {
				return nil, nil, err
			}
			dirs, findings = append(dirs, d...), append(findings, f...)
		}
	}
	slices.SortFunc(dirs, func(a, b gitrepo.Entry) int { return strings.Compare(a.Name, b.Name) })
	return dirs, findings, nil
}

// shardDirs lists the contract directories in shard s (an entry of
// contracts/), and a finding for every entry out of place.
func shardDirs(r *gitrepo.Reader, s gitrepo.Entry) ([]gitrepo.Entry, []Finding, error) {
	if s.Mode != filemode.Dir || !isShard(s.Name) {
		msg := "not a shard directory (two hex digits)"
		if s.Mode == filemode.Dir && validDir(s.Name) {
			msg = fmt.Sprintf("contract directory directly in contracts/, not in its shard %s/ (a layout older than this Nova)", shardOf(s.Name))
		}
		return nil, []Finding{{Reason: runner.EvidenceLayoutInvalid, Path: contractsDir + "/" + s.Name, Message: msg}}, nil
	}
	entries, err := r.Tree(s.Hash)
	if err != nil {
		return nil, nil, err
	}
	var dirs []gitrepo.Entry
	var findings []Finding
	for _, d := range entries {
		p := contractsDir + "/" + s.Name + "/" + d.Name
		switch {
		case d.Mode != filemode.Dir || !validDir(d.Name):
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: p, Message: "not a contract directory"})
		case shardOf(d.Name) != s.Name:
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: p, Message: fmt.Sprintf("contract directory in shard %s/; it belongs in %s/", s.Name, shardOf(d.Name))})
		default:
			dirs = append(dirs, d)
		}
	}
	return dirs, findings, nil
}

// treesMatch reports whether every contract directory at repo's head has
// the tree the index was built from: the index holds what the signed data
// holds, or it is not used.
func (ix *Index) treesMatch(repo *Repo) (bool, error) {
	dirs, _, err := headDirs(gitrepo.NewReader(repo.st), repo.head)
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
				d.chainFindings = append(d.chainFindings, Finding{Reason: runner.EvidenceEventDuplicate, Path: e.Path(), Message: "event id " + e.ID + " also in " + prev})
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
			ix.witness = append(ix.witness, Finding{Reason: runner.EvidenceHistoryRewritten, Commit: h, Message: "a head this machine pushed is no longer in the history (force-push)"})
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
	sortFindings(ix.global)
	n := 0
	for _, d := range ix.dirs {
		sortFindings(d.commitFindings)
		sortFindings(d.chainFindings)
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
func findingDir(f Finding) (string, bool) {
	dir, _, ok := splitContractPath(f.Path)
	return dir, ok && validDir(dir)
}

// splitEventPath reads contracts/<shard>/<dir>/<bucket>/<seq>-<type>.json.
func splitEventPath(p string) (dir string, seq int64, typ string) {
	dir, name, _ := splitContractPath(p)
	n, _ := parseBucketedName(name)
	return dir, n.Seq, n.Type
}

func compareHash(a, b plumbing.Hash) int { return strings.Compare(string(a[:]), string(b[:])) }

// errIndexFormat marks a stored index that cannot be read: rebuilt.
var errIndexFormat = errors.New("not a Nova evidence index")

// save writes the index atomically: a concurrent query reads the old file
// or the new one, never half of one.
func (ix *Index) save(path string) error { return writeAtomic(path, ix.encode()) }

func loadIndex(path string) (*Index, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return decodeIndex(b)
}
