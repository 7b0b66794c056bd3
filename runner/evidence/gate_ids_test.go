package evidence

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

func TestStoredIDsAnswerFromOneBucket(t *testing.T) {
	tree := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	hdr := idsHeader{Keys: "k", Dir: "contracts/c", Tree: tree}
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{0, 1, idsPerBucket - 1, idsPerBucket, 2*idsPerBucket + 1, 10_000} {
		path := filepath.Join(t.TempDir(), "c.ids")
		hashes := make([]uint64, n)
		for i := range hashes {
			hashes[i] = rng.Uint64()
		}
		want := slices.Sorted(slices.Values(hashes))
		if _, err := writeIDs(path, hdr, slices.Clone(hashes)); err != nil {
			t.Fatal(err)
		}
		f, err := openIDs(path, "k", "contracts/c", tree)
		if err != nil {
			t.Fatalf("%d ids: %v", n, err)
		}
		for _, h := range hashes {
			if held, err := has(f, h); err != nil || !held {
				t.Fatalf("%d ids: has(%x) = %v, %v", n, h, held, err)
			}
		}
		for range 100 {
			h := rng.Uint64()
			if held, err := has(f, h); err != nil || held != slices.Contains(hashes, h) {
				t.Fatalf("%d ids: has(%x) = %v, %v", n, h, held, err)
			}
		}
		got, err := f.all()
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("%d ids: all() = %d hashes, %v; want %d", n, len(got), err, len(want))
		}
		if n == 10_000 && f.bits < 7 {
			t.Errorf("10 000 ids in %d buckets: a question would read more than a bucket's worth", 1<<f.bits)
		}
	}
}

func TestStoredIDsRefuseWhatIsNotTheirs(t *testing.T) {
	tree := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	path := filepath.Join(t.TempDir(), "c.ids")
	hashes := make([]uint64, 1000)
	for i := range hashes {
		hashes[i] = uint64(i) * 0x9e3779b97f4a7c15
	}
	if _, err := writeIDs(path, idsHeader{Keys: "k", Dir: "contracts/c", Tree: tree}, slices.Clone(hashes)); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		keys, dir string
		tree      plumbing.Hash
	}{{"other", "contracts/c", tree}, {"k", "contracts/d", tree}, {"k", "contracts/c", plumbing.ZeroHash}} {
		if _, err := openIDs(path, tc.keys, tc.dir, tc.tree); err == nil {
			t.Errorf("opened for %+v", tc)
		}
	}
	f, err := openIDs(path, "k", "contracts/c", tree)
	if err != nil {
		t.Fatal(err)
	}
	// Alter one stored hash: its bucket no longer answers; the others do.
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	victim := hashes[500]
	sorted := slices.Sorted(slices.Values(hashes))
	at := f.idsOff + 8*int64(slices.Index(sorted, victim))
	b[at+7] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := has(f, victim); err == nil {
		t.Error("an altered bucket answered")
	}
	if _, err := f.all(); err == nil {
		t.Error("all() read past an altered bucket")
	}
	for _, h := range hashes {
		if bucketOf(h, f.bits) == bucketOf(victim, f.bits) {
			continue
		}
		if held, err := has(f, h); err != nil || !held {
			t.Fatalf("an intact bucket: has(%x) = %v, %v", h, held, err)
		}
	}
	// Alter the header: the file no longer opens.
	b[len(gateIDsMagic)+6] ^= 1
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := openIDs(path, "k", "contracts/c", tree); err == nil {
		t.Error("an altered header opened")
	}
}

func has(f *idsFile, h uint64) (bool, error) { return f.hasAny([]uint64{h}) }
