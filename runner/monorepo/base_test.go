package monorepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// A base contract the checkout holds unchanged is not read from git: its
// identity is the checkout's. The base's blob of svc/a is removed from
// the object store, so reading it would fail the selection.
func TestChangedReadsNoBaseContractTheCheckoutHolds(t *testing.T) {
	m := newMonorepo(t)
	write(t, m.dir, "svc/a/notes.md", "changed\n")
	head := m.commit("a note")
	blob := plumbing.ComputeHash(plumbing.BlobObject, []byte(readFile(t, m.dir, "svc/a/.nova/contract.yml"))).String()
	if err := os.Remove(filepath.Join(m.dir, ".git", "objects", blob[:2], blob[2:])); err != nil {
		t.Fatal(err)
	}
	want := picked{Run: map[string][]string{"svc/a/.nova/contract.yml": {"directory changed"}}}
	if diff := cmp.Diff(want, pickedOf(m.selectChanged(m.base, head))); diff != "" {
		t.Errorf("selection (-want +got):\n%s", diff)
	}
}

// What the base is compared with is the checkout, which runs, not the
// head commit: a contract unchanged between the commits but edited in the
// checkout to another id no longer declares the base's.
func TestChangedComparesTheBaseWithTheCheckout(t *testing.T) {
	m := newMonorepo(t)
	write(t, m.dir, "svc/a/notes.md", "changed\n")
	head := m.commit("a note")
	write(t, m.dir, "svc/a/.nova/contract.yml", contractYAML("0a0a0a0a-0000-4000-8000-00000000000a", "hello"))
	want := picked{
		Run:     map[string][]string{"svc/a/.nova/contract.yml": {"directory changed"}},
		Deleted: []string{"svc/a/.nova/contract.yml " + ids["a"]},
	}
	if diff := cmp.Diff(want, pickedOf(m.selectChanged(m.base, head))); diff != "" {
		t.Errorf("selection (-want +got):\n%s", diff)
	}
}

// Contracts whose blob did not change, moved or deleted, and one left in
// place beside them, each matched by id.
func TestChangedUnchangedBlobs(t *testing.T) {
	m := newMonorepo(t)
	if err := os.Mkdir(filepath.Join(m.dir, "moved"), 0o755); err != nil {
		t.Fatal(err)
	}
	m.rename("svc/echo", "moved/echo")
	m.remove("svc/guarded")
	write(t, m.dir, "svc/m/.nova/one.contract.yml", readFile(t, m.dir, "svc/m/.nova/two.contract.yml"))
	m.remove("svc/m/.nova/two.contract.yml")
	head := m.commit("moves")
	want := picked{
		Run: map[string][]string{
			"moved/echo/.nova/contract.yml": {"contract changed", "moved from svc/echo/.nova/contract.yml"},
			"svc/m/.nova/one.contract.yml":  {"contract changed", "moved from svc/m/.nova/two.contract.yml"},
		},
		Deleted: []string{"svc/guarded/.nova/contract.yml " + ids["d"], "svc/m/.nova/one.contract.yml " + ids["e"]},
	}
	sel := m.selectChanged(m.base, head)
	if diff := cmp.Diff(want, pickedOf(sel)); diff != "" {
		t.Errorf("selection (-want +got):\n%s", diff)
	}
	for _, d := range sel.Deleted {
		if d.Environment != "dev" || d.Stack == "" {
			t.Errorf("deleted %s as %q in %q: want the base's environment and stack", d.Path(), d.Environment, d.Stack)
		}
	}
}

// A tree of the base that cannot be read refuses the selection: listed
// without it, the base would lack the contracts below it, and a contract
// moved or deleted from there would go unreported. svc/echo's tree is the same at both commits, so the diff does
// not read it; only the listing does.
func TestChangedRefusesABaseMissingATree(t *testing.T) {
	m := newMonorepo(t)
	write(t, m.dir, "svc/a/notes.md", "changed\n")
	head := m.commit("a note")
	echo, err := treeOf(t, m.repo, m.base).Tree("svc/echo")
	if err != nil {
		t.Fatal(err)
	}
	h := echo.Hash.String()
	if err := os.Remove(filepath.Join(m.dir, ".git", "objects", h[:2], h[2:])); err != nil {
		t.Fatal(err)
	}
	found, err := Discover(m.dir)
	if err != nil {
		t.Fatal(err)
	}
	sel, err := Changed(t.Context(), Change{Root: m.dir, Contracts: found, Base: m.base, Head: head})
	if runner.ReasonOf(err) != runner.ChangeRangeInvalid {
		t.Fatalf("Changed = %+v, %v; want %s", pickedOf(sel), err, runner.ChangeRangeInvalid)
	}
	if !strings.Contains(err.Error(), h) {
		t.Errorf("error %q does not name the missing tree %s", err, h)
	}
}

func treeOf(t *testing.T, repo *git.Repository, commit string) *object.Tree {
	t.Helper()
	c, err := repo.CommitObject(plumbing.NewHash(commit))
	if err != nil {
		t.Fatal(err)
	}
	tree, err := c.Tree()
	if err != nil {
		t.Fatal(err)
	}
	return tree
}
