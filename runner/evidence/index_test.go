package evidence

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/index"
)

// indexed is what a query sees of an index: the events' envelopes, facets
// and commits, in order.
func indexed(ix *index.Index) []string {
	var out []string
	for _, e := range ix.Events() {
		out = append(out, strings.Join([]string{e.Path(), e.ID, e.RunID, e.Environment, e.Time.String(), e.Commit.String(), strings.Join(e.Facets, ",")}, " "))
	}
	return out
}

func updateIndex(t *testing.T, repo, path string, opts index.IndexOptions) (*index.Index, error) {
	t.Helper()
	r, err := chain.OpenRepo(context.Background(), repo, "", chain.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	return index.UpdateIndex(context.Background(), r, path, opts)
}

// countingFacets tags each event with its type and counts the events it
// was asked about: the index computes facets once per event.
func countingFacets(n *int) func(runner.Event) []string {
	return func(e runner.Event) []string {
		*n++
		return []string{"type=" + e.Type}
	}
}

func TestIndexIsReusedThenExtended(t *testing.T) {
	f := newTamperFixture(t)
	path := filepath.Join(t.TempDir(), "index")
	calls := 0
	opts := index.IndexOptions{Verify: verifyOptions(t, f.keys), Facets: countingFacets(&calls), FacetsVersion: "1"}

	ix, err := updateIndex(t, f.repo, path, opts)
	if err != nil || ix.Check() != nil {
		t.Fatalf("first index: %v, %v", err, ix.Check())
	}
	if !ix.Rebuilt || len(ix.Events()) != 6 || calls != 6 || ix.Head() != f.head(t).String() {
		t.Fatalf("first index: rebuilt %v, %d events, %d facet calls, head %s", ix.Rebuilt, len(ix.Events()), calls, ix.Head())
	}
	first := indexed(ix)

	ix, err = updateIndex(t, f.repo, path, opts)
	if err != nil || ix.Rebuilt || ix.Added != 0 || calls != 6 || !slices.Equal(indexed(ix), first) {
		t.Fatalf("same head: %v, rebuilt %v, added %d, %d facet calls", err, ix.Rebuilt, ix.Added, calls)
	}

	emitN(t, f.store, "c-b", 2)
	emitN(t, f.store, "c-new", 1)
	ix, err = updateIndex(t, f.repo, path, opts)
	if err != nil || ix.Check() != nil {
		t.Fatalf("extended: %v, %v", err, ix.Check())
	}
	if ix.Rebuilt || ix.Added != 3 || calls != 9 {
		t.Errorf("extended: rebuilt %v, added %d, %d facet calls; want only the 3 new events read", ix.Rebuilt, ix.Added, calls)
	}
	rebuilt, err := updateIndex(t, f.repo, filepath.Join(t.TempDir(), "index"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := indexed(ix), indexed(rebuilt); !slices.Equal(got, want) {
		t.Errorf("extended index differs from a rebuilt one:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, e := range ix.Events() {
		ev, err := ix.Read(mustOpen(t, f.repo).NewReader(), &e)
		if err != nil || ev.ID != e.ID || len(ev.Data) == 0 {
			t.Errorf("reading %s back: %v", e.Path(), err)
		}
	}
}

func mustOpen(t *testing.T, repo string) *chain.Repo {
	t.Helper()
	r, err := chain.OpenRepo(context.Background(), repo, "", chain.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// TestIndexIsNotTrustedOverTheRepo: an index file that was damaged, built
// with other keys or by another facets version is rebuilt from the repo.
func TestIndexIsNotTrustedOverTheRepo(t *testing.T) {
	f := newTamperFixture(t)
	path := filepath.Join(t.TempDir(), "index")
	opts := index.IndexOptions{Verify: verifyOptions(t, f.keys), FacetsVersion: "1"}
	if _, err := updateIndex(t, f.repo, path, opts); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(t *testing.T) index.IndexOptions
	}{
		{"byte flipped in the file", func(t *testing.T) index.IndexOptions {
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			b[len(b)/2] ^= 1
			if err := os.WriteFile(path, b, 0o600); err != nil {
				t.Fatal(err)
			}
			return opts
		}},
		{"file truncated", func(t *testing.T) index.IndexOptions {
			if err := os.Truncate(path, 40); err != nil {
				t.Fatal(err)
			}
			return opts
		}},
		{"other keys", func(t *testing.T) index.IndexOptions {
			o := opts
			o.Verify = verifyOptions(t, f.keys, newKeys(t))
			return o
		}},
		{"another facets version", func(t *testing.T) index.IndexOptions {
			o := opts
			o.FacetsVersion = "2"
			return o
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ix, err := updateIndex(t, f.repo, path, tt.change(t))
			if err != nil || !ix.Rebuilt || len(ix.Events()) != 6 {
				t.Fatalf("%v, rebuilt %v, %d events", err, ix != nil && ix.Rebuilt, len(ix.Events()))
			}
		})
	}
}

// TestIndexAgreesWithVerify damages a repo after it was indexed, the ways
// verify's tamper matrix does, and checks that the extended index refuses
// to answer with the reason verify names, as a rebuilt one does.
func TestIndexAgreesWithVerify(t *testing.T) {
	const a2 = "contracts/87/c-a/0xx/2-nova.test.step.json"
	tests := []struct {
		name    string
		tamper  func(t *testing.T, f *tamperFixture)
		rewrite bool
	}{
		{"byte flipped in an event", func(t *testing.T, f *tamperFixture) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[a2] = []byte(strings.Replace(string(files[a2]), "urn:nova:test", "urn:nova:tesT", 1))
			})
		}, false},
		{"event deleted", func(t *testing.T, f *tamperFixture) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				delete(files, a2)
				delete(files, chain.SigPath(a2))
			})
		}, false},
		{"file outside the layout", func(t *testing.T, f *tamperFixture) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files["README.md"] = []byte("hello")
			})
		}, false},
		{"commit made unsigned", func(t *testing.T, f *tamperFixture) {
			emitN(t, f.store, "c-b", 1)
			f.rewriteHead(t, func(c *object.Commit) { c.PGPSignature = "" })
		}, false},
		{"forged event signed by a wrong key", func(t *testing.T, f *tamperFixture) {
			f.forgeEvent(t, "c-b")
		}, false},
		{"history rewritten with a force-push", func(t *testing.T, f *tamperFixture) {
			back := f.commit(t, f.commit(t, f.head(t)).ParentHashes[0]).ParentHashes[0]
			f.setHead(t, back)
			emitN(t, openStore(t, f.repo, f.keys), "c-b", 1)
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTamperFixture(t)
			path := filepath.Join(t.TempDir(), "index")
			opts := index.IndexOptions{Verify: verifyOptions(t, f.keys)}
			if _, err := updateIndex(t, f.repo, path, opts); err != nil {
				t.Fatal(err)
			}
			tt.tamper(t, f)
			rep := verifyRepo(t, f.repo, opts.Verify)
			ix, err := updateIndex(t, f.repo, path, opts)
			if tt.rewrite {
				// Only the machine that indexed the old head can tell; an
				// operator who accepts the new history rebuilds.
				if runner.ReasonOf(err) != runner.EvidenceHistoryRewritten {
					t.Fatalf("extending over a rewrite: %v, want %s", err, runner.EvidenceHistoryRewritten)
				}
				opts.Rebuild = true
				if ix, err := updateIndex(t, f.repo, path, opts); err != nil || ix.Check() != nil {
					t.Fatalf("rebuild after a rewrite: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			rebuilt, err := updateIndex(t, f.repo, filepath.Join(t.TempDir(), "index"), opts)
			if err != nil {
				t.Fatal(err)
			}
			got, want := ix.Check(), rebuilt.Check()
			if got == nil || runner.ReasonOf(got) != runner.ReasonOf(want) || !hasFinding(rep, runner.ReasonOf(got), "", "") {
				t.Fatalf("extended index: %v; rebuilt: %v; verify found:%s", got, want, dumpFindings(rep))
			}
			if !slices.Equal(indexed(ix), indexed(rebuilt)) {
				t.Errorf("extended index holds other events than a rebuilt one:\n%s\nwant\n%s", strings.Join(indexed(ix), "\n"), strings.Join(indexed(rebuilt), "\n"))
			}
			t.Logf("refused with %v", got)
		})
	}
}

// TestIndexCheckIsPerContract: a broken chain fails queries about it and
// about the whole repo, never answers with what is left of it, and does
// not hold back a question about another contract.
func TestIndexCheckIsPerContract(t *testing.T) {
	f := newTamperFixture(t)
	// A forger with push access and the commit key, but not the event
	// key, adds an event to c-b: its commit is in order, its chain is not.
	f.forgeEvent(t, "c-b")
	opts := index.IndexOptions{Verify: verifyOptions(t, f.keys)}
	ix, err := updateIndex(t, f.repo, filepath.Join(t.TempDir(), "index"), opts)
	if err != nil {
		t.Fatal(err)
	}
	if got := runner.ReasonOf(ix.Check("c-b")); got != runner.EvidenceSignatureInvalid {
		t.Errorf("Check(c-b) = %s, want the broken contract named", got)
	}
	if ix.Check() == nil {
		t.Error("Check() of the whole repo passed")
	}
	if err := ix.Check("c-a"); err != nil {
		t.Errorf("Check(c-a) = %v: another contract's break holds it back", err)
	}
	for _, e := range ix.Events() {
		if e.ContractID == "c-b" {
			t.Fatalf("the broken chain's event %s is in the index", e.Path())
		}
	}
}

// TestIndexWitness: a head this machine pushed that the history lost is a
// finding even when the head is where the index was built.
func TestIndexWitness(t *testing.T) {
	f := newTamperFixture(t)
	path := filepath.Join(t.TempDir(), "index")
	opts := index.IndexOptions{Verify: verifyOptions(t, f.keys)}
	back := f.commit(t, f.head(t)).ParentHashes[0]
	f.setHead(t, back)
	if _, err := updateIndex(t, f.repo, path, opts); err != nil {
		t.Fatal(err)
	}
	witness, err := ReadWitness(f.store.WitnessPath())
	if err != nil {
		t.Fatal(err)
	}
	opts.Verify.Witness = witness
	ix, err := updateIndex(t, f.repo, path, opts)
	if err != nil || ix.Rebuilt {
		t.Fatalf("%v, rebuilt %v", err, ix.Rebuilt)
	}
	if got := runner.ReasonOf(ix.Check("c-a")); got != runner.EvidenceHistoryRewritten {
		t.Errorf("Check = %s, want %s", got, runner.EvidenceHistoryRewritten)
	}
}
