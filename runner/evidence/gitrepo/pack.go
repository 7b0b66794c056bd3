package gitrepo

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/format/idxfile"
	"github.com/go-git/go-git/v5/plumbing/storer"
)

// A batch goes into the repo as one pack, not as loose objects: one file
// to write and sync instead of five or so per event with their fan-out
// directories, which made the syncs most of a push's time.
//
// Packs accumulate, one per push, and every object lookup consults each
// pack's index, so once there are more than maxPacks the small ones are
// merged (geometrically, as `git repack --geometric=2` does: each object is
// rewritten a logarithmic number of times over the repo's life).
const maxPacks = 16

// packInfo is a pack in a repo's pack directory.
type packInfo struct {
	base    string // path without .pack/.idx
	objects uint32
}

// listPacks lists the packs of packDir with their object counts, read from
// each index's fan-out table. Packs git marked to keep (.keep) are left
// out: they are never merged.
func listPacks(packDir string) ([]packInfo, error) {
	entries, err := os.ReadDir(packDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var packs []packInfo
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".pack")
		if !ok || !strings.HasPrefix(name, "pack-") {
			continue
		}
		base := filepath.Join(packDir, name)
		if _, err := os.Stat(base + ".keep"); err == nil {
			continue
		}
		n, err := idxObjects(base + ".idx")
		if err != nil {
			// Being written or removed by someone else right now: not ours
			// to merge this time.
			continue
		}
		packs = append(packs, packInfo{base: base, objects: n})
	}
	return packs, nil
}

// idxObjects reads the object count of a version 2 pack index: the last
// entry of the fan-out table after the 8-byte header.
func idxObjects(path string) (uint32, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	var b [4]byte
	if _, err := f.ReadAt(b[:], 8+255*4); err != nil {
		return 0, err
	}
	return binary.BigEndian.Uint32(b[:]), nil
}

// toMerge picks the packs to merge so that, smallest first, each pack left
// alone holds at least twice the objects of all smaller ones together; nil
// while there are few enough packs.
func toMerge(packs []packInfo) []packInfo {
	if len(packs) <= maxPacks {
		return nil
	}
	packs = slices.Clone(packs)
	slices.SortFunc(packs, func(a, b packInfo) int { return int(int64(a.objects) - int64(b.objects)) })
	var sum uint64
	split := 0
	for i, p := range packs {
		sum += uint64(p.objects)
		if i+1 < len(packs) && uint64(packs[i+1].objects) < 2*sum {
			split = i + 2
		}
	}
	if split < 2 {
		// Already geometric; merge the two smallest so the count goes down.
		split = 2
	}
	return packs[:split]
}

// consolidate merges the small packs of the repo at gitDir into one when
// there are too many. The merged pack is durable before any pack it
// replaces is removed, so every object is in a named pack at every moment;
// readers re-list the packs when a read misses, after waiting for the
// merge to finish (settle). One merger runs at a time (mergeLock); the
// others skip, and a later push merges.
func consolidate(gitDir string, sync func(paths ...string) error) error {
	packDir := filepath.Join(gitDir, "objects", "pack")
	packs, err := listPacks(packDir)
	if err != nil || toMerge(packs) == nil {
		return err
	}
	unlock, ok := mergeLock(gitDir)
	if !ok {
		return nil
	}
	defer unlock()
	if packs, err = listPacks(packDir); err != nil {
		return err
	}
	merge := toMerge(packs)
	if merge == nil {
		return nil
	}
	var sources []*packSource
	defer func() {
		for _, s := range sources {
			s.f.Close()
		}
	}()
	seen := map[plumbing.Hash]bool{}
	var count uint32
	for _, p := range merge {
		s, err := openPackSource(p.base)
		if err != nil {
			return err
		}
		sources = append(sources, s)
		for _, e := range s.entries {
			if !seen[e.Hash] {
				seen[e.Hash] = true
				count++
			}
		}
	}
	// An offset delta whose base the merged pack already holds is copied
	// with the distance to its base's new place (Nova's own packs keep a
	// batch's tree versions so); any other delta (a git gc's reference
	// deltas, say) is stored whole: only the objects of the storage can
	// resolve it.
	var st storer.EncodedObjectStorer
	at := map[plumbing.Hash]uint64{} // where the merged pack holds each object
	merged, err := writePack(packDir, count, func(pw *packWriter) error {
		for _, s := range sources {
			for i, e := range s.entries {
				if _, done := at[e.Hash]; done {
					continue
				}
				at[e.Hash] = pw.off
				entry, err := s.entry(i)
				if err != nil {
					return err
				}
				if t := plumbing.ObjectType((entry[0] >> 4) & 7); t.Valid() && !t.IsDelta() {
					if err := pw.raw(e.Hash, entry, e.CRC32); err != nil {
						return err
					}
					continue
				}
				if moved, ok, err := s.moveDelta(i, entry, pw.off, at); err != nil {
					return err
				} else if ok {
					if err := pw.entry(e.Hash, moved); err != nil {
						return err
					}
					continue
				}
				if st == nil {
					repo, closeRepo, err := OpenLocal(gitDir)
					if err != nil {
						return err
					}
					defer closeRepo()
					st = repo.Storer
				}
				if err := copyObject(pw, st, e.Hash); err != nil {
					return err
				}
			}
		}
		return nil
	}, sync)
	if err != nil {
		return err
	}
	if err := sync(packDir); err != nil {
		return err
	}
	for _, p := range merge {
		if p.base+".pack" == merged {
			continue // the merge reproduced one of its inputs
		}
		// .pack first: go-git lists packs by it, and a listed pack whose
		// index is gone fails every read of the repo.
		if err := os.Remove(p.base + ".pack"); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		others, _ := filepath.Glob(p.base + ".*")
		for _, f := range others {
			_ = os.Remove(f)
		}
	}
	return nil
}

