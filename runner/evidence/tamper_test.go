package evidence

import (
	"context"
	"crypto"
	"io"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// TestTamperMatrix damages a healthy evidence repo in each way the issue
// lists and checks verify names the damage with its reason code. Tampering
// commits are signed with the allowed commit key where the attack allows
// it, so detection must come from the event layer, not just from an
// unsigned commit.
func TestTamperMatrix(t *testing.T) {
	const a2 = "contracts/87/c-a/0xx/2-nova.test.step.json"
	tests := []struct {
		name   string
		tamper func(t *testing.T, f *tamperFixture) (path, commit string)
		want   runner.Reason
	}{{
		name: "byte flipped in an event",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[a2] = []byte(strings.Replace(string(files[a2]), "urn:nova:test", "urn:nova:tesT", 1))
			})
			return a2, ""
		},
		want: runner.EvidenceSignatureInvalid,
	}, {
		name: "event deleted",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				delete(files, a2)
				delete(files, chain.SigPath(a2))
			})
			return "contracts/87/c-a", ""
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "last event deleted",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			last := "contracts/87/c-a/0xx/4-nova.test.step.json"
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				delete(files, last)
				delete(files, chain.SigPath(last))
			})
			return last, ""
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "two events swapped",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			a3 := "contracts/87/c-a/0xx/3-nova.test.step.json"
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[a2], files[a3] = files[a3], files[a2]
				files[chain.SigPath(a2)], files[chain.SigPath(a3)] = files[chain.SigPath(a3)], files[chain.SigPath(a2)]
			})
			return a2, ""
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "sig replaced by another event's",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[chain.SigPath(a2)] = files["contracts/7b/c-b/0xx/1-nova.test.step.sig"]
			})
			return a2, ""
		},
		want: runner.EvidenceSignatureInvalid,
	}, {
		name: "commit made unsigned",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			h := f.rewriteHead(t, func(c *object.Commit) { c.PGPSignature = "" })
			return "", h.String()
		},
		want: runner.EvidenceCommitUnsigned,
	}, {
		name: "commit signature copied from another commit",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			other := f.commit(t, f.head(t)).ParentHashes[0]
			sig := f.commit(t, other).PGPSignature
			h := f.rewriteHead(t, func(c *object.Commit) { c.PGPSignature = sig })
			return "", h.String()
		},
		want: runner.EvidenceCommitSignatureInvalid,
	}, {
		name: "commit signed by a key not allowed",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			rogue := newKeys(t)
			// The rogue writer allows the existing history's key, or it
			// would refuse to build on it; verify does not allow its own.
			s, err := Open(t.Context(), Config{Repo: f.repo, StateDir: t.TempDir(), Keys: signing.Keys{Events: f.keys.Events, Commit: rogue.Commit}, AllowedCommitKeys: f.keys.Commit.KeyRing()}, WithRetry(testRetry), WithLogf(t.Logf))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			emitN(t, s, "c-a", 1)
			return "", f.head(t).String()
		},
		want: runner.EvidenceCommitKeyUnknown,
	}, {
		name: "forged event signed by a wrong key",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.forgeEvent(t, "c-b")
			return "contracts/7b/c-b/0xx/3-nova.test.step.json", f.head(t).String()
		},
		want: runner.EvidenceSignatureInvalid,
	}, {
		name: "file outside the layout",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files["README.md"] = []byte("hello")
			})
			return "README.md", ""
		},
		want: runner.EvidenceLayoutInvalid,
	}, {
		name: "event moved into another bucket",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			return f.moveEvent(t, a2, "contracts/87/c-a/1xx/2-nova.test.step.json"), ""
		},
		want: runner.EvidenceLayoutInvalid,
	}, {
		name: "event directly in the contract directory",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			return f.moveEvent(t, a2, "contracts/87/c-a/2-nova.test.step.json"), ""
		},
		want: runner.EvidenceLayoutInvalid,
	}, {
		name: "contract directory in another shard",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.moveDir(t, "contracts/87/c-a/", "contracts/7b/c-a/")
			return "contracts/7b/c-a", ""
		},
		want: runner.EvidenceLayoutInvalid,
	}, {
		name: "contract directory directly in contracts/",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			f.moveDir(t, "contracts/87/c-a/", "contracts/c-a/")
			return "contracts/c-a", ""
		},
		want: runner.EvidenceLayoutInvalid,
	}, {
		name: "history rewritten with a force-push",
		tamper: func(t *testing.T, f *tamperFixture) (string, string) {
			dropped := f.head(t)
			// Reset the branch two events back and write a different
			// event there, with valid keys: only the witness can tell.
			back := f.commit(t, f.commit(t, dropped).ParentHashes[0]).ParentHashes[0]
			f.setHead(t, back)
			other := openStore(t, f.repo, f.keys)
			emitN(t, other, "c-b", 1)
			return "", dropped.String()
		},
		want: runner.EvidenceHistoryRewritten,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newTamperFixture(t)
			opts := verifyOptions(t, f.keys)
			var err error
			if opts.Witness, err = ReadWitness(f.store.WitnessPath()); err != nil || len(opts.Witness) != 2 { // one head per batch: c-a's, then c-b's
				t.Fatalf("witness: %d heads, %v", len(opts.Witness), err)
			}
			if rep := verifyRepo(t, f.repo, opts); !rep.OK() {
				t.Fatalf("healthy repo does not verify:%s", dumpFindings(rep))
			}
			path, commit := tt.tamper(t, f)
			rep := verifyRepo(t, f.repo, opts)
			if !hasFinding(rep, tt.want, path, commit) {
				t.Fatalf("verify did not report %s at path %q commit %q; findings:%s", tt.want, path, commit, dumpFindings(rep))
			}
			t.Logf("findings:%s", dumpFindings(rep))
		})
	}
}

