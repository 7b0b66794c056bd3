package evidence

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
)

// TestLastWitnessReadsTheLastHead checks the read from the file's end
// against the whole-file read it replaces in sync, on tails that are torn,
// foreign or longer than its first window.
func TestLastWitnessReadsTheLastHead(t *testing.T) {
	hash := func(i int) string { return fmt.Sprintf("%040x", i+1) }
	many := func(n int) string {
		var b strings.Builder
		for i := range n {
			b.WriteString(hash(i) + "\n")
		}
		return b.String()
	}
	cases := map[string]string{
		"empty":              "",
		"one":                hash(0) + "\n",
		"no final newline":   hash(0) + "\n" + hash(1),
		"torn last line":     many(3) + hash(9)[:17],
		"many":               many(5000),
		"many then torn":     many(5000) + "0123abc",
		"long junk tail":     many(40) + strings.Repeat("x", 3000) + "\n" + strings.Repeat("y", 700),
		"only junk":          strings.Repeat("junk\n", 400),
		"annotated lines":    hash(1) + " pushed\n" + hash(2) + " pushed\n",
		"blank lines at end": many(2) + "\n\n\n",
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "witness")
			if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
			heads, err := readWitness(path)
			if err != nil {
				t.Fatal(err)
			}
			want := plumbing.ZeroHash
			if len(heads) > 0 {
				want = heads[len(heads)-1]
			}
			got, err := lastWitness(path)
			if err != nil {
				t.Fatal(err)
			}
			if got != want {
				t.Errorf("lastWitness = %s, the whole file's last head is %s", got, want)
			}
		})
	}
	t.Run("missing", func(t *testing.T) {
		got, err := lastWitness(filepath.Join(t.TempDir(), "witness"))
		if err != nil || !got.IsZero() {
			t.Errorf("lastWitness of a missing file = %s, %v; want none", got, err)
		}
	})
}