// copyObject adds object h, read from st, to pw whole.
func copyObject(pw *packWriter, st storer.EncodedObjectStorer, h plumbing.Hash) error {
	obj, err := st.EncodedObject(plumbing.AnyObject, h)
	if err != nil {
		return err
	}
	r, err := obj.Reader()
	if err != nil {
		return err
	}
	defer r.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	return pw.object(h, obj.Type(), b)
}

// packSource is a pack being merged: its file, and its index's entries in
// the order of their offsets, so each entry ends where the next begins.
type packSource struct {
	f       *os.File
	size    int64
	entries []idxfile.Entry
}

func openPackSource(base string) (*packSource, error) {
	b, err := os.ReadFile(base + ".idx")
	if err != nil {
		return nil, err
	}
	idx := idxfile.NewMemoryIndex()
	if err := idxfile.NewDecoder(bytes.NewReader(b)).Decode(idx); err != nil {
		return nil, fmt.Errorf("reading %s.idx: %w", filepath.Base(base), err)
	}
	it, err := idx.EntriesByOffset()
	if err != nil {
		return nil, err
	}
	defer it.Close()
	s := &packSource{}
	for {
		e, err := it.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
		s.entries = append(s.entries, *e)
	}
	if s.f, err = os.Open(base + ".pack"); err != nil {
		return nil, err
	}
	fi, err := s.f.Stat()
	if err != nil {
		s.f.Close()
		return nil, err
	}
	s.size = fi.Size() - 20 // the trailer
	return s, nil
}

// moveDelta rewrites entry i, when it is an offset delta whose base the
// merged pack holds (at), for its new place off; ok is false for any
// other delta. The entry must match its recorded checksum first: the
// rewritten one gets a new one.
func (s *packSource) moveDelta(i int, entry []byte, off uint64, at map[plumbing.Hash]uint64) (moved []byte, ok bool, err error) {
	t, _, n, err := entryHeader(entry)
	if err != nil || t != plumbing.OFSDeltaObject {
		return nil, false, err
	}
	rel, used, err := ofsDeltaOffset(entry[n:])
	if err != nil {
		return nil, false, err
	}
	base := int64(s.entries[i].Offset) - rel
	j := sort.Search(len(s.entries), func(j int) bool { return int64(s.entries[j].Offset) >= base })
	if j == len(s.entries) || int64(s.entries[j].Offset) != base {
		return nil, false, fmt.Errorf("%s: delta of %s names no entry as its base", filepath.Base(s.f.Name()), s.entries[i].Hash)
	}
	newBase, ok := at[s.entries[j].Hash]
	if !ok || newBase >= off {
		return nil, false, nil
	}
	if crc32.ChecksumIEEE(entry) != s.entries[i].CRC32 {
		return nil, false, fmt.Errorf("object %s: its pack entry does not match the checksum its index records", s.entries[i].Hash)
	}
	moved = AppendOfsDelta(slices.Clone(entry[:n]), off-newBase)
	return append(moved, entry[n+used:]...), true, nil
}

// entry reads the i-th entry, header and compressed content.
func (s *packSource) entry(i int) ([]byte, error) {
	start, end := int64(s.entries[i].Offset), s.size
	if i+1 < len(s.entries) {
		end = int64(s.entries[i+1].Offset)
	}
	if start < 12 || end <= start {
		return nil, fmt.Errorf("%s: entry of %s at %d is out of bounds", filepath.Base(s.f.Name()), s.entries[i].Hash, start)
	}
	b := make([]byte, end-start)
	if _, err := s.f.ReadAt(b, start); err != nil {
		return nil, err
	}
	return b, nil
}
