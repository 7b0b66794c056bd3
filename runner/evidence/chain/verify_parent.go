package chain

import (
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// expectParent derives the trees a commit's parent has if the commit added
// only the event its message names: the event's bucket without its two
// files, and each directory above it pointing at that. When
// the root so derived hashes to the parent's tree, they are the parent's
// trees, and r keeps them as if it had read them.
//
// Verify checks every commit against its parent, and the parent's trees are
// new to it (it walks from the head down): inflating them from the pack,
// the whole contracts/ directory each time, was the largest cost besides
// the signatures. Deriving them costs a hash of each instead. It reports
// whether they hash to the parent's tree: the commit then added exactly
// the event's two files, and nothing is left to diff (diffTrees would only
// compare the trees derived here with the commit's own). A commit that is
// not what its message says derives nothing, and diffTrees reads the
// trees and reports what differs.
func expectParent(r *gitrepo.Reader, tree, parent plumbing.Hash, subj commitSubject) bool {
	if tree.IsZero() || parent.IsZero() {
		return false
	}
	// The trees on the event's path, root first, and where each names the next.
	path := [...]string{"", ContractsDir, ShardOf(subj.Dir), subj.Dir, BucketName(subj.Seq)}
	const last = len(path) - 1
	var raws [len(path)][]byte
	var at [last][2]int
	h := tree
	for i, name := range path {
		if i > 0 {
			e, start, end, ok := gitrepo.FindRaw(raws[i-1], 0, name)
			if !ok || e.Mode != filemode.Dir {
				return false
			}
			h, at[i-1] = e.Hash, [2]int{start, end}
		}
		raw, err := r.RawTree(h)
		if err != nil {
			return false // diffTrees reads it again and says why
		}
		raws[i] = raw
	}
	file := EventFileName(subj.Seq, subj.Type, "json")
	dir, ok := withoutFiles(raws[last], file, SigPath(file))
	if !ok {
		return false
	}
	var derived [len(path)][]byte
	derived[last] = dir
	var hashes [len(path)]plumbing.Hash
	for i := last; i >= 0; i-- {
		if i < last {
			start, end := at[i][0], at[i][1]
			up := make([]byte, 0, len(raws[i]))
			up = append(up, raws[i][:start]...)
			if len(derived[i+1]) > 0 { // else the directory below is gone
				up = append(up, raws[i][start:end-len(hashes[i+1])]...)
				up = append(up, hashes[i+1][:]...)
			}
			derived[i] = append(up, raws[i][end:]...)
		}
		hashes[i] = gitrepo.TreeHash(derived[i])
	}
	if hashes[0] != parent {
		return false
	}
	for i, t := range derived {
		r.KeepTree(hashes[i], t)
	}
	return true
}

// withoutFiles returns the stored tree b without the files json and sig
// (its signature, which sorts after it), and whether b had both; at most
// one copy, since a bucket is up to two hundred entries.
func withoutFiles(b []byte, json, sig string) ([]byte, bool) {
	e1, s1, end1, ok := gitrepo.FindRaw(b, 0, json)
	if !ok || e1.Mode == filemode.Dir {
		return nil, false
	}
	e2, s2, end2, ok := gitrepo.FindRaw(b, end1, sig)
	if !ok || e2.Mode == filemode.Dir {
		return nil, false
	}
	if end1 == s2 && end2 == len(b) {
		// The event's two files end the bucket, as the newest event's do
		// in every bucket after 0xx, where every seq has as many digits
		// and names sort by seq: the parent's is this one's beginning,
		// shared rather than copied. Nothing changes a tree read or kept,
		// and the capacity keeps an append from writing into this one.
		return b[:s1:s1], true
	}
	out := make([]byte, 0, len(b)-(end1-s1)-(end2-s2))
	out = append(out, b[:s1]...)
	out = append(out, b[end1:s2]...)
	return append(out, b[end2:]...), true
}
