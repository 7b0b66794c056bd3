package evidence

import (
	"context"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// sinceFixture is the tamper fixture verified at its head (since), then
// extended: c-a to 6 events, c-c new with 1.
type sinceFixture struct {
	*tamperFixture
	since plumbing.Hash
	opts  chain.VerifyOptions
}

func newSinceFixture(t *testing.T) *sinceFixture {
	t.Helper()
	f := &sinceFixture{tamperFixture: newTamperFixture(t)}
	f.since = f.head(t)
	emitN(t, f.store, "c-a", 2)
	emitN(t, f.store, "c-c", 1)
	f.opts = verifyOptions(t, f.keys)
	f.opts.Since = f.since.String()
	var err error
	if f.opts.Witness, err = ReadWitness(f.store.WitnessPath()); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestVerifySinceChecksOnlyTheNewRange: an incremental verification of a
// healthy repo counts what was added after since and finds nothing; the
// full verification agrees.
func TestVerifySinceChecksOnlyTheNewRange(t *testing.T) {
	f := newSinceFixture(t)
	rep := verifyRepo(t, f.repo, f.opts)
	if !rep.OK() {
		t.Fatalf("healthy range does not verify:%s", dumpFindings(rep))
	}
	// Two witnessed heads after since: emitN pushes each contract's events
	// as one batch.
	if rep.Commits != 3 || rep.Events != 3 || rep.Contracts != 2 || rep.Since != f.since.String() || rep.Witnessed != 2 {
		t.Errorf("report = %d commits, %d events, %d contracts, since %s, %d witnessed; want 3, 3, 2, %s, 2", rep.Commits, rep.Events, rep.Contracts, rep.Since, rep.Witnessed, f.since)
	}
	full := f.opts
	full.Since = ""
	if rep := verifyRepo(t, f.repo, full); !rep.OK() || rep.Events != 9 {
		t.Fatalf("full verification: %d events%s", rep.Events, dumpFindings(rep))
	}
	// since at the head: nothing new, nothing wrong.
	at := f.opts
	at.Since = f.head(t).String()
	if rep := verifyRepo(t, f.repo, at); !rep.OK() || rep.Commits != 0 || rep.Events != 0 {
		t.Fatalf("since the head: %d commits, %d events%s", rep.Commits, rep.Events, dumpFindings(rep))
	}
}

// TestVerifySinceDetectsTamperingInTheNewRange damages what came after
// since and checks the incremental verification names it, as the full one
// would.
func TestVerifySinceDetectsTamperingInTheNewRange(t *testing.T) {
	const (
		a2 = "contracts/87/c-a/0xx/2-nova.test.step.json" // before since
		a5 = "contracts/87/c-a/0xx/5-nova.test.step.json" // after
		a6 = "contracts/87/c-a/0xx/6-nova.test.step.json"
	)
	tests := []struct {
		name   string
		tamper func(t *testing.T, f *sinceFixture) (path, commit string)
		want   runner.Reason
	}{{
		name: "byte flipped in a new event",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[a5] = []byte(strings.Replace(string(files[a5]), "urn:nova:test", "urn:nova:tesT", 1))
			})
			return a5, ""
		},
		want: runner.EvidenceSignatureInvalid,
	}, {
		name: "an older event changed by a new commit",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			h := f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[a2] = []byte(strings.Replace(string(files[a2]), "urn:nova:test", "urn:nova:tesT", 1))
			})
			return a2, h.String()
		},
		want: runner.EvidenceCommitInvalid,
	}, {
		name: "new event deleted",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				delete(files, a6)
				delete(files, chain.SigPath(a6))
			})
			return a6, ""
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "two new events swapped",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				files[a5], files[a6] = files[a6], files[a5]
				files[chain.SigPath(a5)], files[chain.SigPath(a6)] = files[chain.SigPath(a6)], files[chain.SigPath(a5)]
			})
			return a5, ""
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "new commit made unsigned",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			h := f.rewriteHead(t, func(c *object.Commit) { c.PGPSignature = "" })
			return "", h.String()
		},
		want: runner.EvidenceCommitUnsigned,
	}, {
		name: "forged event signed by a wrong key",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			f.forgeEvent(t, "c-b")
			return "contracts/7b/c-b/0xx/3-nova.test.step.json", f.head(t).String()
		},
		want: runner.EvidenceSignatureInvalid,
	}, {
		name: "new event that does not continue the chain at since",
		tamper: func(t *testing.T, f *sinceFixture) (string, string) {
			// c-b's third event, written as if its chain were c-a's:
			// right seq, signed by the real key, linked to the wrong file.
			f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) {
				e := runner.Event{SpecVersion: "1.0", ID: "forged-link", Source: "urn:nova:test", Type: "nova.test.step", ContractID: "c-b", Environment: "dev", Seq: 3, PrevEventHash: strings.Repeat("ab", 32)}
				canon, err := e.Canonical()
				if err != nil {
					t.Fatal(err)
				}
				sig, err := f.keys.Events.Sign(canon)
				if err != nil {
					t.Fatal(err)
				}
				files["contracts/7b/c-b/0xx/3-nova.test.step.json"], files["contracts/7b/c-b/0xx/3-nova.test.step.sig"] = canon, sig
			})
			return "contracts/7b/c-b/0xx/3-nova.test.step.json", ""
		},
		want: runner.EvidenceChainBroken,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSinceFixture(t)
			if rep := verifyRepo(t, f.repo, f.opts); !rep.OK() {
				t.Fatalf("healthy range does not verify:%s", dumpFindings(rep))
			}
			path, commit := tt.tamper(t, f)
			rep := verifyRepo(t, f.repo, f.opts)
			if !hasFinding(rep, tt.want, path, commit) {
				t.Fatalf("verify --since did not report %s at path %q commit %q; findings:%s", tt.want, path, commit, dumpFindings(rep))
			}
			t.Logf("findings:%s", dumpFindings(rep))
		})
	}
}

// TestVerifySinceRefusesWhatItCannotContinue: a since the head's history
// does not contain (a force-push dropped it), or one the witness does not
// list, is refused rather than verified from.
func TestVerifySinceRefusesWhatItCannotContinue(t *testing.T) {
	f := newSinceFixture(t)
	dropped := f.head(t)
	f.setHead(t, f.commit(t, dropped).ParentHashes[0])
	other := openStore(t, f.repo, f.keys)
	emitN(t, other, "c-b", 1)

	opts := f.opts
	opts.Since = dropped.String()
	r, err := chain.OpenRepo(context.Background(), f.repo, "", chain.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if _, err := chain.Verify(context.Background(), r, opts); runner.ReasonOf(err) != runner.EvidenceHistoryRewritten {
		t.Errorf("verify --since a dropped head = %v, want EVIDENCE_HISTORY_REWRITTEN", err)
	}
	// The new head is an ancestor-free stranger to the witness.
	opts.Since = f.head(t).String()
	if _, err := chain.Verify(context.Background(), r, opts); runner.ReasonOf(err) != runner.ConfigInvalid {
		t.Errorf("verify --since an unwitnessed head = %v, want CONFIG_INVALID", err)
	}
	// Without a witness, a since outside the history is still refused.
	opts.Since, opts.Witness = dropped.String(), nil
	if _, err := chain.Verify(context.Background(), r, opts); runner.ReasonOf(err) != runner.EvidenceHistoryRewritten {
		t.Errorf("verify --since a dropped head, no witness = %v, want EVIDENCE_HISTORY_REWRITTEN", err)
	}
}
