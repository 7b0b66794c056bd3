package monorepo

import (
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

// shapes is a base and a head commit whose trees differ in every way a
// diff distinguishes: names that sort differently by name and in git's
// order ("a.b" and the directory "a"), a file become a directory and the
// reverse, a mode change alone, a link, a deleted and an added tree, a
// tree repeated at several paths, contracts in all of them.
func shapes(t *testing.T) (*monorepo, string, string) {
	t.Helper()
	m := newMonorepo(t)
	write(t, m.dir, "a.b", "dot\n")
	write(t, m.dir, "a/x", "x\n")
	write(t, m.dir, "a/.nova/contract.yml", contractYAML(ids["r"], "hello"))
	write(t, m.dir, "a.b.c/.nova/contract.yml", "id: abc\nenvironment: dev\n")
	write(t, m.dir, "d/f", "a file in a directory\n")
	write(t, m.dir, "d/.nova/policy/p.rego", "package contract\n")
	write(t, m.dir, "f", "a file\n")
	write(t, m.dir, "run.sh", "#!/bin/sh\n")
	write(t, m.dir, "gone/one/two", "deep\n")
	write(t, m.dir, "gone/.nova/x.contract.yml", "id: gone\nenvironment: qa\n")
	for _, dir := range []string{"same/1", "same/2", "same/3"} {
		write(t, m.dir, dir+"/reports/unit.xml", "<ok/>\n")
		write(t, m.dir, dir+"/reports/.nova/contract.yml", "id: dup\n")
	}
	write(t, m.dir, "same/1/.nova/runs/r/.nova/contract.yml", "id: a-run\n")
	if err := os.MkdirAll(filepath.Join(m.dir, "link", ".nova"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, "../../a/.nova/contract.yml", filepath.Join(m.dir, "link", ".nova", "contract.yml"))
	base := m.commit("shapes")

	m.remove("d")
	write(t, m.dir, "d", "a directory become a file\n")
	m.remove("f")
	write(t, m.dir, "f/g", "a file become a directory\n")
	write(t, m.dir, "f/.nova/contract.yml", "id: f\n")
	if err := os.Chmod(filepath.Join(m.dir, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	m.remove("gone")
	write(t, m.dir, "new/deep/er/file", "added\n")
	write(t, m.dir, "a/x", "x, changed\n")
	write(t, m.dir, "a.b", "dot, changed\n")
	write(t, m.dir, "same/2/reports/unit.xml", "<failed/>\n")
	// git itself: go-git's worktree cannot stage a directory become a
	// file.
	git := func(args ...string) string {
		cmd := exec.Command("git", args...)
		cmd.Dir = m.dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	git("add", "-A")
	git("-c", "user.name=dev", "-c", "user.email=dev@example.com", "commit", "-q", "--no-gpg-sign", "-m", "every shape")
	return m, base, strings.TrimSpace(git("rev-parse", "HEAD"))
}

// The diff reports what go-git's DiffTree reports, in its order: the
// reasons a contract is selected for are listed in the order its files
// came in.
func TestTreesDiffAsGoGit(t *testing.T) {
	m, base, head := shapes(t)
	from, to := treeOf(t, m.repo, base), treeOf(t, m.repo, head)
	changes, err := object.DiffTreeWithOptions(t.Context(), from, to, &object.DiffTreeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, c := range changes {
		want = append(want, c.From.Name)
		if c.To.Name != c.From.Name {
			want = append(want, c.To.Name)
		}
	}
	want = nonEmpty(want)
	var got []string
	if err := newTrees(m.repo.Storer).diff(t.Context(), from, to, func(p string) { got = append(got, p) }); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changed paths (-DiffTree +trees.diff):\n%s", diff)
	}
	for _, p := range []string{"d/f", "d", "f", "f/g", "run.sh", "a.b", "a/x", "gone/one/two", "new/deep/er/file", "same/2/reports/unit.xml"} {
		if !contains(got, p) {
			t.Errorf("%s changed but is not reported: %q", p, got)
		}
	}
}

// The base's contracts are the files go-git's tree walker finds, in its
// order, however often a subtree repeats.
func TestBaseContractsAsTreeWalker(t *testing.T) {
	m, base, _ := shapes(t)
	tree := treeOf(t, m.repo, base)
	var want []string
	w := object.NewTreeWalker(tree, true, nil)
	defer w.Close()
	for {
		name, e, err := w.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if e.Mode != filemode.Dir && e.Mode != filemode.Submodule && IsContractFile(name) && !inRuns(name) {
			want = append(want, name)
		}
	}
	got, err := newTrees(m.repo.Storer).baseContracts(tree, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, c := range got {
		paths = append(paths, c.Path())
	}
	if diff := cmp.Diff(want, paths); diff != "" {
		t.Errorf("base contracts (-TreeWalker +baseContracts):\n%s", diff)
	}
	for _, p := range []string{"a.b.c/.nova/contract.yml", "same/3/reports/.nova/contract.yml", "link/.nova/contract.yml"} {
		if !contains(paths, p) {
			t.Errorf("%s is not listed: %q", p, paths)
		}
	}
}

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

func nonEmpty(ss []string) []string {
	var out []string
	for _, s := range ss {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

func contains(ss []string, s string) bool {
	for _, x := range ss {
		if x == s {
			return true
		}
	}
	return false
}
