package gitrepo

import (
	"bytes"
	"io"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

const (
	treeHex   = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	parentHex = "a3f1c0ffee0000000000000000000000000000b1"
	otherHex  = "0123456789abcdef0123456789abcdef01234567"
	who       = "Nova <nova@example.com> 1767225600 +0000"
	signature = "-----BEGIN PGP SIGNATURE-----\n\niHUEABYKAB0WIQ\n=abcd\n-----END PGP SIGNATURE-----\n"
)

// gpgsig is signature as a header: continuation lines start with a space.
func gpgsig(sig string) string {
	lines := strings.SplitAfter(strings.TrimSuffix(sig, "\n"), "\n")
	return "gpgsig " + strings.Join(lines, " ") + "\n"
}

// commitCorpus holds commits laid out as Nova and git write them
// (canonical) and as other tools or a tamperer might (the rest).
var commitCorpus = []struct {
	name      string
	raw       string
	canonical bool
}{
	{"signed", "tree " + treeHex + "\nparent " + parentHex + "\nauthor " + who + "\ncommitter " + who + "\n" + gpgsig(signature) + "\nsubject\n\nbody\n", true},
	{"unsigned", "tree " + treeHex + "\nparent " + parentHex + "\nauthor " + who + "\ncommitter " + who + "\n\nsubject\n", true},
	{"root", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\n" + gpgsig(signature) + "\nfirst\n", true},
	{"merge", "tree " + treeHex + "\nparent " + parentHex + "\nparent " + otherHex + "\nauthor " + who + "\ncommitter " + who + "\n" + gpgsig(signature) + "\nmerge\n", true},
	{"empty message", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\n\n", true},
	{"upper-case hash", "tree " + strings.ToUpper(treeHex) + "\nauthor " + who + "\ncommitter " + who + "\n\nm\n", true},
	{"message without newline", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\n\nm", true},
	{"encoding header", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\nencoding ISO-8859-1\n" + gpgsig(signature) + "\nm\n", false},
	{"signature before committer", "tree " + treeHex + "\nauthor " + who + "\n" + gpgsig(signature) + "committer " + who + "\n\nm\n", false},
	{"two signatures", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\n" + gpgsig(signature) + gpgsig(signature) + "\nm\n", false},
	{"sha256 signature too", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\n" + gpgsig(signature) + "gpgsig-sha256 " + "x\n y\n" + "\nm\n", false},
	{"mergetag", "tree " + treeHex + "\nparent " + parentHex + "\nauthor " + who + "\ncommitter " + who + "\nmergetag object " + otherHex + "\n type commit\n" + gpgsig(signature) + "\nm\n", false},
	{"no author", "tree " + treeHex + "\ncommitter " + who + "\n\nm\n", false},
	{"no blank line", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\n", false},
	{"headers only, unterminated", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who, false},
	{"signature unterminated", "tree " + treeHex + "\nauthor " + who + "\ncommitter " + who + "\ngpgsig a\n b", false},
	{"parent after author", "tree " + treeHex + "\nauthor " + who + "\nparent " + parentHex + "\ncommitter " + who + "\n\nm\n", false},
	{"short tree hash", "tree " + treeHex[:39] + "\nauthor " + who + "\ncommitter " + who + "\n\nm\n", false},
	{"no tree", "author " + who + "\ncommitter " + who + "\n\nm\n", false},
	{"empty", "", false},
}

// TestParseCommitReadsAsGoGit: every commit reads as go-git's decoder and
// EncodeWithoutSignature read it (or is refused as they refuse it), and
// the commits Nova writes take the one-pass path.
func TestParseCommitReadsAsGoGit(t *testing.T) {
	for _, tc := range commitCorpus {
		t.Run(tc.name, func(t *testing.T) {
			h := plumbing.ComputeHash(plumbing.CommitObject, []byte(tc.raw))
			_, canonical := parseCanonicalCommit(h, []byte(tc.raw))
			if canonical != tc.canonical {
				t.Errorf("read in one pass: %v, want %v", canonical, tc.canonical)
			}
			compareWithGoGit(t, h, []byte(tc.raw))
		})
	}
}

// TestParseCommitReadsWhatNovaSigns: a commit as the evidence store
// writes it, signed, takes the one-pass path and gives back the exact
// bytes go-git signed.
func TestParseCommitReadsWhatNovaSigns(t *testing.T) {
	when := object.Signature{Name: "Nova", Email: "nova@example.com"}
	c := &object.Commit{Author: when, Committer: when, Message: "decision 3b0c env seq=1\n", TreeHash: plumbing.NewHash(treeHex), ParentHashes: []plumbing.Hash{plumbing.NewHash(parentHex)}, PGPSignature: signature}
	o := &plumbing.MemoryObject{}
	if err := c.Encode(o); err != nil {
		t.Fatal(err)
	}
	raw := readAll(t, o)
	got, ok := parseCanonicalCommit(o.Hash(), raw)
	if !ok {
		t.Fatalf("a commit as Nova writes it is not read in one pass:\n%s", raw)
	}
	signed := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(signed); err != nil {
		t.Fatal(err)
	}
	if want := readAll(t, signed); !bytes.Equal(got.Signed, want) {
		t.Errorf("signed bytes:\n%q\nwant\n%q", got.Signed, want)
	}
	if got.PGPSignature != signature {
		t.Errorf("signature %q, want %q", got.PGPSignature, signature)
	}
}

func FuzzParseCommit(f *testing.F) {
	for _, tc := range commitCorpus {
		f.Add([]byte(tc.raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		compareWithGoGit(t, plumbing.ComputeHash(plumbing.CommitObject, raw), raw)
	})
}

func compareWithGoGit(t *testing.T, h plumbing.Hash, raw []byte) {
	t.Helper()
	got, err := ParseCommit(h, raw)
	// The reference is the path for commits laid out otherwise: go-git's
	// decoder and its EncodeWithoutSignature.
	want, wantErr := decodeCommit(h, raw)
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("error %v, go-git's %v", err, wantErr)
	}
	if err != nil {
		return
	}
	if got.Hash != h || got.TreeHash != want.TreeHash || got.Message != want.Message || got.PGPSignature != want.PGPSignature {
		t.Errorf("read %+v\ngo-git %+v", got, want)
	}
	if !slices.Equal(got.ParentHashes, want.ParentHashes) {
		t.Errorf("parents %v, go-git's %v", got.ParentHashes, want.ParentHashes)
	}
	if !bytes.Equal(got.Signed, want.Signed) {
		t.Errorf("signed bytes\n%q\ngo-git's\n%q", got.Signed, want.Signed)
	}
}

func readAll(t *testing.T, o *plumbing.MemoryObject) []byte {
	t.Helper()
	rd, err := o.Reader()
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(rd)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
