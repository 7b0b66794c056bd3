package chain

import (
	"context"

	"github.com/go-git/go-git/v5/plumbing"

	"github.com/nova-platform/nova/runner"
)

// checkTree checks the files at head: the layout, and every contract's
// chain as the store reads it, with the files read and their signatures
// checked by all workers at once; then no event id twice in the repo.
// What the commits added is checkPresent's, once they are checked.
func (v *verifier) checkTree(ctx context.Context, head plumbing.Hash) error {
	if head.IsZero() {
		return nil
	}
	r := v.readers[0]
	dirs, findings, err := ContractDirs(r, head)
	if err != nil {
		return err
	}
	v.add(findings...)
	var chains [][]*File
	var all []*File
	for _, d := range dirs {
		v.report.Contracts++
		v.dirTrees[d.Name] = d.Hash
		if v.opts.Contract != "" && d.Name != Dir(v.opts.Contract) {
			continue
		}
		entries, err := ContractFiles(r, d.Hash)
		if err != nil {
			return err
		}
		files, findings := ListChain(d.Name, entries)
		v.add(findings...)
		chains = append(chains, files)
		v.chains[d.Name] = files
		all = append(all, files...)
	}
	v.report.Events = len(all)
	if err := v.checkFiles(ctx, all); err != nil {
		return err
	}
	v.recordSigners(all)
	ids := map[string]string{}
	for _, files := range chains {
		if len(files) == 0 {
			continue
		}
		_, findings := LinkChain(files[0].Dir, files)
		v.add(findings...)
		v.uniqueIDs(ids, files)
	}
	return nil
}

// checkPresent reports every event a commit added that the head lacks:
// a later commit deleted it.
func (v *verifier) checkPresent() {
	present := map[string]bool{}
	for _, files := range v.chains {
		for _, f := range files {
			present[f.Path] = true
		}
	}
	for p, h := range v.addedBy {
		dir, _, _ := SplitContractPath(p)
		if v.opts.Contract != "" && dir != Dir(v.opts.Contract) {
			continue
		}
		if !present[p] {
			v.add(Finding{Reason: runner.EvidenceChainBroken, Path: p, Commit: h.String(), Message: "event recorded by this commit is missing at the head"})
		}
	}
}

// uniqueIDs reports every event of files whose id ids already holds (the
// path it was first seen at), and adds the others to it.
func (v *verifier) uniqueIDs(ids map[string]string, files []*File) {
	for _, f := range files {
		if !f.Decoded || f.Event.ID == "" {
			continue
		}
		if prev, seen := ids[f.Event.ID]; seen {
			v.add(Finding{Reason: runner.EvidenceEventDuplicate, Path: f.Path, Message: "event id " + f.Event.ID + " also in " + prev})
			continue
		}
		ids[f.Event.ID] = f.Path
	}
}
