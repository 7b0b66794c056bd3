package monorepo

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
)

// monorepo is a real git repository holding a registry of its own and
// contracts over it, committed once: the base every case changes.
type monorepo struct {
	t    *testing.T
	dir  string
	repo *git.Repository
	base string
	when time.Time
}

func newMonorepo(t *testing.T) *monorepo {
	t.Helper()
	dir := t.TempDir()
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	m := &monorepo{t: t, dir: dir, repo: repo, when: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	// The registry Nova ships, as a platform team would keep it in the
	// repository: stack hello deploys hello-message and hello-echo.
	if err := os.CopyFS(filepath.Join(dir, "registry"), registry.Embedded()); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "README.md", "platform\n")
	write(t, dir, "svc/a/.nova/contract.yml", contractYAML(ids["a"], "hello"))
	write(t, dir, "svc/a/notes.md", "a\n")
	write(t, dir, "svc/a/inner/.nova/contract.yml", contractYAML(ids["b"], "hello"))
	write(t, dir, "svc/echo/.nova/contract.yml", contractYAML(ids["c"], "hello-echo"))
	write(t, dir, "svc/guarded/.nova/contract.yml", contractYAML(ids["d"], "hello"))
	write(t, dir, "svc/guarded/.nova/policy/deny.rego", "package contract\n")
	write(t, dir, "svc/guarded/.nova/config.yml", "policy:\n  engines: [rego]\n")
	write(t, dir, "svc/m/.nova/one.contract.yml", contractYAML(ids["e"], "microservice"))
	write(t, dir, "svc/m/.nova/two.contract.yml", contractYAML(ids["f"], "microservice"))
	m.base = m.commit("base")
	return m
}

// commit stages everything in the worktree, deletions included, and
// commits it.
func (m *monorepo) commit(msg string) string {
	m.t.Helper()
	wt, err := m.repo.Worktree()
	if err != nil {
		m.t.Fatal(err)
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		m.t.Fatal(err)
	}
	m.when = m.when.Add(time.Minute)
	h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "dev", Email: "dev@example.com", When: m.when}})
	if err != nil {
		m.t.Fatal(err)
	}
	return h.String()
}

func (m *monorepo) remove(rel string) {
	m.t.Helper()
	if err := os.RemoveAll(filepath.Join(m.dir, filepath.FromSlash(rel))); err != nil {
		m.t.Fatal(err)
	}
}

func (m *monorepo) rename(from, to string) {
	m.t.Helper()
	if err := os.Rename(filepath.Join(m.dir, filepath.FromSlash(from)), filepath.Join(m.dir, filepath.FromSlash(to))); err != nil {
		m.t.Fatal(err)
	}
}

// selectChanged discovers the worktree's contracts and selects those the
// commits base..head touch.
func (m *monorepo) selectChanged(base, head string) Selection {
	m.t.Helper()
	found, err := Discover(m.dir)
	if err != nil {
		m.t.Fatal(err)
	}
	reg, err := registry.Load(os.DirFS(filepath.Join(m.dir, "registry")))
	if err != nil {
		m.t.Fatal(err)
	}
	sel, err := Changed(m.t.Context(), Change{
		Root: m.dir, Contracts: found, Base: base, Head: head,
		RegistryDir: filepath.Join(m.dir, "registry"), Registry: reg,
	})
	if err != nil {
		m.t.Fatal(err)
	}
	return sel
}

// picked is what a case asserts: which contracts run and why, which are
// reported deleted.
type picked struct {
	Run     map[string][]string
	Deleted []string
}

func pickedOf(sel Selection) picked {
	p := picked{Run: map[string][]string{}}
	for _, c := range sel.Contracts {
		p.Run[c.Path()] = c.Why
	}
	for _, d := range sel.Deleted {
		p.Deleted = append(p.Deleted, d.Path()+" "+d.ID)
	}
	return p
}

