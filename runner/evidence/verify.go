package evidence

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/storer"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// VerifyOptions says what a verification trusts and covers.
type VerifyOptions struct {
	// EventKeys verify the events' .sig files (required).
	EventKeys *signing.KeySet
	// CommitKeys are the OpenPGP keys allowed to sign commits (required).
	CommitKeys *signing.CommitKeyRing
	// Contract limits the event and chain checks to one contract; commits
	// are always all checked, since history is shared.
	Contract string
	// Witness lists heads this machine pushed (ReadWitness); each must
	// still be in the history.
	Witness []plumbing.Hash
}

// Finding is one thing wrong with the evidence repo.
type Finding struct {
	Reason  runner.Reason `json:"reason"`
	Path    string        `json:"path,omitempty"`
	Commit  string        `json:"commit,omitempty"`
	Message string        `json:"message"`
}

// Report is the outcome of Verify.
type Report struct {
	Head      string    `json:"head"`
	Commits   int       `json:"commits"`
	Contracts int       `json:"contracts"`
	Events    int       `json:"events"`
	Witnessed int       `json:"witnessedHeads"`
	Findings  []Finding `json:"findings"`
}

// OK is true when nothing is wrong.
func (r *Report) OK() bool { return len(r.Findings) == 0 }

// Verify checks the evidence repo at its head: every commit signed by an
// allowed key and adding exactly the one event its message names, every
// file inside the layout, every event's signature, every chain continuous
// with matching preveventhash, no repeated event id, and no witnessed head
// missing from the history. It reports what is wrong rather than stopping
// at the first break; the error is for failing to read the repo at all.
//
// The work is split over one worker per CPU, each with its own handle on
// the repo (go-git's file storage is not safe for concurrent use): the two
// signature checks per event are most of the cost.
func Verify(ctx context.Context, repo *Repo, opts VerifyOptions) (*Report, error) {
	if opts.EventKeys == nil || opts.CommitKeys == nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "verify needs the event public key(s) and the allowed commit key(s)")
	}
	v := &verifier{opts: opts, main: newReadHandle(repo.Git.Storer), addedBy: map[string]plumbing.Hash{}}
	if !repo.Head.IsZero() {
		v.report.Head = repo.Head.String()
	}
	n := runtime.GOMAXPROCS(0)
	v.handles = []*readHandle{v.main}
	for i := 1; i < n && repo.fork != nil; i++ {
		st, closeFn, err := repo.fork()
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "opening the evidence repo again: %w", err)
		}
		defer closeFn()
		v.handles = append(v.handles, newReadHandle(st))
	}
	commits, err := v.walk(ctx, repo.Head)
	if err != nil {
		return nil, err
	}
	if err := v.checkCommits(ctx, commits); err != nil {
		return nil, err
	}
	if err := v.checkTree(ctx, repo.Head); err != nil {
		return nil, err
	}
	v.checkWitness()
	sort.SliceStable(v.report.Findings, func(i, j int) bool {
		a, b := v.report.Findings[i], v.report.Findings[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Reason < b.Reason
	})
	return &v.report, nil
}

type verifier struct {
	opts    VerifyOptions
	report  Report
	main    *readHandle
	handles []*readHandle

	mu        sync.Mutex
	reachable map[plumbing.Hash]bool
	// addedBy maps an event file to the commit that added it.
	addedBy map[string]plumbing.Hash
}

func (v *verifier) add(f ...Finding) {
	v.mu.Lock()
	v.report.Findings = append(v.report.Findings, f...)
	v.mu.Unlock()
}

// readHandle is one goroutine's view of the repo, with a cache of parsed
// trees: walking a run of commits, a commit's parent trees are parsed once
// and reused as an older commit's own. It holds about a thousand trees so a
// contract directory survives until the walk reaches the commit before it
// even when many contracts interleave.
type readHandle struct {
	st    storer.EncodedObjectStorer
	trees map[plumbing.Hash][]treeEntry
}

func newReadHandle(st storer.EncodedObjectStorer) *readHandle {
	return &readHandle{st: st, trees: map[plumbing.Hash][]treeEntry{}}
}

// treeEntry is a tree entry parsed in place: go-git's DecodeTree allocates
// a string per entry, and a verify parses every contract directory once per
// commit that touches it, which made decoding its largest cost.
type treeEntry struct {
	Name string
	Mode filemode.FileMode
	Hash plumbing.Hash
}

