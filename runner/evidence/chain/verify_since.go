package chain

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// An incremental verification (VerifyOptions.Since) trusts what an earlier
// verification established at a head — a witnessed head — and checks only
// what came after it: every commit from it to the head, signature and
// content, as a full verify would; the event files those commits added,
// signature and layout; and each chain they extend, continued from its
// last event at the since commit (seq and file hash, read from that one
// file). The commits' content check is what lets the rest be skipped: a
// commit that changed or deleted an older event is a finding, so every
// file present at since is still there, unchanged. What it does not
// repeat is the repo-wide "no event id twice" against events before since;
// the new events are checked among themselves.

// verifySince fills v.report with the checks of what head added since.
func (v *verifier) verifySince(ctx context.Context, head, since plumbing.Hash) error {
	commits, err := v.walkSince(ctx, head, since)
	if err != nil {
		return err
	}
	if err := v.checkCommits(ctx, commits); err != nil {
		return err
	}
	return v.checkAdded(ctx, head, since)
}

// walkSince collects the commits of head's history that since's lacks,
// newest first. A since that head's history does not contain is refused:
// the history this machine verified was rewritten, or since is not one of
// its heads, and nothing after it can be trusted to continue it.
func (v *verifier) walkSince(ctx context.Context, head, since plumbing.Hash) ([]*gitrepo.Commit, error) {
	commits, met, err := v.walk(ctx, head, since)
	if err != nil {
		return nil, err
	}
	if !met {
		return nil, runner.Errorf(runner.EvidenceHistoryRewritten,
			"--since %s is not in the history of the head %s: the history was rewritten after it was verified, or it is not a head of this repo; verify without --since",
			short(since), shortOrNone(head))
	}
	return commits, nil
}

// checkAdded checks the event files that differ between since and head,
// contract by contract, each chain continued from where it stood at
// since. The contract directories to read are those whose trees differ,
// so a file a commit added without naming it is read too.
func (v *verifier) checkAdded(ctx context.Context, head, since plumbing.Hash) error {
	r := v.readers[0]
	dirs, err := changedDirs(r, since, head)
	if err != nil {
		return err
	}
	added := map[string][]string{} // contract directory → the paths commits added
	for p := range v.addedBy {
		dir, _, _ := SplitEventPath(p)
		added[dir] = append(added[dir], p)
	}
	type newChain struct {
		dir   string
		tail  Tail
		files []*File
	}
	var chains []newChain
	var all []*File
	for _, dir := range dirs {
		if v.opts.Contract != "" && dir != Dir(v.opts.Contract) {
			continue
		}
		old, err := filesAt(r, since, dir)
		if err != nil {
			return err
		}
		tail, err := v.tailOf(old)
		if err != nil {
			return err
		}
		entries, _, err := ContractEntries(r, head, dir)
		if err != nil {
			return err
		}
		files, layout := ListChain(dir, entries)
		for _, f := range layout {
			if _, had := old.names[f.Path]; !had {
				v.add(f)
			}
		}
		present := map[string]bool{}
		var fresh []*File
		for _, f := range files {
			present[f.Path] = true
			if o, had := old.byPath[f.Path]; !had || o.Blob != f.Blob || o.Sig != f.Sig || o.HasSig != f.HasSig {
				fresh = append(fresh, f)
			}
		}
		for _, p := range added[dir] {
			if !present[p] {
				v.add(Finding{Reason: runner.EvidenceChainBroken, Path: p, Commit: v.addedBy[p].String(), Message: "event recorded by this commit is missing at the head"})
			}
		}
		v.report.Contracts++
		chains = append(chains, newChain{dir: dir, tail: tail, files: fresh})
		all = append(all, fresh...)
	}
	v.report.Events = len(all)
	if err := v.checkFiles(ctx, all); err != nil {
		return err
	}
	v.recordSigners(all)
	ids := map[string]string{}
	for _, c := range chains {
		_, findings := LinkChainFrom(c.dir, c.files, c.tail)
		v.add(findings...)
		v.uniqueIDs(ids, c.files)
	}
	return nil
}