func TestChanged(t *testing.T) {
	tests := []struct {
		name   string
		change func(m *monorepo)
		want   picked
	}{{
		name:   "a file in a contract's directory",
		change: func(m *monorepo) { write(t, m.dir, "svc/a/notes.md", "a, changed\n") },
		// Not svc/a/inner: a file belongs to the deepest contract
		// directory holding it.
		want: picked{Run: map[string][]string{"svc/a/.nova/contract.yml": {"directory changed"}}},
	}, {
		name:   "a nested contract's directory",
		change: func(m *monorepo) { write(t, m.dir, "svc/a/inner/main.txt", "new\n") },
		want:   picked{Run: map[string][]string{"svc/a/inner/.nova/contract.yml": {"directory changed"}}},
	}, {
		name: "the contract file itself",
		change: func(m *monorepo) {
			write(t, m.dir, "svc/a/.nova/contract.yml", contractYAML(ids["a"], "hello")+"runbook: https://example.com\n")
		},
		want: picked{Run: map[string][]string{"svc/a/.nova/contract.yml": {"contract changed"}}},
	}, {
		name: "one of several contracts in a directory",
		change: func(m *monorepo) {
			write(t, m.dir, "svc/m/.nova/one.contract.yml", contractYAML(ids["e"], "microservice")+"oncall: team-m\n")
		},
		want: picked{Run: map[string][]string{"svc/m/.nova/one.contract.yml": {"contract changed"}}},
	}, {
		name:   "a file shared by several contracts of a directory",
		change: func(m *monorepo) { write(t, m.dir, "svc/m/reports/unit.xml", "<testsuites/>\n") },
		want: picked{Run: map[string][]string{
			"svc/m/.nova/one.contract.yml": {"directory changed"},
			"svc/m/.nova/two.contract.yml": {"directory changed"},
		}},
	}, {
		name: "a registry module used by one stack",
		change: func(m *monorepo) {
			write(t, m.dir, "registry/modules/hello-message/terraform/main.tf", readFile(t, m.dir, "registry/modules/hello-message/terraform/main.tf")+"\n# touched\n")
		},
		want: picked{Run: map[string][]string{
			"svc/a/.nova/contract.yml":       {"registry module hello-message changed"},
			"svc/a/inner/.nova/contract.yml": {"registry module hello-message changed"},
			"svc/guarded/.nova/contract.yml": {"registry module hello-message changed"},
		}},
	}, {
		name: "a registry module used by a stack and named directly",
		change: func(m *monorepo) {
			write(t, m.dir, "registry/modules/hello-echo/module.yaml", readFile(t, m.dir, "registry/modules/hello-echo/module.yaml")+"# touched\n")
		},
		want: picked{Run: map[string][]string{
			"svc/a/.nova/contract.yml":       {"registry module hello-echo changed"},
			"svc/a/inner/.nova/contract.yml": {"registry module hello-echo changed"},
			"svc/echo/.nova/contract.yml":    {"registry module hello-echo changed"},
			"svc/guarded/.nova/contract.yml": {"registry module hello-echo changed"},
		}},
	}, {
		name: "a registry stack",
		change: func(m *monorepo) {
			write(t, m.dir, "registry/stacks/microservice.yaml", readFile(t, m.dir, "registry/stacks/microservice.yaml")+"# touched\n")
		},
		want: picked{Run: map[string][]string{
			"svc/m/.nova/one.contract.yml": {"registry stack microservice changed"},
			"svc/m/.nova/two.contract.yml": {"registry stack microservice changed"},
		}},
	}, {
		name: "a policy",
		change: func(m *monorepo) {
			write(t, m.dir, "svc/guarded/.nova/policy/deny.rego", "package contract\n\ndeny contains \"no\" if false\n")
		},
		want: picked{Run: map[string][]string{"svc/guarded/.nova/contract.yml": {"policy changed"}}},
	}, {
		name: "a new policy file and the policy config",
		change: func(m *monorepo) {
			write(t, m.dir, "svc/guarded/.nova/config.yml", "policy:\n  engines: [rego, checkov]\n")
		},
		want: picked{Run: map[string][]string{"svc/guarded/.nova/contract.yml": {"policy changed"}}},
	}, {
		name:   "a renamed directory",
		change: func(m *monorepo) { m.rename("svc/echo", "svc/echo2") },
		// The contract moved with its id: it runs where it now is, and
		// nothing is reported deleted.
		want: picked{Run: map[string][]string{"svc/echo2/.nova/contract.yml": {"contract changed", "moved from svc/echo/.nova/contract.yml"}}},
	}, {
		name:   "a deleted contract",
		change: func(m *monorepo) { m.remove("svc/echo") },
		want:   picked{Run: map[string][]string{}, Deleted: []string{"svc/echo/.nova/contract.yml " + ids["c"]}},
	}, {
		name:   "a contract file deleted from a directory of several",
		change: func(m *monorepo) { m.remove("svc/m/.nova/two.contract.yml") },
		want:   picked{Run: map[string][]string{}, Deleted: []string{"svc/m/.nova/two.contract.yml " + ids["f"]}},
	}, {
		name: "a contract given a new id",
		change: func(m *monorepo) {
			write(t, m.dir, "svc/echo/.nova/contract.yml", contractYAML("99999999-0000-4000-8000-000000000009", "hello-echo"))
		},
		// The old id's state and chain are orphaned: that is a deletion,
		// whatever the path says.
		want: picked{
			Run:     map[string][]string{"svc/echo/.nova/contract.yml": {"contract changed"}},
			Deleted: []string{"svc/echo/.nova/contract.yml " + ids["c"]},
		},
	}, {
		name:   "a contract broken at the head",
		change: func(m *monorepo) { write(t, m.dir, "svc/echo/.nova/contract.yml", "id: [unclosed\n") },
		// Its run reports what is wrong; it is not called deleted.
		want: picked{Run: map[string][]string{"svc/echo/.nova/contract.yml": {"contract changed"}}},
	}, {
		name:   "nothing a contract depends on",
		change: func(m *monorepo) { write(t, m.dir, "README.md", "platform, changed\n") },
		want:   picked{Run: map[string][]string{}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newMonorepo(t)
			tt.change(m)
			head := m.commit(tt.name)
			sel := m.selectChanged(m.base, head)
			if diff := cmp.Diff(tt.want, pickedOf(sel)); diff != "" {
				t.Errorf("selection (-want +got):\n%s", diff)
			}
			if sel.Base != m.base || sel.Head != head {
				t.Errorf("diffed %s..%s, want %s..%s", sel.Base, sel.Head, m.base, head)
			}
		})
	}
}

