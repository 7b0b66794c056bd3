package evidence

import (
	"crypto"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// Paths of the gate fixture's events.
const (
	gateResolvedA     = "contracts/87/c-a/0xx/2-nova.apply.resolved.json"
	gateIndeterminate = "contracts/7b/c-b/0xx/2-nova.apply.indeterminate.json"
	// gateCopiedB is where an attacker puts c-a's resolution: the next
	// seq of c-b, so the file name alone looks like part of c-b's chain.
	gateCopiedB = "contracts/7b/c-b/0xx/3-nova.apply.resolved.json"
)

// newGateFixture is a repo in which c-a's indeterminate prod apply was
// resolved and c-b's is still open: the gate must refuse to authorize c-b
// in prod.
func newGateFixture(t *testing.T) (*tamperFixture, string) {
	t.Helper()
	ctx := t.Context()
	f := &tamperFixture{repo: newBareRepo(t), keys: newKeys(t)}
	f.store = openStore(t, f.repo, f.keys)
	em := runner.NewEmitter(f.store, "urn:nova:test", "run-1", testClock())
	emit := func(typ, contract string, data any) runner.Event {
		t.Helper()
		e, err := em.Emit(ctx, typ, contract, "prod", data)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	indA := emit(runner.EventApplyIndeterminate, "c-a", map[string]string{"cause": "interrupted"})
	emit(runner.EventApplyResolved, "c-a", runner.Resolution{Outcome: runner.ResolvedNotApplied, Note: "no change in state", Resolves: indA.ID, ResolvedBy: "sre"})
	emit(runner.EventPlanCreated, "c-b", map[string]string{"digest": "d"})
	indB := emit(runner.EventApplyIndeterminate, "c-b", map[string]string{"cause": "interrupted"})
	if err := f.store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	var err error
	if f.git, err = git.PlainOpen(f.repo); err != nil {
		t.Fatal(err)
	}
	if id, err := unresolved(ctx, f.store, "c-b", "prod"); err != nil || id != indB.ID {
		t.Fatalf("fixture: UnresolvedApply(c-b) = %q, %v; want %s", id, err, indB.ID)
	}
	return f, indB.ID
}

// copyResolution puts c-a's signed resolution into c-b's directory.
func copyResolution(files map[string][]byte) {
	files[gateCopiedB] = files[gateResolvedA]
	files[chain.SigPath(gateCopiedB)] = files[chain.SigPath(gateResolvedA)]
}

// deleteIndeterminate removes c-b's open indeterminate apply, the last
// event of its chain, so the chain that is left is still continuous.
func deleteIndeterminate(files map[string][]byte) {
	delete(files, gateIndeterminate)
	delete(files, chain.SigPath(gateIndeterminate))
}

// TestGateRefusesUnsignedTampering reproduces the review's attacks: with
// push access alone (no event key, no commit key), an unsigned commit
// either copies another contract's signed nova.apply.resolved into the
// blocked contract or deletes the blocking nova.apply.indeterminate. The
// store must neither answer "nothing unresolved" nor sign an authorization
// on top — whether it pushed before (it has a witness) or reads the repo
// for the first time (no witness: the whole history is checked).
func TestGateRefusesUnsignedTampering(t *testing.T) {
	attacks := []struct {
		name   string
		mutate func(map[string][]byte)
	}{
		{"signed resolution copied from another contract", copyResolution},
		{"last indeterminate event deleted", deleteIndeterminate},
	}
	for _, attack := range attacks {
		for _, fresh := range []bool{false, true} {
			name := attack.name + "/the writer"
			if fresh {
				name = attack.name + "/a new store"
			}
			t.Run(name, func(t *testing.T) {
				ctx := t.Context()
				f, _ := newGateFixture(t)
				tampered := f.rewriteFiles(t, nil, attack.mutate)
				s := f.store
				if fresh {
					s = openStore(t, f.repo, f.keys)
				}
				id, err := unresolved(ctx, s, "c-b", "prod")
				if runner.ReasonOf(err) != runner.EvidenceCommitUnsigned {
					t.Fatalf("UnresolvedApply(c-b) over an unsigned commit = %q, %v; want %s", id, err, runner.EvidenceCommitUnsigned)
				}
				err = s.Record(ctx, runner.Event{ID: "auth-b", SpecVersion: "1.0", Source: "urn:x", Type: runner.EventApplyAuthorized, ContractID: "c-b", Environment: "prod"})
				if runner.ReasonOf(err) != runner.EvidenceCommitUnsigned {
					t.Errorf("authorizing c-b over an unsigned commit: %v; want %s", err, runner.EvidenceCommitUnsigned)
				}
				if h := f.head(t); h != tampered {
					t.Errorf("the store pushed on top of the tampered head (%s, want %s)", short(h), short(tampered))
				}
			})
		}
	}
}

// TestGateRefusesMisplacedEvents is the reader's own layer, for commits an
// allowed key did sign (a writer holding the commit key but not the event
// key, or a bug): Events must reject a directory that is not one unbroken
// chain of this contract's events, with verify's reason code, instead of
// returning what it can read.
func TestGateRefusesMisplacedEvents(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(f *tamperFixture, files map[string][]byte)
		want   runner.Reason
	}{{
		name:   "another contract's signed event",
		mutate: func(_ *tamperFixture, files map[string][]byte) { copyResolution(files) },
		want:   runner.EvidenceLayoutInvalid,
	}, {
		name: "event renamed to another type",
		mutate: func(_ *tamperFixture, files map[string][]byte) {
			renamed := "contracts/7b/c-b/0xx/2-nova.apply.completed.json"
			files[renamed], files[chain.SigPath(renamed)] = files[gateIndeterminate], files[chain.SigPath(gateIndeterminate)]
			deleteIndeterminate(files)
		},
		want: runner.EvidenceLayoutInvalid,
	}, {
		name: "event renumbered past the end",
		mutate: func(_ *tamperFixture, files map[string][]byte) {
			renamed := "contracts/7b/c-b/0xx/5-nova.apply.indeterminate.json"
			files[renamed], files[chain.SigPath(renamed)] = files[gateIndeterminate], files[chain.SigPath(gateIndeterminate)]
			deleteIndeterminate(files)
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "first event deleted",
		mutate: func(_ *tamperFixture, files map[string][]byte) {
			first := "contracts/7b/c-b/0xx/1-nova.plan.created.json"
			delete(files, first)
			delete(files, chain.SigPath(first))
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "two events with one seq",
		mutate: func(_ *tamperFixture, files map[string][]byte) {
			dup := "contracts/7b/c-b/0xx/2-nova.plan.created.json"
			files[dup], files[chain.SigPath(dup)] = files["contracts/7b/c-b/0xx/1-nova.plan.created.json"], files["contracts/7b/c-b/0xx/1-nova.plan.created.sig"]
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "first event replaced by another signed one",
		mutate: func(f *tamperFixture, files map[string][]byte) {
			// A genuinely signed seq 1 of c-b, as another repo or branch
			// might hold: the next event's preveventhash gives it away.
			e := runner.Event{SpecVersion: "1.0", ID: "other-1", Source: "urn:x", Type: runner.EventPlanCreated, ContractID: "c-b", Environment: "prod", Seq: 1}
			canon, err := e.Canonical()
			if err != nil {
				panic(err)
			}
			sig, err := f.keys.Events.Sign(canon)
			if err != nil {
				panic(err)
			}
			files["contracts/7b/c-b/0xx/1-nova.plan.created.json"], files["contracts/7b/c-b/0xx/1-nova.plan.created.sig"] = canon, sig
		},
		want: runner.EvidenceChainBroken,
	}, {
		name: "file outside the layout",
		mutate: func(_ *tamperFixture, files map[string][]byte) {
			files["contracts/7b/c-b/notes.txt"] = []byte("hello")
		},
		want: runner.EvidenceLayoutInvalid,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			f, _ := newGateFixture(t)
			tampered := f.rewriteFiles(t, f.keys.Commit, func(files map[string][]byte) { tt.mutate(f, files) })
			if events, err := f.store.Chain(ctx, "c-b"); runner.ReasonOf(err) != tt.want || events != nil {
				t.Fatalf("Chain(c-b) = %d events, %v; want no events and %s", len(events), err, tt.want)
			}
			// Verify reports the same break: one reader for both.
			rep := verifyRepo(t, f.repo, verifyOptions(t, f.keys))
			if !hasFinding(rep, tt.want, "", "") {
				t.Errorf("verify does not report %s:%s", tt.want, dumpFindings(rep))
			}
			err := f.store.Record(ctx, runner.Event{ID: "auth-b", SpecVersion: "1.0", Source: "urn:x", Type: runner.EventApplyAuthorized, ContractID: "c-b", Environment: "prod"})
			if err == nil {
				t.Error("c-b was authorized over a broken chain")
			}
			if h := f.head(t); h != tampered {
				t.Errorf("the store pushed on top of a broken chain (%s, want %s)", short(h), short(tampered))
			}
			// The other contract is untouched and still readable.
			if _, err := f.store.Chain(ctx, "c-a"); err != nil {
				t.Errorf("Chain(c-a): %v", err)
			}
		})
	}
}

// TestStoreTrustsRotatedKeys: after a key rotation a contract's earlier
// events and commits stay signed by the old keys. Unless the old keys are
// configured as trusted the store refuses them (and so can never authorize
// the contract again); with them it reads the history and writes on.
func TestStoreTrustsRotatedKeys(t *testing.T) {
	old, rotated := newKeys(t), newKeys(t)
	oldPub, err := old.Commit.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	oldRing, err := signing.LoadCommitKeyRing(oldPub)
	if err != nil {
		t.Fatal(err)
	}
	oldEvents := []crypto.PublicKey{old.Events.PublicKey()}
	tests := []struct {
		name string
		cfg  Config
		want runner.Reason // "" for success
	}{
		{"event key rotated, old key not trusted", Config{Keys: signing.Keys{Events: rotated.Events, Commit: old.Commit}}, runner.EvidenceSignatureInvalid},
		{"event key rotated, old key trusted", Config{Keys: signing.Keys{Events: rotated.Events, Commit: old.Commit}, TrustedEventKeys: oldEvents}, ""},
		{"commit key rotated, old key not allowed", Config{Keys: signing.Keys{Events: old.Events, Commit: rotated.Commit}}, runner.EvidenceCommitKeyUnknown},
		{"commit key rotated, old key allowed", Config{Keys: signing.Keys{Events: old.Events, Commit: rotated.Commit}, AllowedCommitKeys: oldRing}, ""},
		{"both rotated, both old keys trusted", Config{Keys: rotated, TrustedEventKeys: oldEvents, AllowedCommitKeys: oldRing}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			repo := newBareRepo(t)
			emitN(t, openStore(t, repo, old), "c-a", 2)
			cfg := tt.cfg
			cfg.Repo, cfg.StateDir = repo, t.TempDir()
			s, err := Open(ctx, cfg, WithRetry(testRetry), WithLogf(t.Logf))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			id, err := unresolved(ctx, s, "c-a", "dev")
			if runner.ReasonOf(err) != tt.want && !(tt.want == "" && err == nil) {
				t.Fatalf("unresolved apply = %q, %v; want %q", id, err, tt.want)
			}
			err = s.Record(ctx, runner.Event{ID: "auth-a", SpecVersion: "1.0", Source: "urn:x", Type: runner.EventApplyAuthorized, ContractID: "c-a", Environment: "dev"})
			if tt.want == "" && err != nil {
				t.Fatalf("authorizing after the rotation: %v", err)
			}
			if tt.want != "" && err == nil {
				t.Fatal("authorized over a history the store does not trust")
			}
			if tt.want == "" {
				if rep := verifyRepo(t, repo, verifyOptions(t, old, rotated)); !rep.OK() || rep.Events != 3 {
					t.Fatalf("verify: %+v%s", rep, dumpFindings(rep))
				}
			}
		})
	}
}
