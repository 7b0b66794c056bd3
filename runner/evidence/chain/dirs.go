package chain

import (
	"fmt"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// ContractDirs lists the contract directories at head, by name, and a
// finding for every entry outside the layout.
func ContractDirs(r *gitrepo.Reader, head plumbing.Hash) ([]gitrepo.Entry, []Finding, error) {
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
		if e.Name != ContractsDir || e.Mode != filemode.Dir {
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
		if s.Mode == filemode.Dir && ValidDir(s.Name) {
			msg = fmt.Sprintf("contract directory directly in contracts/, not in its shard %s/ (a layout older than this Nova)", ShardOf(s.Name))
		}
		return nil, []Finding{{Reason: runner.EvidenceLayoutInvalid, Path: ContractsDir + "/" + s.Name, Message: msg}}, nil
	}
	entries, err := r.Tree(s.Hash)
	if err != nil {
		return nil, nil, err
	}
	var dirs []gitrepo.Entry
	var findings []Finding
	for _, d := range entries {
		p := ContractsDir + "/" + s.Name + "/" + d.Name
		switch {
		case d.Mode != filemode.Dir || !ValidDir(d.Name):
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: p, Message: "not a contract directory"})
		case ShardOf(d.Name) != s.Name:
			findings = append(findings, Finding{Reason: runner.EvidenceLayoutInvalid, Path: p, Message: fmt.Sprintf("contract directory in shard %s/; it belongs in %s/", s.Name, ShardOf(d.Name))})
		default:
			dirs = append(dirs, d)
		}
	}
	return dirs, findings, nil
}

// SplitEventPath reads contracts/<shard>/<dir>/<bucket>/<seq>-<type>.json.
func SplitEventPath(p string) (dir string, seq int64, typ string) {
	dir, name, _ := SplitContractPath(p)
	n, _ := parseBucketedName(name)
	return dir, n.Seq, n.Type
}