func (h *readHandle) tree(hash plumbing.Hash) ([]treeEntry, error) {
	if hash.IsZero() {
		return nil, nil
	}
	if t, ok := h.trees[hash]; ok {
		return t, nil
	}
	o, err := h.st.EncodedObject(plumbing.TreeObject, hash)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading tree %s: %w", hash, err)
	}
	r, err := o.Reader()
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading tree %s: %w", hash, err)
	}
	b, err := io.ReadAll(r)
	r.Close()
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading tree %s: %w", hash, err)
	}
	t, err := parseTree(b)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "parsing tree %s: %w", hash, err)
	}
	if len(h.trees) > 1024 {
		clear(h.trees)
	}
	h.trees[hash] = t
	return t, nil
}

// parseTree reads git's tree format: "<octal mode> <name>\x00<20-byte hash>"
// repeated. One string holds all names, so a tree costs two allocations.
func parseTree(b []byte) ([]treeEntry, error) {
	names := string(b)
	entries := make([]treeEntry, 0, 8)
	for i := 0; i < len(b); {
		sp := bytes.IndexByte(b[i:], ' ')
		if sp < 0 {
			return nil, errors.New("malformed tree entry")
		}
		var mode uint32
		for _, c := range b[i : i+sp] {
			if c < '0' || c > '7' {
				return nil, errors.New("malformed tree mode")
			}
			mode = mode<<3 | uint32(c-'0')
		}
		nameStart := i + sp + 1
		nul := bytes.IndexByte(b[nameStart:], 0)
		if nul < 0 || nameStart+nul+1+20 > len(b) {
			return nil, errors.New("malformed tree entry")
		}
		var e treeEntry
		e.Name = names[nameStart : nameStart+nul]
		e.Mode = filemode.FileMode(mode)
		copy(e.Hash[:], b[nameStart+nul+1:])
		entries = append(entries, e)
		i = nameStart + nul + 1 + 20
	}
	return entries, nil
}

// compareEntries orders entries as git does, a directory sorting as if its
// name ended in "/", without building that string.
func compareEntries(a, b treeEntry) int {
	n := min(len(a.Name), len(b.Name))
	if c := strings.Compare(a.Name[:n], b.Name[:n]); c != 0 {
		return c
	}
	ca, cb := nextByte(a, n), nextByte(b, n)
	switch {
	case ca < cb:
		return -1
	case ca > cb:
		return 1
	}
	return 0
}

// nextByte is the byte of e's sort key at i: past the name, "/" for a
// directory and nothing (0) for a file.
func nextByte(e treeEntry, i int) int {
	if i < len(e.Name) {
		return int(e.Name[i])
	}
	if i == len(e.Name) && e.Mode == filemode.Dir {
		return '/'
	}
	return -1
}

// walk collects every commit reachable from head, newest first.
func (v *verifier) walk(ctx context.Context, head plumbing.Hash) ([]*object.Commit, error) {
	v.reachable = map[plumbing.Hash]bool{}
	var commits []*object.Commit
	stack := []plumbing.Hash{}
	if !head.IsZero() {
		stack = append(stack, head)
	}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if v.reachable[h] {
			continue
		}
		v.reachable[h] = true
		c, err := object.GetCommit(v.main.st, h)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceRepoUnavailable, "reading commit %s: %w", h, err)
		}
		commits = append(commits, c)
		stack = append(stack, c.ParentHashes...)
	}
	v.report.Commits = len(commits)
	return commits, nil
}

// addition is an event file a commit added; order is the commit's index
// in the walk (higher is older).
type addition struct {
	path   string
	commit plumbing.Hash
	order  int
}

