package monorepo

import (
	"context"
	"path"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// Selection is the contracts a command runs, and those it must report
// without running.
type Selection struct {
	// Contracts are the contracts to run, ordered by path.
	Contracts []Selected `json:"contracts"`
	// Deleted are contracts of the base that no contract at the head
	// continues (by id), as they were at the base. Selecting runs nothing
	// for them: only `nova plan|run --changed` turns them into destroys
	// through the gate (action/destroy.go).
	Deleted []Contract `json:"deleted,omitempty"`
	// Base and Head are the commits diffed, when the selection came from
	// a change: Base is the merge base of the given base and head, as a
	// pull request's "files changed" is.
	Base string `json:"base,omitempty"`
	Head string `json:"head,omitempty"`
}

// Selected is a contract chosen to run, and why.
type Selected struct {
	Contract
	// Why lists what about the change touches the contract; empty when
	// every contract was selected.
	Why []string `json:"why,omitempty"`
}

// All selects every contract.
func All(cs []Contract) Selection {
	sel := Selection{Contracts: make([]Selected, 0, len(cs))}
	for _, c := range cs {
		sel.Contracts = append(sel.Contracts, Selected{Contract: c})
	}
	return sel
}

// StackModules answers which L1 modules a stack deploys;
// *registry.Registry implements it.
type StackModules interface {
	StackModules(stack string) ([]string, bool)
}

// Change is what Changed compares.
type Change struct {
	// Root is the directory the contracts were discovered under; it must
	// be inside a git repository's worktree.
	Root string
	// Contracts are the contracts discovered under Root: the head's, as
	// checked out, which is what runs.
	Contracts []Contract
	// Base and Head are revisions (commit ids, branches, tags) of the
	// repository.
	Base, Head string
	// RegistryDir is the registry the contracts resolve through, when it
	// is a directory of this repository; changes below it select the
	// contracts whose stack is a changed stack or deploys a changed module.
	// Empty when the registry is not part of the repository.
	RegistryDir string
	// Registry tells which modules each stack deploys.
	Registry StackModules
}

// Changed selects the contracts a change between Base and Head touches:
//
//   - its contract file changed;
//   - a file in its directory changed (its policies under .nova/policy, its
//     .nova/config.yml, test reports, anything): a file belongs to the
//     deepest contract directory holding it, so a nested contract's change
//     does not select its parent;
//   - its stack, or a module its stack deploys, changed in the registry;
//   - it moved: a contract of the base with its id lives at another path.
//
// A contract of the base whose id no contract at the head declares is
// returned in Deleted. Renames are recognised by contract id rather than
// by git's content similarity, so a moved contract keeps its state and
// evidence chain whatever else changed with it.
func Changed(ctx context.Context, ch Change) (Selection, error) {
	repo, prefix, closeRepo, err := openRepo(ch.Root)
	if err != nil {
		return Selection{}, err
	}
	defer closeRepo()
	base, err := commitOf(repo, "base", ch.Base)
	if err != nil {
		return Selection{}, err
	}
	head, err := commitOf(repo, "head", ch.Head)
	if err != nil {
		return Selection{}, err
	}
	// Like a pull request's "files changed": what head did since it left
	// base, not what base did since.
	if mbs, err := base.MergeBase(head); err == nil && len(mbs) > 0 {
		base = mbs[0]
	} else if err != nil {
		return Selection{}, runner.Errorf(runner.ChangeRangeInvalid, "finding the merge base of %s and %s (a shallow clone needs the history: fetch with depth 0): %w", ch.Base, ch.Head, err)
	}
	baseTree, err := base.Tree()
	if err != nil {
		return Selection{}, runner.Errorf(runner.ChangeRangeInvalid, "reading the tree of base %s: %w", short(base.Hash), err)
	}
	headTree, err := head.Tree()
	if err != nil {
		return Selection{}, runner.Errorf(runner.ChangeRangeInvalid, "reading the tree of head %s: %w", short(head.Hash), err)
	}
	changes, err := object.DiffTreeWithOptions(ctx, baseTree, headTree, &object.DiffTreeOptions{})
	if err != nil {
		return Selection{}, runner.Errorf(runner.ChangeRangeInvalid, "diffing %s..%s: %w", short(base.Hash), short(head.Hash), err)
	}
	before, err := treeContracts(repo.Storer, baseTree, prefix, ch.Contracts)
	if err != nil {
		return Selection{}, err
	}
	regPrefix, err := registryPrefix(repo, ch.RegistryDir)
	if err != nil {
		return Selection{}, err
	}
	s := newSelector(ch.Contracts, before)
	for _, c := range changes {
		for _, name := range []string{c.From.Name, c.To.Name} {
			if name == "" {
				continue
			}
			if rel, ok := under(regPrefix, name); ok && regPrefix != "" {
				s.registryChanged(rel)
			}
			if rel, ok := under(prefix, name); ok {
				s.fileChanged(rel)
			}
		}
	}
	s.registryReach(ch.Registry)
	sel := s.moves()
	sel.Base, sel.Head = base.Hash.String(), head.Hash.String()
	return sel, nil
}

// inRuns reports whether a root-relative path lies in a checkout's runs.
func inRuns(p string) bool {
	return strings.HasPrefix(p, runsDir+"/") || strings.Contains(p, "/"+runsDir+"/")
}

// selector accumulates why each head contract is selected.
type selector struct {
	head   []Contract
	before []Contract
	why    map[int][]string
	// dirs holds every contract directory of the base or the head, for
	// attributing a file to the deepest one: a file of a deleted contract's
	// directory belongs to that contract, not to the directory above.
	dirs            map[string]bool
	modules, stacks map[string]bool
	// byPath and byDir index the head's contracts: a change to every
	// contract of a large repository must not compare each changed file
	// with every contract.
	byPath, byDir map[string][]int
}

func newSelector(head, before []Contract) *selector {
	s := &selector{head: head, before: before, why: map[int][]string{}, dirs: map[string]bool{},
		modules: map[string]bool{}, stacks: map[string]bool{}, byPath: map[string][]int{}, byDir: map[string][]int{}}
	for _, c := range slices.Concat(head, before) {
		s.dirs[c.Dir] = true
	}
	for i, c := range head {
		s.byPath[c.Path()] = append(s.byPath[c.Path()], i)
		s.byDir[c.Dir] = append(s.byDir[c.Dir], i)
	}
	return s
}

func (s *selector) mark(i int, why string) {
	if !slices.Contains(s.why[i], why) {
		s.why[i] = append(s.why[i], why)
	}
}

// fileChanged attributes one changed file (relative to the root).
func (s *selector) fileChanged(p string) {
	if inRuns(p) {
		return
	}
	if IsContractFile(p) {
		// A contract file is its own contract's, not its neighbours':
		// editing a.contract.yml says nothing about b.contract.yml.
		for _, i := range s.byPath[p] {
			s.mark(i, "contract changed")
		}
		return
	}
	dir := s.owner(p)
	if dir == "" {
		return
	}
	why := "directory changed"
	if isPolicy(strings.TrimPrefix(p, dir+"/")) {
		why = "policy changed"
	}
	for _, i := range s.byDir[dir] {
		s.mark(i, why)
	}
}

// isPolicy reports whether a path relative to a contract directory is part
// of what judges the contract: its policies and its policy configuration
// (stages/policy reads .nova/config.yml, .nova/policy and .nova/kyverno by
// default; a config pointing elsewhere points inside the directory, which
// selects the contract as a directory change).
func isPolicy(rel string) bool {
	return rel == ".nova/config.yml" || strings.HasPrefix(rel, ".nova/policy/") || strings.HasPrefix(rel, ".nova/kyverno/")
}

// owner is the deepest contract directory holding p, "" for none.
func (s *selector) owner(p string) string {
	for d := path.Dir(p); ; d = path.Dir(d) {
		if s.dirs[d] {
			return d
		}
		if d == "." || d == "/" {
			return ""
		}
	}
}

// registryChanged notes the module or stack a changed registry file
// belongs to (rel is relative to the registry dir).
func (s *selector) registryChanged(rel string) {
	parts := strings.Split(rel, "/")
	switch {
	case len(parts) >= 3 && parts[0] == "modules":
		s.modules[parts[1]] = true
	case len(parts) == 2 && parts[0] == "stacks" && strings.HasSuffix(parts[1], ".yaml"):
		s.stacks[strings.TrimSuffix(parts[1], ".yaml")] = true
	}
}

// registryReach selects the contracts whose stack changed or deploys a
// changed module.
func (s *selector) registryReach(reg StackModules) {
	if len(s.modules) == 0 && len(s.stacks) == 0 {
		return
	}
	for i, c := range s.head {
		if c.Stack == "" {
			continue
		}
		if s.stacks[c.Stack] {
			s.mark(i, "registry stack "+c.Stack+" changed")
		}
		if s.modules[c.Stack] {
			// The stack is a module named directly.
			s.mark(i, "registry module "+c.Stack+" changed")
			continue
		}
		if reg == nil {
			continue
		}
		mods, _ := reg.StackModules(c.Stack)
		for _, m := range mods {
			if s.modules[m] {
				s.mark(i, "registry module "+m+" changed")
			}
		}
	}
}

// moves matches the base's contracts to the head's by id: one found at
// another path moved (and is selected); one found nowhere was deleted.
func (s *selector) moves() Selection {
	byID, byPath := map[string]int{}, map[string]int{}
	for i, c := range s.head {
		if c.ID != "" {
			byID[c.ID] = i
		}
		byPath[c.Path()] = i
	}
	var sel Selection
	for _, b := range s.before {
		if i, ok := byID[b.ID]; ok && b.ID != "" {
			if s.head[i].Path() != b.Path() {
				s.mark(i, "moved from "+b.Path())
			}
			continue
		}
		if i, ok := byPath[b.Path()]; ok && (b.ID == "" || s.head[i].ID == "") {
			// Unreadable at the base or at the head, present at both: no
			// deletion anyone can name, and the head's run (selected,
			// since its file changed) says what is wrong with it now.
			continue
		}
		sel.Deleted = append(sel.Deleted, b)
	}
	for i, c := range s.head {
		if len(s.why[i]) > 0 {
			sel.Contracts = append(sel.Contracts, Selected{Contract: c, Why: s.why[i]})
		}
	}
	return sel
}
