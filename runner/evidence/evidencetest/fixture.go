package evidencetest

import (
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// FixtureV1 is the evidence repo in runner/evidence/testdata/fixture-v1,
// written once by real runs (action/evidence_fixture_test.go) and never
// rewritten: the paths of its public keys and witness, and of a copy of
// its bare repo the caller may change.
type FixtureV1 struct {
	Dir       string // the fixture itself: read only
	Repo      string // a fresh copy of its bare repo
	EventKey  string // cosign.pub
	CommitKey string // commit-key.pub.asc
	Witness   string
}

// OpenFixtureV1 copies the fixture's repo into a temporary directory.
func OpenFixtureV1(t testing.TB) FixtureV1 {
	t.Helper()
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		t.Fatal("cannot locate the evidence fixture")
	}
	dir := filepath.Join(filepath.Dir(file), "..", "testdata", "fixture-v1")
	return FixtureV1{
		Dir:       dir,
		Repo:      CopyBareRepo(t, filepath.Join(dir, "repo.git")),
		EventKey:  filepath.Join(dir, "cosign.pub"),
		CommitKey: filepath.Join(dir, "commit-key.pub.asc"),
		Witness:   filepath.Join(dir, "witness"),
	}
}

// CopyBareRepo copies the bare repo src into a temporary directory and
// adds the empty directories git expects and a checkout does not keep.
func CopyBareRepo(t testing.TB, src string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), "evidence.git")
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"refs/heads", "refs/tags", "objects/info", "objects/pack"} {
		if err := os.MkdirAll(filepath.Join(dst, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// os.CopyFS keeps no write bits beyond the source's; a store that
	// writes into the copy needs them.
	err := filepath.WalkDir(dst, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}