// checkCommits checks signatures and content of all commits, one
// contiguous run of commits per worker so tree caches stay warm.
func (v *verifier) checkCommits(ctx context.Context, commits []*object.Commit) error {
	parentTrees := make(map[plumbing.Hash]plumbing.Hash, len(commits))
	for _, c := range commits {
		parentTrees[c.Hash] = c.TreeHash
	}
	chunk := (len(commits) + len(v.handles) - 1) / max(len(v.handles), 1)
	adds := make([][]addition, len(v.handles))
	errs := make([]error, len(v.handles))
	var wg sync.WaitGroup
	for w, h := range v.handles {
		lo, hi := w*chunk, min((w+1)*chunk, len(commits))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := lo; i < hi; i++ {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				c := commits[i]
				if reason, err := v.opts.CommitKeys.CheckCommit(c); err != nil {
					v.add(Finding{Reason: reason, Commit: c.Hash.String(), Message: err.Error()})
				}
				parentTree := plumbing.ZeroHash
				if len(c.ParentHashes) > 0 {
					if t, ok := parentTrees[c.ParentHashes[0]]; ok {
						parentTree = t
					}
				}
				added, err := v.checkCommitContent(h, c, parentTree)
				if err != nil {
					errs[w] = err
					return
				}
				for _, p := range added {
					adds[w] = append(adds[w], addition{path: p, commit: c.Hash, order: i})
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	// Oldest first: the first commit to add a path owns it.
	var all []addition
	for _, a := range adds {
		all = append(all, a...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].order > all[j].order })
	for _, a := range all {
		if prev, dup := v.addedBy[a.path]; dup {
			v.add(Finding{Reason: runner.EvidenceCommitInvalid, Path: a.path, Commit: a.commit.String(), Message: fmt.Sprintf("event file added again (first by %s)", short(prev))})
			continue
		}
		v.addedBy[a.path] = a.commit
	}
	return nil
}

// checkCommitContent checks that c adds exactly the event its message
// names, and nothing else: no change to an existing event, no deletion,
// no file outside the layout, no merge. It returns the event file added.
func (v *verifier) checkCommitContent(h *readHandle, c *object.Commit, parentTree plumbing.Hash) ([]string, error) {
	commit := c.Hash.String()
	var findings []Finding
	defer func() { v.add(findings...) }()
	subj, ok := parseCommitMessage(c.Message)
	if !ok {
		findings = append(findings, Finding{Reason: runner.EvidenceCommitInvalid, Commit: commit, Message: fmt.Sprintf("commit message %q is not `<type> <contractId> <env> seq=<n>`", firstLine(c.Message))})
	}
	if len(c.ParentHashes) > 1 {
		findings = append(findings, Finding{Reason: runner.EvidenceCommitInvalid, Commit: commit, Message: "merge commit: evidence history must be linear"})
	}
	var changes []treeChange
	if err := diffTrees(h, parentTree, c.TreeHash, "", &changes); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	if ok {
		want[subj.path()] = true
		want[sigPath(subj.path())] = true
	}
	var added []string
	for _, ch := range changes {
		if ch.added && want[ch.path] {
			delete(want, ch.path)
			if strings.HasSuffix(ch.path, ".json") {
				added = append(added, ch.path)
			}
			continue
		}
		what := "modifies"
		switch {
		case ch.added:
			what = "adds"
		case ch.deleted:
			what = "deletes"
		}
		findings = append(findings, Finding{Reason: runner.EvidenceCommitInvalid, Path: ch.path, Commit: commit, Message: fmt.Sprintf("commit %s %s, which its message does not name", what, ch.path)})
	}
	if ok && len(want) > 0 {
		findings = append(findings, Finding{Reason: runner.EvidenceCommitInvalid, Path: subj.path(), Commit: commit, Message: "commit does not add the event its message names"})
	}
	return added, nil
}

type treeChange struct {
	path           string
	added, deleted bool
}

// diffTrees lists the files that differ between trees a and b, descending
// only into subtrees whose hashes differ: for an event commit that is
// three trees per side whatever the repo's size.
func diffTrees(h *readHandle, a, b plumbing.Hash, prefix string, out *[]treeChange) error {
	if a == b {
		return nil
	}
	ea, err := h.tree(a)
	if err != nil {
		return err
	}
	eb, err := h.tree(b)
	if err != nil {
		return err
	}
	// Both lists are in git's tree order: merge them.
	i, j := 0, 0
	for i < len(ea) || j < len(eb) {
		var cmp int
		switch {
		case i == len(ea):
			cmp = 1
		case j == len(eb):
			cmp = -1
		default:
			cmp = compareEntries(ea[i], eb[j])
		}
		switch {
		case cmp < 0: // only in a: deleted
			if err := removed(h, ea[i], prefix, out); err != nil {
				return err
			}
			i++
		case cmp > 0: // only in b: added
			e := eb[j]
			if e.Mode == filemode.Dir {
				if err := diffTrees(h, plumbing.ZeroHash, e.Hash, prefix+e.Name+"/", out); err != nil {
					return err
				}
			} else {
				*out = append(*out, treeChange{path: prefix + e.Name, added: true})
			}
			j++
		default:
			x, y := ea[i], eb[j]
			switch {
			case x.Hash == y.Hash && x.Mode == y.Mode:
			case x.Mode == filemode.Dir && y.Mode == filemode.Dir:
				if err := diffTrees(h, x.Hash, y.Hash, prefix+y.Name+"/", out); err != nil {
					return err
				}
			default:
				*out = append(*out, treeChange{path: prefix + y.Name})
			}
			i, j = i+1, j+1
		}
	}
	return nil
}

func removed(h *readHandle, e treeEntry, prefix string, out *[]treeChange) error {
	if e.Mode == filemode.Dir {
		return diffTrees(h, e.Hash, plumbing.ZeroHash, prefix+e.Name+"/", out)
	}
	*out = append(*out, treeChange{path: prefix + e.Name, deleted: true})
	return nil
}

// eventFileData is one event file at the head with its signature.
type eventFileData struct {
	path    string
	dir     string
	file    eventFile
	blob    plumbing.Hash
	sigBlob plumbing.Hash
	hasSig  bool
	sum     string
	event   runner.Event
	decoded bool
}

// checkTree checks the files at head: layout, signatures, chains, ids.
func (v *verifier) checkTree(ctx context.Context, head plumbing.Hash) error {
	if head.IsZero() {
		return nil
	}
	c, err := object.GetCommit(v.main.st, head)
	if err != nil {
		return runner.Errorf(runner.EvidenceRepoUnavailable, "reading head: %w", err)
	}
	root, err := v.main.tree(c.TreeHash)
	if err != nil {
		return err
	}
	var dirs []treeEntry
	for _, e := range root {
		if e.Name == contractsDir && e.Mode == filemode.Dir {
			if dirs, err = v.main.tree(e.Hash); err != nil {
				return err
			}
			continue
		}
		v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: e.Name, Message: "outside contracts/"})
	}
	byDir := map[string][]*eventFileData{}
	var all []*eventFileData
	for _, d := range dirs {
		dirPath := contractsDir + "/" + d.Name
		if d.Mode != filemode.Dir || !validDir(d.Name) {
			v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: dirPath, Message: "not a contract directory"})
			continue
		}
		v.report.Contracts++
		if v.opts.Contract != "" && d.Name != contractDir(v.opts.Contract) {
			continue
		}
		entries, err := v.main.tree(d.Hash)
		if err != nil {
			return err
		}
		names := make(map[string]plumbing.Hash, len(entries))
		for _, e := range entries {
			if e.Mode.IsFile() {
				names[e.Name] = e.Hash
			}
		}
		for _, e := range entries {
			p := dirPath + "/" + e.Name
			f, ok := parseEventFileName(e.Name)
			if !ok || !e.Mode.IsFile() {
				v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: p, Commit: v.commitOf(p), Message: "not <seq>-<type>.json or .sig"})
				continue
			}
			if f.Sig {
				if _, ok := names[strings.TrimSuffix(e.Name, ".sig")+".json"]; !ok {
					v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: p, Message: "signature without its event"})
				}
				continue
			}
			ef := &eventFileData{path: p, dir: d.Name, file: f, blob: e.Hash}
			ef.sigBlob, ef.hasSig = names[sigPath(e.Name)]
			byDir[d.Name] = append(byDir[d.Name], ef)
			all = append(all, ef)
		}
	}
	v.report.Events = len(all)
	if err := v.checkEvents(ctx, all); err != nil {
		return err
	}
	ids := map[string]string{}
	dirNames := make([]string, 0, len(byDir))
	for d := range byDir {
		dirNames = append(dirNames, d)
	}
	sort.Strings(dirNames)
	for _, d := range dirNames {
		v.checkChain(d, byDir[d], ids)
	}
	// An event a commit added but the head lacks was deleted later.
	present := make(map[string]bool, len(all))
	for _, ef := range all {
		present[ef.path] = true
	}
	for p, h := range v.addedBy {
		dir := strings.Split(p, "/")[1]
		if v.opts.Contract != "" && dir != contractDir(v.opts.Contract) {
			continue
		}
		if !present[p] {
			v.add(Finding{Reason: runner.EvidenceChainBroken, Path: p, Commit: h.String(), Message: "event recorded by this commit is missing at the head"})
		}
	}
	return nil
}

