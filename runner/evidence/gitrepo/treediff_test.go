package gitrepo

import (
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
)

// TestFindRawPastLongerNames: in git's order directory c-a sorts as
// "c-a/", after "c-a.b" and "c-a-x" (both below '/'), so a name that
// compares greater byte by byte is not yet past it.
func TestFindRawPastLongerNames(t *testing.T) {
	h := plumbing.NewHash("0123456789012345678901234567890123456789")
	entries := []Entry{
		{Name: "c-a", Mode: filemode.Dir, Hash: h},
		{Name: "c-a-x", Mode: filemode.Dir, Hash: h},
		{Name: "c-a.b", Mode: filemode.Regular, Hash: h},
		{Name: "c-b", Mode: filemode.Regular, Hash: h},
	}
	slices.SortFunc(entries, CompareEntries)
	raw := EncodeTree(entries)
	for _, e := range entries {
		got, _, _, ok := FindRaw(raw, 0, e.Name)
		if !ok || got.Name != e.Name || got.Mode != e.Mode {
			t.Errorf("FindRaw(%q) = %+v, %v; want the entry", e.Name, got, ok)
		}
	}
	for _, name := range []string{"c", "c-", "c-a.", "c-a0", "d"} {
		if got, _, _, ok := FindRaw(raw, 0, name); ok {
			t.Errorf("FindRaw(%q) = %+v; want none", name, got)
		}
	}
}
