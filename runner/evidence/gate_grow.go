package evidence

import (
	"slices"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"

	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// growGateHead carries g, dir's stored gate head at an older tree, forward
// to tree when the directory only gained files since: another runner's
// run of the contract, say, or a state dir restored from a cache. Only
// the added files are read, checked and linked onto g's last event, so
// the gate after someone else's run costs what the new events cost, not
// what the chain's length does (a read of the whole chain took 30 times
// as long at 10 000 events as at 10: BenchmarkGateAfterOther). Anything
// else — a file of g's tree changed or gone, an added one that is not the
// next event of the chain or has a finding — returns nil, and the chain
// is read whole, which reports it as a read from nothing would. The
// caller holds s.mu.
func (s *Store) growGateHead(dir string, g *gateHead, tree plumbing.Hash) *gateHead {
	if g.tree.IsZero() || tree.IsZero() || g.seq == 0 {
		return nil
	}
	added, ok := s.addedFiles(g.tree, tree, chain.BucketName(g.seq))
	if !ok || len(added) == 0 {
		return nil
	}
	files, findings := chain.ListChain(dir, added)
	if len(findings) > 0 {
		return nil
	}
	if _, err := s.checkFiles(files, nil); err != nil {
		return nil
	}
	events, findings := chain.LinkChainFrom(dir, files, chain.Tail{Seq: g.seq, Sum: g.hash})
	if len(findings) > 0 || len(events) != len(files) {
		return nil
	}
	next := &gateHead{tree: tree, seq: g.seq + int64(len(events)), hash: files[len(files)-1].Sum, summary: g.summary.Clone(),
		idsTree: g.idsTree, ids: g.ids, added: slices.Clone(g.added), unsaved: true}
	for _, e := range events {
		next.summary.Fold(e)
		next.added = append(next.added, e.ID)
	}
	return next
}

// addedFiles lists, named as contractFiles names them, the files of
// contract directory tree now that tree was lacks, when every file of was
// is in now unchanged and only was's bucket last (that of its last event)
// and buckets was lacks gained files. ok is false otherwise, or when a
// tree cannot be read. The caller holds s.mu.
func (s *Store) addedFiles(was, now plumbing.Hash, last string) (added []gitrepo.Entry, ok bool) {
	before, err := s.objects.Tree(was)
	if err != nil {
		return nil, false
	}
	after, err := s.objects.Tree(now)
	if err != nil {
		return nil, false
	}
	gone := make(map[string]gitrepo.Entry, len(before))
	for _, e := range before {
		gone[e.Name] = e
	}
	for _, b := range after {
		old, had := gone[b.Name]
		delete(gone, b.Name)
		if had && old == b {
			continue
		}
		if !chain.IsBucket(b.Name) || b.Mode != filemode.Dir || had && (b.Name != last || old.Mode != filemode.Dir) {
			return nil, false
		}
		var kept []gitrepo.Entry
		if had {
			if kept, err = s.objects.Tree(old.Hash); err != nil {
				return nil, false
			}
		}
		files, err := s.objects.Tree(b.Hash)
		if err != nil {
			return nil, false
		}
		// Both lists are in git's order, and kept must be a part of files.
		j := 0
		for _, f := range files {
			if j < len(kept) && kept[j].Name == f.Name {
				if kept[j] != f {
					return nil, false
				}
				j++
				continue
			}
			f.Name = b.Name + "/" + f.Name
			added = append(added, f)
		}
		if j < len(kept) {
			return nil, false
		}
	}
	return added, len(gone) == 0
}
