package monorepo

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// contractYAML is a contract as discovery reads it: the id, environment
// and stack, whatever else the file holds.
func contractYAML(id, stack string) string {
	return "apiVersion: nova/v1\nid: " + id + "\nstack: " + stack + "\nenvironment: dev\ninputs:\n  audience: " + id[:8] + "\n"
}

// ids names contracts by the first group of their UUID, for short tables.
var ids = map[string]string{
	"a": "aaaaaaaa-0000-4000-8000-000000000001",
	"b": "bbbbbbbb-0000-4000-8000-000000000002",
	"c": "cccccccc-0000-4000-8000-000000000003",
	"d": "dddddddd-0000-4000-8000-000000000004",
	"e": "eeeeeeee-0000-4000-8000-000000000005",
	"f": "ffffffff-0000-4000-8000-000000000006",
	"r": "12121212-0000-4000-8000-000000000007",
}

func write(t *testing.T, root, rel, content string) {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// found is what a test asserts of a discovered contract.
type found struct {
	Dir, File, ID string
	Err           runner.Reason
}

func summarize(cs []Contract) []found {
	out := make([]found, 0, len(cs))
	for _, c := range cs {
		f := found{Dir: c.Dir, File: c.File, ID: c.ID}
		if c.Err != nil {
			f.Err = runner.ReasonOf(c.Err)
		}
		out = append(out, f)
	}
	return out
}

func TestDiscover(t *testing.T) {
	root, outside := t.TempDir(), t.TempDir()
	write(t, root, ".nova/contract.yml", contractYAML(ids["r"], "hello"))
	write(t, root, "svc/a/.nova/contract.yml", contractYAML(ids["a"], "hello"))
	write(t, root, "svc/a/inner/.nova/contract.yml", contractYAML(ids["b"], "hello"))
	// Several contracts in one directory.
	write(t, root, "svc/m/.nova/one.contract.yml", contractYAML(ids["c"], "hello"))
	write(t, root, "svc/m/.nova/two.contract.yml", contractYAML(ids["d"], "hello"))
	// Not contracts: not directly in .nova, no name before the suffix, a
	// plan bundle's copy in the runs, git's own data.
	write(t, root, "svc/m/.nova/policy/x.contract.yml", contractYAML(ids["e"], "hello"))
	write(t, root, "svc/m/.nova/.contract.yml", contractYAML(ids["e"], "hello"))
	write(t, root, "svc/m/contract.yml", contractYAML(ids["e"], "hello"))
	write(t, root, "svc/a/.nova/runs/20260101T000000Z-1/bundle/.nova/contract.yml", contractYAML(ids["a"], "hello"))
	write(t, root, ".git/x/.nova/contract.yml", contractYAML(ids["a"], "hello"))
	// A contract read as far as discovery can, and no further.
	write(t, root, "svc/broken/.nova/contract.yml", "id: [unclosed\n")
	write(t, root, "svc/noid/.nova/contract.yml", "stack: hello\n")
	// Links: a directory outside the root and one inside it are never
	// descended (the second would list svc/a twice); a contract file that
	// leads outside is listed, refused with the checkout rule's reason.
	write(t, outside, "evil/.nova/contract.yml", contractYAML(ids["f"], "hello"))
	write(t, outside, "secret.yml", contractYAML(ids["f"], "hello"))
	mustSymlink(t, outside, filepath.Join(root, "out"))
	mustSymlink(t, filepath.Join(root, "svc", "a"), filepath.Join(root, "again"))
	if err := os.MkdirAll(filepath.Join(root, "svc", "link", ".nova"), 0o755); err != nil {
		t.Fatal(err)
	}
	mustSymlink(t, filepath.Join(outside, "secret.yml"), filepath.Join(root, "svc", "link", ".nova", "contract.yml"))

	got, err := Discover(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []found{
		{Dir: ".", File: ".nova/contract.yml", ID: ids["r"]},
		{Dir: "svc/a", File: ".nova/contract.yml", ID: ids["a"]},
		{Dir: "svc/a/inner", File: ".nova/contract.yml", ID: ids["b"]},
		{Dir: "svc/broken", File: ".nova/contract.yml", Err: runner.InternalError},
		{Dir: "svc/link", File: ".nova/contract.yml", Err: runner.PathOutsideCheckout},
		{Dir: "svc/m", File: ".nova/one.contract.yml", ID: ids["c"]},
		{Dir: "svc/m", File: ".nova/two.contract.yml", ID: ids["d"]},
		{Dir: "svc/noid", File: ".nova/contract.yml", Err: runner.InternalError},
	}
	if diff := cmp.Diff(want, summarize(got)); diff != "" {
		t.Errorf("Discover (-want +got):\n%s", diff)
	}
	if got[1].Environment != "dev" || got[1].Stack != "hello" || got[1].Path() != "svc/a/.nova/contract.yml" {
		t.Errorf("svc/a: environment %q, stack %q, path %q", got[1].Environment, got[1].Stack, got[1].Path())
	}
}

func TestDiscoverRefusesDuplicateIDs(t *testing.T) {
	root := t.TempDir()
	write(t, root, "svc/a/.nova/contract.yml", contractYAML(ids["a"], "hello"))
	write(t, root, "svc/b/.nova/contract.yml", contractYAML(ids["b"], "hello"))
	write(t, root, "svc/copy/.nova/contract.yml", contractYAML(ids["a"], "hello"))
	_, err := Discover(root)
	if runner.ReasonOf(err) != runner.ContractIDDuplicate {
		t.Fatalf("Discover = %v, want %s", err, runner.ContractIDDuplicate)
	}
	for _, name := range []string{ids["a"], "svc/a/.nova/contract.yml", "svc/copy/.nova/contract.yml"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("the error does not name %s: %v", name, err)
		}
	}
}

func TestDiscoverAnEmptyTree(t *testing.T) {
	got, err := Discover(t.TempDir())
	if err != nil || len(got) != 0 {
		t.Fatalf("Discover = %v, %v; want nothing", got, err)
	}
	if _, err := Discover(filepath.Join(t.TempDir(), "missing")); runner.ReasonOf(err) != runner.ContractDiscoveryFailed {
		t.Fatalf("a missing root: %v, want %s", err, runner.ContractDiscoveryFailed)
	}
}

func TestIsContractFile(t *testing.T) {
	for p, want := range map[string]bool{
		".nova/contract.yml":           true,
		"a/b/.nova/contract.yml":       true,
		"a/.nova/web.contract.yml":     true,
		"a/.nova/.contract.yml":        false,
		"a/.nova/contract.yaml":        false,
		"a/contract.yml":               false,
		"contract.yml":                 false,
		"a/.nova/policy/contract.yml":  false,
		"a/nova/contract.yml":          false,
		"a/.nova/contract.yml/x":       false,
		"a/.nova/web.contract.yml.bak": false,
	} {
		if got := IsContractFile(p); got != want {
			t.Errorf("IsContractFile(%q) = %v, want %v", p, got, want)
		}
	}
}

func mustSymlink(t *testing.T, target, link string) {
	t.Helper()
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
}