// TestStoreRefusesToExtendRewrittenHistory: a writer that sees its own
// pushed head gone stops instead of signing on top of the rewrite.
func TestStoreRefusesToExtendRewrittenHistory(t *testing.T) {
	f := newTamperFixture(t)
	dropped := f.head(t)
	f.setHead(t, f.commit(t, dropped).ParentHashes[0])
	err := f.store.Record(context.Background(), runner.Event{ID: "auth-1", Type: runner.EventApplyAuthorized, ContractID: "c-a", SpecVersion: "1.0"})
	if runner.ReasonOf(err) != runner.EvidenceHistoryRewritten {
		t.Fatalf("Record after a force-push = %v, want EVIDENCE_HISTORY_REWRITTEN", err)
	}
	if f.head(t) == dropped {
		t.Fatal("test broken: head not rewritten")
	}
}

// tamperFixture is a healthy repo: contract c-a with 4 events, c-b with 2.
type tamperFixture struct {
	repo  string
	keys  signing.Keys
	store *Store
	git   *git.Repository
}

func newTamperFixture(t *testing.T) *tamperFixture {
	f := &tamperFixture{repo: newBareRepo(t), keys: newKeys(t)}
	f.store = openStore(t, f.repo, f.keys)
	emitN(t, f.store, "c-a", 4)
	emitN(t, f.store, "c-b", 2)
	var err error
	if f.git, err = git.PlainOpen(f.repo); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *tamperFixture) head(t *testing.T) plumbing.Hash { return headOf(t, f.repo) }

// forgeEvent adds an event to contract signed by a key verify does not
// allow, through a store that reads the history (it trusts the real event
// key, as a writer after a rotation would) and signs commits with the real
// commit key: the commit is in order, the event is not.
func (f *tamperFixture) forgeEvent(t *testing.T, contract string) {
	t.Helper()
	rogue := newKeys(t)
	s, err := Open(t.Context(), Config{Repo: f.repo, StateDir: t.TempDir(), Keys: signing.Keys{Events: rogue.Events, Commit: f.keys.Commit}, TrustedEventKeys: []crypto.PublicKey{f.keys.Events.PublicKey()}}, WithRetry(testRetry), WithLogf(t.Logf))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	emitN(t, s, contract, 1)
}