func (v *verifier) commitOf(path string) string {
	if h, ok := v.addedBy[path]; ok {
		return h.String()
	}
	return ""
}

// checkEvents reads, hashes, decodes and signature-checks the event files,
// a share of them per worker.
func (v *verifier) checkEvents(ctx context.Context, all []*eventFileData) error {
	chunk := (len(all) + len(v.handles) - 1) / max(len(v.handles), 1)
	errs := make([]error, len(v.handles))
	var wg sync.WaitGroup
	for w, h := range v.handles {
		lo, hi := w*chunk, min((w+1)*chunk, len(all))
		if lo >= hi {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			for _, ef := range all[lo:hi] {
				if err := ctx.Err(); err != nil {
					errs[w] = err
					return
				}
				if err := v.checkEvent(h, ef); err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (v *verifier) checkEvent(h *readHandle, ef *eventFileData) error {
	body, err := readBlob(h.st, ef.blob)
	if err != nil {
		return runner.Errorf(runner.EvidenceRepoUnavailable, "%w", err)
	}
	sum := sha256.Sum256(body)
	ef.sum = hex.EncodeToString(sum[:])
	commit := v.commitOf(ef.path)
	if !ef.hasSig {
		v.add(Finding{Reason: runner.EvidenceSignatureInvalid, Path: ef.path, Commit: commit, Message: "no .sig beside the event"})
	} else {
		sig, err := readBlob(h.st, ef.sigBlob)
		if err != nil {
			return runner.Errorf(runner.EvidenceRepoUnavailable, "%w", err)
		}
		if err := v.opts.EventKeys.Verify(body, sig); err != nil {
			v.add(Finding{Reason: runner.EvidenceSignatureInvalid, Path: ef.path, Commit: commit, Message: err.Error()})
		}
	}
	if err := json.Unmarshal(body, &ef.event); err != nil {
		v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: ef.path, Commit: commit, Message: "not a JSON event: " + err.Error()})
		return nil
	}
	ef.decoded = true
	if ef.event.Type != ef.file.Type || contractDir(ef.event.ContractID) != ef.dir {
		v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: ef.path, Commit: commit,
			Message: fmt.Sprintf("event is %s of contract %q, its path says %s of %s", ef.event.Type, ef.event.ContractID, ef.file.Type, ef.dir)})
	}
	if ef.event.ID == "" {
		v.add(Finding{Reason: runner.EvidenceLayoutInvalid, Path: ef.path, Commit: commit, Message: "event has no id"})
	}
	return nil
}