// changedDirs lists the contract directories whose trees differ between
// commits a and b, present at b, by name. Only the shards whose trees
// differ are read, so the cost follows what changed, not the repo.
func changedDirs(r *gitrepo.Reader, a, b plumbing.Hash) ([]string, error) {
	before, err := shardsAt(r, a)
	if err != nil {
		return nil, err
	}
	after, err := shardsAt(r, b)
	if err != nil {
		return nil, err
	}
	var changed []string
	for _, s := range after {
		var had []gitrepo.Entry
		if i := gitrepo.Find(before, s.Name); i >= 0 {
			if before[i].Hash == s.Hash {
				continue
			}
			if had, _, err = shardDirs(r, before[i]); err != nil {
				return nil, err
			}
		}
		dirs, _, err := shardDirs(r, s)
		if err != nil {
			return nil, err
		}
		for _, d := range dirs {
			if i := gitrepo.Find(had, d.Name); i < 0 || had[i].Hash != d.Hash {
				changed = append(changed, d.Name)
			}
		}
	}
	slices.Sort(changed)
	return changed, nil
}

// shardsAt lists contracts/ at commit h: none when h is zero or has no
// contracts/ (which checkTree or the commits' checks report).
func shardsAt(r *gitrepo.Reader, h plumbing.Hash) ([]gitrepo.Entry, error) {
	if h.IsZero() {
		return nil, nil
	}
	c, err := r.Commit(h)
	if err != nil {
		return nil, err
	}
	root, err := r.Tree(c.TreeHash)
	if err != nil {
		return nil, err
	}
	return r.Tree(gitrepo.FindDir(root, ContractsDir))
}

// sinceFiles is a contract directory's event files at the since commit.
type sinceFiles struct {
	files  []*File
	byPath map[string]*File
	names  map[string]bool
}

func filesAt(r *gitrepo.Reader, at plumbing.Hash, dir string) (sinceFiles, error) {
	entries, _, err := ContractEntries(r, at, dir)
	if err != nil {
		return sinceFiles{}, err
	}
	files, _ := ListChain(dir, entries)
	s := sinceFiles{files: files, byPath: make(map[string]*File, len(files)), names: make(map[string]bool, len(entries))}
	for _, f := range files {
		s.byPath[f.Path] = f
	}
	for _, e := range entries {
		s.names[contractPath(dir)+"/"+e.Name] = true
	}
	return s, nil
}

// tailOf is where a chain stood: its highest seq and the sha256 of that
// event file, one blob read.
func (v *verifier) tailOf(s sinceFiles) (Tail, error) {
	if len(s.files) == 0 {
		return Tail{}, nil
	}
	last := s.files[len(s.files)-1]
	body, err := v.readers[0].Blob(last.Blob)
	if err != nil {
		return Tail{}, err
	}
	sum := sha256.Sum256(body)
	return Tail{Seq: last.Seq, Sum: hex.EncodeToString(sum[:])}, nil
}

// checkFiles reads files and checks their signatures and layout, on all
// workers at once.
func (v *verifier) checkFiles(ctx context.Context, files []*File) error {
	return ForEachChunk(len(v.readers), len(files), func(w, lo, hi int) error {
		for _, f := range files[lo:hi] {
			if err := ctx.Err(); err != nil {
				return err
			}
			body, err := v.readers[w].Blob(f.Blob)
			if err != nil {
				return err
			}
			var sig []byte
			if f.HasSig {
				if sig, err = v.readers[w].Blob(f.Sig); err != nil {
					return err
				}
			}
			f.Apply(CheckFile(body, sig, f.HasSig, v.opts.EventKeys))
		}
		return nil
	})
}

// witnessedSince returns the heads of the witness that must be in the
// range an incremental verification walked: those recorded after since.
// The ones before it were checked by the verification that established
// since. A since the witness does not list is refused: nothing then says
// which witnessed heads came after it.
func witnessedSince(witness []string, since plumbing.Hash) ([]string, error) {
	if len(witness) == 0 {
		return nil, nil
	}
	for i := len(witness) - 1; i >= 0; i-- {
		if strings.EqualFold(witness[i], since.String()) {
			return witness[i+1:], nil
		}
	}
	return nil, runner.Errorf(runner.ConfigInvalid, "--since %s is not a head the witness lists: give a head this machine pushed and verified, or verify without --since", short(since))
}