func (f *tamperFixture) commit(t *testing.T, h plumbing.Hash) *object.Commit {
	t.Helper()
	c, err := f.git.CommitObject(h)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// setHead moves the branch as a force-push would.
func (f *tamperFixture) setHead(t *testing.T, h plumbing.Hash) {
	t.Helper()
	if err := f.git.Storer.SetReference(plumbing.NewHashReference(plumbing.NewBranchReferenceName(chain.DefaultBranch), h)); err != nil {
		t.Fatal(err)
	}
}

// rewriteFiles commits a changed copy of the head's files on top of the
// head, signed by signer (nil: unsigned), and moves the branch to it.
func (f *tamperFixture) rewriteFiles(t *testing.T, signer *signing.CommitSigner, mutate func(map[string][]byte)) plumbing.Hash {
	t.Helper()
	head := f.commit(t, f.head(t))
	tree, err := head.Tree()
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]byte{}
	err = tree.Files().ForEach(func(file *object.File) error {
		r, err := file.Reader()
		if err != nil {
			return err
		}
		defer r.Close()
		files[file.Name], err = io.ReadAll(r)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	mutate(files)
	root := f.writeTree(t, files, "")
	who := object.Signature{Name: "Mallory", Email: "mallory@example.com", When: time.Now()}
	c := &object.Commit{Author: who, Committer: who, Message: "nova.test.step c-a dev seq=9\n", TreeHash: root, ParentHashes: []plumbing.Hash{head.Hash}}
	if signer != nil {
		if err := signer.SignCommit(c); err != nil {
			t.Fatal(err)
		}
	}
	h := f.put(t, c)
	f.setHead(t, h)
	return h
}

// moveEvent moves the event file from and its signature to path to in a
// commit signed with the allowed key, and returns to.
func (f *tamperFixture) moveEvent(t *testing.T, from, to string) string {
	t.Helper()
	f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
		for _, p := range [][2]string{{from, to}, {chain.SigPath(from), chain.SigPath(to)}} {
			files[p[1]] = files[p[0]]
			delete(files, p[0])
		}
	})
	return to
}

// moveDir moves every file under the directory from (ending in "/") to
// the directory to, in one signed commit.
func (f *tamperFixture) moveDir(t *testing.T, from, to string) {
	t.Helper()
	f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
		for p, b := range files {
			if rest, ok := strings.CutPrefix(p, from); ok {
				files[to+rest] = b
				delete(files, p)
			}
		}
	})
}

// rewriteHead replaces the head commit by an edited copy.
func (f *tamperFixture) rewriteHead(t *testing.T, edit func(*object.Commit)) plumbing.Hash {
	t.Helper()
	c := *f.commit(t, f.head(t))
	edit(&c)
	h := f.put(t, &c)
	f.setHead(t, h)
	return h
}

func (f *tamperFixture) put(t *testing.T, o interface {
	Encode(plumbing.EncodedObject) error
}) plumbing.Hash {
	t.Helper()
	eo := f.git.Storer.NewEncodedObject()
	if err := o.Encode(eo); err != nil {
		t.Fatal(err)
	}
	h, err := f.git.Storer.SetEncodedObject(eo)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// writeTree writes files (paths relative to prefix) as nested trees.
func (f *tamperFixture) writeTree(t *testing.T, files map[string][]byte, prefix string) plumbing.Hash {
	t.Helper()
	var entries []object.TreeEntry
	dirs := map[string]map[string][]byte{}
	for p, b := range files {
		name, rest, nested := strings.Cut(p, "/")
		if nested {
			if dirs[name] == nil {
				dirs[name] = map[string][]byte{}
			}
			dirs[name][rest] = b
			continue
		}
		blob := f.git.Storer.NewEncodedObject()
		blob.SetType(plumbing.BlobObject)
		w, _ := blob.Writer()
		_, _ = w.Write(b)
		_ = w.Close()
		h, err := f.git.Storer.SetEncodedObject(blob)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Regular, Hash: h})
	}
	for name, sub := range dirs {
		entries = append(entries, object.TreeEntry{Name: name, Mode: filemode.Dir, Hash: f.writeTree(t, sub, prefix+name+"/")})
	}
	// git's tree order: a directory sorts as if its name ended in "/".
	key := func(e object.TreeEntry) string {
		if e.Mode == filemode.Dir {
			return e.Name + "/"
		}
		return e.Name
	}
	sort.Slice(entries, func(i, j int) bool { return key(entries[i]) < key(entries[j]) })
	return f.put(t, &object.Tree{Entries: entries})
}
