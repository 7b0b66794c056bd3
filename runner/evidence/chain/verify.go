package chain

import (
	"context"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
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
	Witness []string
	// Since, a commit hash, makes the verification incremental: only what
	// the history added after it is checked (verify_since.go), at a cost
	// that follows the new events. It must be a head an earlier
	// verification established, in the history of the head, and listed
	// in Witness when a witness is given.
	Since string
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
	Head string `json:"head"`
	// Since is the commit an incremental verification started after;
	// Commits, Contracts and Events then count what is new since.
	Since     string    `json:"since,omitempty"`
	Commits   int       `json:"commits"`
	Contracts int       `json:"contracts"`
	Events    int       `json:"events"`
	Witnessed int       `json:"witnessedHeads"`
	Findings  []Finding `json:"findings"`
	// Signatures says, per event checked, which kind of signature it
	// carries (key or keyless) and, for a verified keyless one, the
	// workflow identity of its certificate: one evidence repo may hold both.
	Signatures []EventSignature `json:"signatures"`
}

// EventSignature is which kind signed one event file.
type EventSignature struct {
	Path string `json:"path"`
	signing.Signed
}

// recordSigners lists which kind signed each of files.
func (v *verifier) recordSigners(files []*File) {
	for _, f := range files {
		if f.HasSig {
			v.report.Signatures = append(v.report.Signatures, EventSignature{Path: f.Path, Signed: f.Signed})
		}
	}
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
	v, err := runVerify(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	return &v.report, nil
}

// Verification is a whole verification's report and what it read, for a
// caller that keeps it (the audit index) rather than read it again.
type Verification struct {
	Report *Report
	// Reachable holds every commit of the history.
	Reachable map[plumbing.Hash]bool
	// DirTrees is each contract directory's tree at the head, and Chains
	// its event files as the chain reader read and checked them.
	DirTrees map[string]plumbing.Hash
	Chains   map[string][]*File
	// AddedBy maps each event file to the commit that added it.
	AddedBy map[string]plumbing.Hash
}

// VerifyAll is Verify of the whole history and every contract, keeping
// what it read; opts' Contract, Witness and Since are ignored.
func VerifyAll(ctx context.Context, repo *Repo, opts VerifyOptions) (*Verification, error) {
	opts.Contract, opts.Witness, opts.Since = "", nil, ""
	v, err := runVerify(ctx, repo, opts)
	if err != nil {
		return nil, err
	}
	return &Verification{Report: &v.report, Reachable: v.reachable, DirTrees: v.dirTrees, Chains: v.chains, AddedBy: v.addedBy}, nil
}

// NewCommits is what CheckNewCommits found.
type NewCommits struct {
	// Commits are the commits checked, newest first; Seen is every hash
	// the walk came to, the known ones it stopped at included.
	Commits []*gitrepo.Commit
	Seen    map[plumbing.Hash]bool
	// Findings are about the commits checked; AddedBy maps each event
	// file they added to the commit that added it.
	Findings []Finding
	AddedBy  map[string]plumbing.Hash
}

// CheckNewCommits walks repo's history back from its head, stopping at the
// commits known says were checked already, and checks the others as Verify
// checks every commit: signed by an allowed key, adding exactly the event
// its message names. Whether the walk met a known head says whether the
// history still contains it.
func CheckNewCommits(ctx context.Context, repo *Repo, opts VerifyOptions, known func(plumbing.Hash) bool) (*NewCommits, error) {
	v := &verifier{opts: opts, addedBy: map[string]plumbing.Hash{}}
	readers, closeReaders, err := repo.readers(runtime.GOMAXPROCS(0))
	if err != nil {
		return nil, err
	}
	defer closeReaders()
	v.readers = readers
	commits, seen, err := walkCommits(ctx, readers[0], repo.head, known)
	if err != nil {
		return nil, err
	}
	if err := v.checkCommits(ctx, commits); err != nil {
		return nil, err
	}
	return &NewCommits{Commits: commits, Seen: seen, Findings: v.report.Findings, AddedBy: v.addedBy}, nil
}

// runVerify is Verify, returning the verifier with what it read (the
// chains, which commit added each event) for VerifyAll.
func runVerify(ctx context.Context, repo *Repo, opts VerifyOptions) (*verifier, error) {
	if opts.EventKeys == nil || opts.CommitKeys == nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "verify needs the event public key(s) and the allowed commit key(s)")
	}
	for _, h := range opts.Witness {
		if !plumbing.IsHash(h) {
			return nil, runner.Errorf(runner.ConfigInvalid, "witnessed head %q is not a commit hash", h)
		}
	}
	if opts.Since != "" && !plumbing.IsHash(opts.Since) {
		return nil, runner.Errorf(runner.ConfigInvalid, "--since %q is not a full commit hash", opts.Since)
	}
	v := &verifier{opts: opts, addedBy: map[string]plumbing.Hash{},
		chains: map[string][]*File{}, dirTrees: map[string]plumbing.Hash{}}
	v.report.Head = repo.Head()
	// One handle more than workers: the walk runs beside the files' checks.
	readers, closeReaders, err := repo.readers(runtime.GOMAXPROCS(0) + 1)
	if err != nil {
		return nil, err
	}
	defer closeReaders()
	v.readers = readers
	if len(readers) > 1 {
		v.readers, v.walker = readers[:len(readers)-1], readers[len(readers)-1]
	}
	witness := opts.Witness
	if opts.Since == "" {
		if err := v.verifyAll(ctx, repo.head); err != nil {
			return nil, err
		}
	} else {
		since := plumbing.NewHash(opts.Since)
		var err error
		if witness, err = witnessedSince(witness, since); err != nil {
			return nil, err
		}
		v.report.Since = since.String()
		if err := v.verifySince(ctx, repo.head, since); err != nil {
			return nil, err
		}
	}
	v.report.Witnessed = len(witness)
	for _, h := range witness {
		if !v.reachable[plumbing.NewHash(h)] {
			v.add(Finding{Reason: runner.EvidenceHistoryRewritten, Commit: h, Message: "a head this machine pushed is no longer in the history (force-push)"})
		}
	}
	for i, f := range v.report.Findings {
		if h, ok := v.addedBy[f.Path]; ok && f.Commit == "" {
			v.report.Findings[i].Commit = h.String()
		}
	}
	SortFindings(v.report.Findings)
	return v, nil
}