// checkChain checks one contract's chain: seq 1..n without gap or repeat,
// each event's seq matching its file name, each preveventhash equal to the
// sha256 of the previous event file.
func (v *verifier) checkChain(dir string, files []*eventFileData, ids map[string]string) {
	bySeq := map[int64]*eventFileData{}
	var maxSeq int64
	for _, ef := range files {
		if other, dup := bySeq[ef.file.Seq]; dup {
			v.add(Finding{Reason: runner.EvidenceChainBroken, Path: ef.path, Commit: v.commitOf(ef.path), Message: fmt.Sprintf("two events claim seq %d (also %s)", ef.file.Seq, other.path)})
			continue
		}
		bySeq[ef.file.Seq] = ef
		maxSeq = max(maxSeq, ef.file.Seq)
	}
	for seq := int64(1); seq <= maxSeq; seq++ {
		ef, ok := bySeq[seq]
		if !ok {
			v.add(Finding{Reason: runner.EvidenceChainBroken, Path: contractsDir + "/" + dir, Message: fmt.Sprintf("seq %d is missing", seq)})
			continue
		}
		if !ef.decoded {
			continue
		}
		commit := v.commitOf(ef.path)
		if prev, seen := ids[ef.event.ID]; seen && ef.event.ID != "" {
			v.add(Finding{Reason: runner.EvidenceEventDuplicate, Path: ef.path, Commit: commit, Message: "event id " + ef.event.ID + " also in " + prev})
		} else {
			ids[ef.event.ID] = ef.path
		}
		if ef.event.Seq != seq {
			v.add(Finding{Reason: runner.EvidenceChainBroken, Path: ef.path, Commit: commit, Message: fmt.Sprintf("event says seq %d, its file is seq %d", ef.event.Seq, seq)})
		}
		want := ""
		if seq > 1 {
			prev, ok := bySeq[seq-1]
			if !ok {
				continue // the gap is already reported
			}
			want = prev.sum
		}
		if ef.event.PrevEventHash != want {
			v.add(Finding{Reason: runner.EvidenceChainBroken, Path: ef.path, Commit: commit, Message: fmt.Sprintf("preveventhash %s does not match the previous event file (%s)", shortSum(ef.event.PrevEventHash), shortSum(want))})
		}
	}
}

// checkWitness reports every witnessed head the history no longer holds.
func (v *verifier) checkWitness() {
	v.report.Witnessed = len(v.opts.Witness)
	for _, h := range v.opts.Witness {
		if !v.reachable[h] {
			v.add(Finding{Reason: runner.EvidenceHistoryRewritten, Commit: h.String(), Message: "a head this machine pushed is no longer in the history (force-push)"})
		}
	}
}

func shortSum(s string) string {
	if s == "" {
		return `""`
	}
	if len(s) > 12 {
		return s[:12]
	}
	return s
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
