package evidencetest

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"path/filepath"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// Keys makes a fresh event key and commit key.
func testKeys(t *testing.T) signing.Keys {
	t.Helper()
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ev, err := signing.NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := signing.GenerateCommitSigner("Nova Test", "nova-test@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return signing.Keys{Events: ev, Commit: cs}
}

// TestBuiltRepoVerifies: what Build writes is what the store writes, as
// far as verify can tell, with trees deep enough to need delta chains cut.
func TestBuiltRepoVerifies(t *testing.T) {
	keys := testKeys(t)
	path := filepath.Join(t.TempDir(), "evidence.git")
	events := History(3, 400, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), 30*24*time.Hour)
	head, err := Build(path, keys, events)
	if err != nil {
		t.Fatal(err)
	}
	repo, err := chain.OpenRepo(context.Background(), path, "", chain.Credentials{})
	if err != nil {
		t.Fatal(err)
	}
	defer repo.Close()
	pub, err := keys.Commit.ArmoredPublicKey()
	if err != nil {
		t.Fatal(err)
	}
	ring, err := signing.LoadCommitKeyRing(pub)
	if err != nil {
		t.Fatal(err)
	}
	ks, err := signing.NewKeySet(keys.Events.PublicKey())
	if err != nil {
		t.Fatal(err)
	}
	rep, err := chain.Verify(context.Background(), repo, chain.VerifyOptions{EventKeys: ks, CommitKeys: ring})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Events != 400 || rep.Commits != 400 || rep.Contracts != 3 || rep.Head != head {
		t.Fatalf("report %+v", rep)
	}
}
