package gitrepo

import (
	"bytes"
	"errors"
	"io"
	"slices"
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

// TestDiffTrees: the entries DiffTrees reports are exactly those a merge
// of the two parsed trees finds different, wherever the change lies.
func TestDiffTrees(t *testing.T) {
	h := func(b byte) plumbing.Hash { return plumbing.Hash{b} }
	file := func(name string, b byte) Entry { return Entry{Name: name, Mode: filemode.Regular, Hash: h(b)} }
	dir := func(name string, b byte) Entry { return Entry{Name: name, Mode: filemode.Dir, Hash: h(b)} }
	base := []Entry{file("1-a.json", 1), file("1-a.sig", 2), file("2-b.json", 3), file("2-b.sig", 4), dir("d", 5), file("z", 6)}
	type change struct{ a, b *Entry }
	tests := []struct {
		name string
		a, b []Entry
		want []change
	}{
		{"same", base, base, nil},
		{"both empty", nil, nil, nil},
		{"from empty", nil, base[:2], []change{{nil, &base[0]}, {nil, &base[1]}}},
		{"to empty", base[:1], nil, []change{{&base[0], nil}}},
		{"insert first", base[1:], base, []change{{nil, &base[0]}}},
		{"insert middle", append(slices.Clone(base[:2]), base[4:]...), base, []change{{nil, &base[2]}, {nil, &base[3]}}},
		{"insert last", base[:5], base, []change{{nil, &base[5]}}},
		{"delete", base, append(slices.Clone(base[:1]), base[2:]...), []change{{&base[1], nil}}},
		{"hash changes", base, upsertAll(base, dir("d", 9)), []change{{&base[4], ptr(dir("d", 9))}}},
		{"mode changes", base, upsertAll(base, Entry{Name: "z", Mode: filemode.Executable, Hash: h(6)}), []change{{&base[5], ptr(Entry{Name: "z", Mode: filemode.Executable, Hash: h(6)})}}},
		{"file becomes dir", base, append(slices.Clone(base[:5]), dir("z", 6)), []change{{&base[5], nil}, {nil, ptr(dir("z", 6))}}},
		{"apart", base, upsertAll(base, file("1-a.json", 7), file("z", 8)), []change{{&base[0], ptr(file("1-a.json", 7))}, {&base[5], ptr(file("z", 8))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []change
			err := DiffTrees(EncodeTree(tt.a), EncodeTree(tt.b), func(a, b *Entry) error {
				got = append(got, change{a, b})
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(change{})); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
	good := EncodeTree(base)
	for _, bad := range [][]byte{append(slices.Clone(good), "100644 x"...), append(slices.Clone(good), "1x0644 n\x00"+string(make([]byte, 20))...)} {
		if err := DiffTrees(good, bad, func(a, b *Entry) error { return nil }); !errors.Is(err, ErrMalformedTree) {
			t.Errorf("DiffTrees over a malformed tree = %v, want ErrMalformedTree", err)
		}
	}
}

func upsertAll(entries []Entry, es ...Entry) []Entry {
	entries = slices.Clone(entries)
	for _, e := range es {
		entries = Upsert(entries, e)
	}
	return entries
}

func ptr[T any](v T) *T { return &v }