// verifyAll fills v.report with the checks of the whole history. Walking
// the history reads one commit after another, each naming the next, so
// only one goroutine can do it: it runs while the workers check the
// files at the head, which need nothing from it, and no core waits.
func (v *verifier) verifyAll(ctx context.Context, head plumbing.Hash) error {
	var commits []*gitrepo.Commit
	walked := make(chan error, 1)
	walk := func() {
		var err error
		commits, _, err = v.walk(ctx, head, plumbing.ZeroHash)
		walked <- err
	}
	if v.walker != nil {
		go walk()
	} else {
		walk()
	}
	treeErr := v.checkTree(ctx, head)
	if err := <-walked; err != nil {
		return err
	}
	if treeErr != nil {
		return treeErr
	}
	if err := v.checkCommits(ctx, commits); err != nil {
		return err
	}
	v.checkPresent()
	return nil
}

// SortFindings orders findings by path, then reason, so a report reads the
// same whichever worker found what first.
func SortFindings(findings []Finding) {
	sort.SliceStable(findings, func(i, j int) bool {
		a, b := findings[i], findings[j]
		if a.Path != b.Path {
			return a.Path < b.Path
		}
		return a.Reason < b.Reason
	})
}

type verifier struct {
	opts    VerifyOptions
	report  Report
	readers []*gitrepo.Reader // one per worker
	// walker reads the history beside the workers (nil: readers[0]
	// walks, before they start).
	walker *gitrepo.Reader

	mu        sync.Mutex // guards report.Findings
	reachable map[plumbing.Hash]bool
	// addedBy maps an event file to the commit that added it.
	addedBy map[string]plumbing.Hash
	// chains holds each contract directory's files as checkTree read
	// them, and dirTrees its tree at the head.
	chains   map[string][]*File
	dirTrees map[string]plumbing.Hash
}

func (v *verifier) add(f ...Finding) {
	v.mu.Lock()
	v.report.Findings = append(v.report.Findings, f...)
	v.mu.Unlock()
}

// walk collects the commits reachable from head, newest first, without
// going past stop (a zero stop walks to the roots); met says whether it
// came to stop.
func (v *verifier) walk(ctx context.Context, head, stop plumbing.Hash) (commits []*gitrepo.Commit, met bool, err error) {
	r := v.walker
	if r == nil {
		r = v.readers[0]
	}
	commits, v.reachable, err = walkCommits(ctx, r, head, func(h plumbing.Hash) bool { return h == stop })
	if err != nil {
		return nil, false, err
	}
	met = v.reachable[stop]
	if !stop.IsZero() {
		v.reachable[stop] = true
	}
	v.report.Commits = len(commits)
	return commits, met, nil
}

