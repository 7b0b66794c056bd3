package main

import (
	"cmp"
	"container/heap"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/monorepo"
)

// DefaultMaxJobs is how many jobs `nova matrix` fans out to at most unless
// --max-jobs says otherwise: GitHub refuses a matrix of more than 256
// jobs, and one default keeps a workflow that moves between forges the
// same.
const DefaultMaxJobs = 256

// operationDestroy marks a shard member, and a matrix entry, that destroys
// a contract the change deleted rather than running it.
const operationDestroy = "destroy"

// shardMember is one contract a job of the fan-out runs, as its --shard
// lists it.
type shardMember struct {
	// Path is the contract file, slash-separated and relative to the
	// --dir of the job (where nova matrix ran).
	Path string `json:"path"`
	// ID is the contract's id; a destroy needs it, as the checkout no
	// longer has the contract to read it from.
	ID string `json:"id,omitempty"`
	// Operation is "destroy" for a contract the change deleted, else
	// empty.
	Operation string `json:"operation,omitempty"`
}

// parseShard reads a --shard list and refuses one nova matrix would not
// have written: the job would otherwise run something else than the
// selection put in its shard.
func parseShard(v string) ([]shardMember, error) {
	var members []shardMember
	dec := json.NewDecoder(strings.NewReader(v))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&members); err != nil {
		return nil, runner.Errorf(runner.ShardInvalid, "--shard is not a JSON list of contracts as nova matrix writes it: %w", err)
	}
	if dec.More() {
		return nil, runner.Errorf(runner.ShardInvalid, "--shard has more than one JSON value")
	}
	if len(members) == 0 {
		return nil, runner.Errorf(runner.ShardInvalid, "--shard lists no contract")
	}
	seen := map[string]bool{}
	for _, m := range members {
		switch {
		case !monorepo.IsContractFile(m.Path) || path.Clean(m.Path) != m.Path || !isLocalSlash(m.Path):
			return nil, runner.Errorf(runner.ShardInvalid, "--shard: %q is not a contract file inside --dir", m.Path)
		case seen[m.Path]:
			return nil, runner.Errorf(runner.ShardInvalid, "--shard lists %s twice", m.Path)
		case m.Operation != "" && m.Operation != operationDestroy:
			return nil, runner.Errorf(runner.ShardInvalid, "--shard: operation %q of %s: want %q or none", m.Operation, m.Path, operationDestroy)
		case m.Operation == operationDestroy && strings.TrimSpace(m.ID) == "":
			return nil, runner.Errorf(runner.ShardInvalid, "--shard: the destroy of %s names no contract id", m.Path)
		}
		seen[m.Path] = true
	}
	return members, nil
}

// isLocalSlash reports whether a slash-separated path stays below the
// directory it is relative to.
func isLocalSlash(p string) bool {
	return p != "" && !path.IsAbs(p) && p != ".." && !strings.HasPrefix(p, "../")
}

// shardSelection is the selection a job of the fan-out runs: the contracts
// its shard lists, read from the checkout, and the deleted contracts whose
// destroys it lists, as the selection found them deleted.
func shardSelection(root string, members []shardMember) (monorepo.Selection, error) {
	var paths []string
	var deleted []monorepo.Contract
	for _, m := range members {
		if m.Operation == operationDestroy {
			dir, file := path.Dir(path.Dir(m.Path)), path.Join(".nova", path.Base(m.Path))
			deleted = append(deleted, monorepo.Contract{Dir: dir, File: file, ID: m.ID})
			continue
		}
		paths = append(paths, m.Path)
	}
	found, err := monorepo.Pick(root, paths)
	if err != nil {
		return monorepo.Selection{}, err
	}
	slices.SortFunc(deleted, func(a, b monorepo.Contract) int { return cmp.Compare(a.Path(), b.Path()) })
	sel := monorepo.All(found)
	sel.Deleted = deleted
	return sel, nil
}

// weighted is a member of the fan-out with its cost: the number of
// modules its stack resolves to, which is what its plan and apply spend
// their time on.
type weighted struct {
	member shardMember
	entry  matrixEntry
	weight int
}

// shard is one job of a sharded fan-out.
type shard struct {
	index   int
	load    int
	members []weighted
}

// shardHeap orders shards by load, then by index, so that the greedy
// packing is deterministic.
type shardHeap []*shard

func (h shardHeap) Len() int { return len(h) }
func (h shardHeap) Less(i, j int) bool {
	if h[i].load != h[j].load {
		return h[i].load < h[j].load
	}
	return h[i].index < h[j].index
}
func (h shardHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *shardHeap) Push(x any)   { *h = append(*h, x.(*shard)) }
func (h *shardHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	*h = old[:len(old)-1]
	return s
}

// packShards packs items into at most k shards by longest processing
// time first: heaviest item first, each into the least loaded shard. The
// heaviest and lightest shard then differ by at most the heaviest item,
// and the same items always make the same shards, whatever their order.
// Each shard lists its members by path.
func packShards(items []weighted, k int) []*shard {
	items = slices.Clone(items)
	slices.SortFunc(items, func(a, b weighted) int {
		return cmp.Or(cmp.Compare(b.weight, a.weight), cmp.Compare(a.member.Path, b.member.Path), cmp.Compare(a.member.Operation, b.member.Operation))
	})
	n := min(k, len(items))
	h := make(shardHeap, n)
	for i := range h {
		h[i] = &shard{index: i}
	}
	heap.Init(&h)
	for _, it := range items {
		s := h[0]
		s.members = append(s.members, it)
		s.load += it.weight
		heap.Fix(&h, 0)
	}
	shards := make([]*shard, n)
	for _, s := range h {
		slices.SortFunc(s.members, func(a, b weighted) int { return cmp.Compare(a.member.Path, b.member.Path) })
		shards[s.index] = s
	}
	// Shards by their first contract, so that the jobs are listed in an
	// order a reader can follow.
	slices.SortFunc(shards, func(a, b *shard) int { return cmp.Compare(a.members[0].member.Path, b.members[0].member.Path) })
	return shards
}

// shardEntries is the matrix of items: one entry per item, as before
// sharding existed, when they fit in maxJobs; else one entry per shard.
// Every entry carries its shard, so one workflow serves both.
func shardEntries(items []weighted, maxJobs int) ([]matrixEntry, error) {
	if len(items) <= maxJobs {
		out := make([]matrixEntry, 0, len(items))
		for _, it := range items {
			e := it.entry
			doc, err := json.Marshal([]shardMember{it.member})
			if err != nil {
				return nil, runner.Errorf(runner.InternalError, "encoding a shard: %w", err)
			}
			e.Shard = string(doc)
			out = append(out, e)
		}
		return out, nil
	}
	shards := packShards(items, maxJobs)
	out := make([]matrixEntry, 0, len(shards))
	for i, s := range shards {
		members := make([]shardMember, len(s.members))
		for j, m := range s.members {
			members[j] = m.member
		}
		doc, err := json.Marshal(members)
		if err != nil {
			return nil, runner.Errorf(runner.InternalError, "encoding a shard: %w", err)
		}
		out = append(out, matrixEntry{
			Name:      fmt.Sprintf("shard %d of %d (%d contracts)", i+1, len(shards), len(members)),
			Shard:     string(doc),
			Contracts: len(members),
			Weight:    s.load,
		})
	}
	return out, nil
}
