package gitrepo

import (
	"bytes"
	"io"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/google/go-cmp/cmp"
)

// TestTreeFormatMatchesGit: entries upserted in any order come out in
// git's tree order (a directory sorts as if its name ended in "/"), encode
// to the bytes go-git writes for the same tree, and parse back.
func TestTreeFormatMatchesGit(t *testing.T) {
	h := func(b byte) plumbing.Hash { return plumbing.Hash{b} }
	var entries []Entry
	for _, e := range []Entry{
		{Name: "a", Mode: filemode.Dir, Hash: h(1)},
		{Name: "a.b", Mode: filemode.Regular, Hash: h(2)},
		{Name: "a-", Mode: filemode.Regular, Hash: h(3)},
		{Name: "ab", Mode: filemode.Dir, Hash: h(4)},
		{Name: "a.b", Mode: filemode.Regular, Hash: h(5)}, // replaces the first a.b
	} {
		entries = Upsert(entries, e)
	}
	want := []Entry{
		{Name: "a-", Mode: filemode.Regular, Hash: h(3)},
		{Name: "a.b", Mode: filemode.Regular, Hash: h(5)},
		{Name: "a", Mode: filemode.Dir, Hash: h(1)},
		{Name: "ab", Mode: filemode.Dir, Hash: h(4)},
	}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Fatalf("order (-want +got):\n%s", diff)
	}

	gitTree := &object.Tree{}
	for _, e := range want {
		gitTree.Entries = append(gitTree.Entries, object.TreeEntry{Name: e.Name, Mode: e.Mode, Hash: e.Hash})
	}
	obj := &plumbing.MemoryObject{}
	if err := gitTree.Encode(obj); err != nil {
		t.Fatal(err)
	}
	r, _ := obj.Reader()
	gitBytes, _ := io.ReadAll(r)
	if got := EncodeTree(entries); !bytes.Equal(got, gitBytes) {
		t.Fatalf("EncodeTree = %q, go-git writes %q", got, gitBytes)
	}
	parsed, err := ParseTree(gitBytes)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, parsed); diff != "" {
		t.Errorf("ParseTree (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"100644 name", "1x0644 n\x00" + string(make([]byte, 20)), "100644 n\x00short"} {
		if _, err := ParseTree([]byte(bad)); err == nil {
			t.Errorf("ParseTree(%q) accepted a malformed tree", bad)
		}
	}
}