// walkCommits collects the commits reachable from head that known does
// not stop at, newest first, and every hash it came to (the known ones
// included).
func walkCommits(ctx context.Context, r *gitrepo.Reader, head plumbing.Hash, known func(plumbing.Hash) bool) ([]*gitrepo.Commit, map[plumbing.Hash]bool, error) {
	var commits []*gitrepo.Commit
	seen := map[plumbing.Hash]bool{}
	stack := []plumbing.Hash{}
	if !head.IsZero() {
		stack = append(stack, head)
	}
	for len(stack) > 0 {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		h := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if seen[h] {
			continue
		}
		seen[h] = true
		if known(h) {
			continue
		}
		c, err := r.Commit(h)
		if err != nil {
			return nil, nil, err
		}
		commits = append(commits, c)
		stack = append(stack, c.ParentHashes...)
	}
	return commits, seen, nil
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
func (v *verifier) checkCommits(ctx context.Context, commits []*gitrepo.Commit) error {
	trees := make(map[plumbing.Hash]plumbing.Hash, len(commits))
	for _, c := range commits {
		trees[c.Hash] = c.TreeHash
	}
	// Commits new since an index was built have a parent outside the set:
	// each is diffed against its real parent, not an empty tree.
	for _, c := range commits {
		if p := c.FirstParent(); !p.IsZero() {
			if _, ok := trees[p]; !ok {
				pc, err := v.readers[0].Commit(p)
				if err != nil {
					return err
				}
				trees[p] = pc.TreeHash
			}
		}
	}
	adds := make([][]addition, len(v.readers))
	err := ForEachChunk(len(v.readers), len(commits), func(w, lo, hi int) error {
		v.checkSignatures(commits[lo:hi])
		for i := lo; i < hi; i++ {
			if err := ctx.Err(); err != nil {
				return err
			}
			c := commits[i]
			added, err := v.checkCommitContent(v.readers[w], c, trees[c.FirstParent()])
			if err != nil {
				return err
			}
			for _, p := range added {
				adds[w] = append(adds[w], addition{path: p, commit: c.Hash, order: i})
			}
		}
		return nil
	})
	if err != nil {
		return err
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

// checkSignatures checks the commits' signatures.
func (v *verifier) checkSignatures(commits []*gitrepo.Commit) {
	for _, c := range commits {
		if reason, err := v.opts.CommitKeys.CheckCommit(c.Signed, c.PGPSignature); err != nil {
			v.add(Finding{Reason: reason, Commit: c.Hash.String(), Message: err.Error()})
		}
	}
}

// checkCommitContent checks that c adds exactly the event its message
// names, and nothing else: no change to an existing event, no deletion,
// no file outside the layout, no merge. It returns the event file added.
func (v *verifier) checkCommitContent(r *gitrepo.Reader, c *gitrepo.Commit, parentTree plumbing.Hash) ([]string, error) {
	commit := c.Hash.String()
	var findings []Finding
	defer func() { v.add(findings...) }()
	subj, ok := parseCommitMessage(c.Message)
	if !ok {
		line, _, _ := strings.Cut(c.Message, "\n")
		findings = append(findings, Finding{Reason: runner.EvidenceCommitInvalid, Commit: commit, Message: fmt.Sprintf("commit message %q is not `<type> <contractId> <env> seq=<n>`", line)})
	}
	if len(c.ParentHashes) > 1 {
		findings = append(findings, Finding{Reason: runner.EvidenceCommitInvalid, Commit: commit, Message: "merge commit: evidence history must be linear"})
	}
	if ok && len(c.ParentHashes) == 1 && expectParent(r, c.TreeHash, parentTree, subj) {
		return []string{subj.path()}, nil
	}
	var changes []treeChange
	if err := diffTrees(r, parentTree, c.TreeHash, "", &changes); err != nil {
		return nil, err
	}
	want := map[string]bool{}
	if ok {
		want[subj.path()] = true
		want[SigPath(subj.path())] = true
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
// three trees per side whatever the repo's size, and in each only the one
// entry that differs is parsed (gitrepo.DiffTrees).
func diffTrees(r *gitrepo.Reader, a, b plumbing.Hash, prefix string, out *[]treeChange) error {
	if a == b {
		return nil
	}
	ra, err := r.RawTree(a)
	if err != nil {
		return err
	}
	rb, err := r.RawTree(b)
	if err != nil {
		return err
	}
	var inner error // from a subtree, already saying which
	err = gitrepo.DiffTrees(ra, rb, func(x, y *gitrepo.Entry) error {
		switch {
		case y == nil: // only in a: deleted
			inner = oneSided(r, *x, false, prefix, out)
		case x == nil: // only in b: added
			inner = oneSided(r, *y, true, prefix, out)
		case x.Mode == filemode.Dir && y.Mode == filemode.Dir:
			inner = diffTrees(r, x.Hash, y.Hash, prefix+y.Name+"/", out)
		default:
			*out = append(*out, treeChange{path: prefix + y.Name})
		}
		return inner
	})
	if err != nil && err != inner {
		return runner.Errorf(runner.EvidenceRepoUnavailable, "parsing tree %s or %s: %w", a, b, err)
	}
	return err
}

// oneSided records an entry only one side of a diff has: a file as
// itself, a directory as every file in it.
func oneSided(r *gitrepo.Reader, e gitrepo.Entry, added bool, prefix string, out *[]treeChange) error {
	if e.Mode == filemode.Dir {
		a, b := e.Hash, plumbing.ZeroHash
		if added {
			a, b = b, a
		}
		return diffTrees(r, a, b, prefix+e.Name+"/", out)
	}
	*out = append(*out, treeChange{path: prefix + e.Name, added: added, deleted: !added})
	return nil
}

func short(h plumbing.Hash) string { return h.String()[:12] }

func shortOrNone(h plumbing.Hash) string {
	if h.IsZero() {
		return "(none)"
	}
	return short(h)
}
