package templates

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestWorkflowsMatchTheirSource keeps the GitHub and Gitea copies of Nova's
// own workflows byte-identical to workflows-src/.
func TestWorkflowsMatchTheirSource(t *testing.T) {
	sources, err := filepath.Glob("../workflows-src/*.yml")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no workflow sources found: %v", err)
	}
	for _, src := range sources {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{"../.github/workflows", "../.gitea/workflows"} {
			got, err := os.ReadFile(filepath.Join(dir, filepath.Base(src)))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s differs from %s (err %v): run `make workflows`", dir, filepath.Base(src), src, err)
			}
		}
	}
}