// A pull request's base moves on after it branched: what changed on the
// base since must not select anything, as the forge's "files changed"
// would not show it.
func TestChangedDiffsFromTheMergeBase(t *testing.T) {
	m := newMonorepo(t)
	wt, err := m.repo.Worktree()
	if err != nil {
		t.Fatal(err)
	}
	write(t, m.dir, "svc/echo/notes.md", "on main\n")
	mainHead := m.commit("main moves on")
	if err := wt.Checkout(&git.CheckoutOptions{Hash: plumbing.NewHash(m.base), Branch: plumbing.NewBranchReferenceName("feature"), Create: true}); err != nil {
		t.Fatal(err)
	}
	write(t, m.dir, "svc/a/notes.md", "on the branch\n")
	head := m.commit("the change")
	sel := m.selectChanged(mainHead, head)
	want := picked{Run: map[string][]string{"svc/a/.nova/contract.yml": {"directory changed"}}}
	if diff := cmp.Diff(want, pickedOf(sel)); diff != "" {
		t.Errorf("selection (-want +got):\n%s", diff)
	}
	if sel.Base != m.base {
		t.Errorf("diffed from %s, want the merge base %s", sel.Base, m.base)
	}
}

// A root below the repository's top sees only its own contracts, and a
// registry elsewhere in the repository still selects them.
func TestChangedUnderASubdirectory(t *testing.T) {
	m := newMonorepo(t)
	write(t, m.dir, "svc/a/notes.md", "changed\n")
	write(t, m.dir, "registry/modules/hello-echo/module.yaml", readFile(t, m.dir, "registry/modules/hello-echo/module.yaml")+"# touched\n")
	head := m.commit("two changes")
	root := filepath.Join(m.dir, "svc", "a")
	found, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	reg, err := registry.Load(os.DirFS(filepath.Join(m.dir, "registry")))
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Changed(t.Context(), Change{Root: root, Contracts: found, Base: m.base, Head: head, RegistryDir: filepath.Join(m.dir, "registry"), Registry: reg})
	if err != nil {
		t.Fatal(err)
	}
	want := picked{Run: map[string][]string{
		".nova/contract.yml":       {"directory changed", "registry module hello-echo changed"},
		"inner/.nova/contract.yml": {"registry module hello-echo changed"},
	}}
	if diff := cmp.Diff(want, pickedOf(sel)); diff != "" {
		t.Errorf("selection (-want +got):\n%s", diff)
	}
}

func TestChangedRefusesWhatItCannotDiff(t *testing.T) {
	m := newMonorepo(t)
	found, err := Discover(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, ch := range map[string]Change{
		"no base":             {Root: m.dir, Contracts: found, Head: "HEAD"},
		"an unknown base":     {Root: m.dir, Contracts: found, Base: "0123456789012345678901234567890123456789", Head: "HEAD"},
		"an unknown head ref": {Root: m.dir, Contracts: found, Base: m.base, Head: "no-such-branch"},
		"not a repository":    {Root: t.TempDir(), Base: m.base, Head: "HEAD"},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Changed(t.Context(), ch); runner.ReasonOf(err) != runner.ChangeRangeInvalid {
				t.Fatalf("Changed = %v, want %s", err, runner.ChangeRangeInvalid)
			}
		})
	}
}

func TestAllSelectsEveryContract(t *testing.T) {
	cs := []Contract{{Dir: "a", File: ".nova/contract.yml", ID: ids["a"]}, {Dir: "b", File: ".nova/contract.yml", ID: ids["b"]}}
	sel := All(cs)
	if len(sel.Contracts) != 2 || sel.Contracts[1].Contract != cs[1] || len(sel.Deleted) != 0 {
		t.Fatalf("All = %+v", sel)
	}
}

func readFile(t *testing.T, root, rel string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
