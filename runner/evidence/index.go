package evidence

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// The index is what `nova evidence query`, `export` and `report` answer
// from: every event of the repo with the commit that added it, as the
// verification found them. Verifying 100 000 events costs two signature
// checks each, seconds of CPU, so the index keeps the verification's
// result and is extended, not rebuilt, when the head moves: only the new
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
	Verify VerifyOptions
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
func (e *IndexedEvent) Path() string { return EventPath(e.ContractID, e.Seq, e.Type) }

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
	global, witness []Finding
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
	commitFindings, chainFindings []Finding
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
		if len(contracts) == 0 || slices.ContainsFunc(contracts, func(c string) bool { return contractDir(c) == d.name }) {
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

// NewReader reads the repo's objects; one goroutine at a time.
func (r *Repo) NewReader() *gitrepo.Reader { return gitrepo.NewReader(r.st) }

// UpdateIndex returns the index of repo at its head, from the index stored
// at path: as it is when the head has not moved, extended by what is new
// when it has, rebuilt by a full verification when there is none (or it
// cannot be trusted). The result is stored back at path. Problems with the
// repo are findings (see Check), not errors; the error is for failing to
// read the repo or to store the index, and for a head that does not
// contain the indexed one (EVIDENCE_HISTORY_REWRITTEN): the history this
// machine verified was rewritten, and only an operator who accepted that
// may rebuild (Rebuild).
func UpdateIndex(ctx context.Context, repo *Repo, path string, opts IndexOptions) (*Index, error) {
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
	case old.head == repo.head:
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
func buildIndex(ctx context.Context, repo *Repo, opts IndexOptions) (*Index, error) {
	vo := opts.Verify
	vo.Contract, vo.Witness, vo.Since = "", nil, ""
	v, err := runVerify(ctx, repo, vo)
	if err != nil {
		return nil, err
	}
	ix := &Index{head: repo.head, Rebuilt: true}
	for h := range v.reachable {
		ix.commits = append(ix.commits, h)
	}
	slices.SortFunc(ix.commits, compareHash)
	byDir := map[string]*indexedDir{}
	for _, name := range sortedKeys(v.dirTrees) {
		d := &indexedDir{name: name, tree: v.dirTrees[name]}
		byDir[name] = d
		ix.dirs = append(ix.dirs, d)
	}
	for _, f := range v.report.Findings {
		ix.file(byDir, f)
	}
	for _, d := range ix.dirs {
		if len(d.commitFindings)+len(d.chainFindings) == 0 {
			d.events = indexedEvents(v.chains[d.name], v.addedBy, nil, opts.Facets)
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
func (ix *Index) file(dirs map[string]*indexedDir, f Finding) {
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
func indexedEvents(files []*eventFile, addedBy map[string]plumbing.Hash, old map[[2]plumbing.Hash]*IndexedEvent, facets func(runner.Event) []string) []IndexedEvent {
	out := make([]IndexedEvent, 0, len(files))
	for _, f := range files {
		if o, ok := old[[2]plumbing.Hash{f.blob, f.sig}]; ok {
			out = append(out, *o)
			continue
		}
		e := f.event
		ie := IndexedEvent{
			ID: e.ID, Type: e.Type, ContractID: e.ContractID, Environment: e.Environment, RunID: e.RunID,
			Seq: e.Seq, Time: e.Time.UTC(), Commit: addedBy[f.path], Facets: facets(e), blob: f.blob, sig: f.sig,
		}
		if sum, err := hex.DecodeString(f.sum); err == nil {
			copy(ie.sum[:], sum)
		}
		out = append(out, ie)
	}
	return out
}

// extend brings ix to repo's head: the commits new since ix.head are
// checked like verify checks every commit, the contract directories whose
// trees changed are read again with the chain reader (files already
// verified are not checked again), and the repo-wide rules (no event id
// twice, no event a commit added missing) are applied to what is new.
func (ix *Index) extend(ctx context.Context, repo *Repo, opts IndexOptions) (*Index, error) {
	v := &verifier{opts: opts.Verify, readers: []*gitrepo.Reader{gitrepo.NewReader(repo.st)}, addedBy: map[string]plumbing.Hash{}}
	for i := 1; i < runtime.GOMAXPROCS(0) && repo.fork != nil; i++ {
		st, closeFn, err := repo.fork()
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "opening the evidence repo again: %w", err)
		}
		defer closeFn()
		v.readers = append(v.readers, gitrepo.NewReader(st))
	}
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
func (ix *Index) newCommits(ctx context.Context, r *gitrepo.Reader, head plumbing.Hash) ([]*object.Commit, bool, error) {
	var fresh []*object.Commit
	seen := map[plumbing.Hash]bool{}
	sawHead := false
	stack := []plumbing.Hash{}
	if !head.IsZero() {
		stack = append(stack, head)
	}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, false, err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		if h == ix.head {
			sawHead = true
		}
		if ix.hasCommit(h) {
			continue
		}
		c, err := r.Commit(h)
		if err != nil {
			return nil, false, err
		}
		fresh = append(fresh, c)
		stack = append(stack, c.ParentHashes...)
	}
	return fresh, sawHead, nil
}

// readChain reads a changed contract directory's files, checking only
// those the old index does not hold, and returns them with the findings
// about entries outside the layout.
func readChain(r *gitrepo.Reader, name string, tree plumbing.Hash, old *indexedDir, opts VerifyOptions) ([]*eventFile, []Finding, error) {
	entries, err := r.Tree(tree)
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

// headDirs lists the contract directories at head, and a finding for
// every entry outside the layout, as checkTree does.
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
		if e.Name == contractsDir && e.Mode == filemode.Dir {
			entries, err := r.Tree(e.Hash)
			if err != nil {
				return nil, nil, err
			}
			for _, d := range entries {
				if d.Mode != filemode.Dir || !validDir(d.Name) {
					findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: contractsDir + "/" + d.Name, Message: "not a contract directory"})
					continue
				}
				dirs = append(dirs, d)
			}
			continue
		}
		findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: e.Name, Message: "outside contracts/"})
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
	rest, ok := strings.CutPrefix(f.Path, contractsDir+"/")
	if !ok {
		return "", false
	}
	dir, _, _ := strings.Cut(rest, "/")
	return dir, validDir(dir)
}

// splitEventPath reads contracts/<dir>/<seq>-<type>.json.
func splitEventPath(p string) (dir string, seq int64, typ string) {
	rest, _ := strings.CutPrefix(p, contractsDir+"/")
	dir, name, _ := strings.Cut(rest, "/")
	n, _ := parseEventFileName(name)
	return dir, n.Seq, n.Type
}

func compareHash(a, b plumbing.Hash) int { return strings.Compare(string(a[:]), string(b[:])) }

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// errIndexFormat marks a stored index that cannot be read: rebuilt.
var errIndexFormat = errors.New("not a Nova evidence index")

// save writes the index atomically: a concurrent query reads the old file
// or the new one, never half of one.
func (ix *Index) save(path string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), indexFile+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, err = tmp.Write(ix.encode())
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
