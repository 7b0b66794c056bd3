package signing

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

func TestLoadSigner(t *testing.T) {
	// cosign generate-key-pair's format: ENCRYPTED SIGSTORE PRIVATE KEY.
	encPriv, encPub, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("pw-123")))
	if err != nil {
		t.Fatal(err)
	}
	plain, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	plainPEM, _ := cryptoutils.MarshalPrivateKeyToPEM(plain)
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	p384PEM, _ := cryptoutils.MarshalPrivateKeyToPEM(p384)
	rsaKey, _ := rsa.GenerateKey(rand.Reader, 2048)
	rsaPEM, _ := cryptoutils.MarshalPrivateKeyToPEM(rsaKey)

	tests := []struct {
		name    string
		pem     []byte
		pw      []byte
		wantErr string
	}{
		{"cosign key with password", encPriv, []byte("pw-123"), ""},
		{"cosign key, wrong password", encPriv, []byte("nope"), "decoding signing key"},
		{"cosign key, no password", encPriv, nil, "COSIGN_PASSWORD"},
		{"plain PKCS#8", plainPEM, nil, ""},
		{"P-384 refused", p384PEM, nil, "P-256"},
		{"RSA refused", rsaPEM, nil, "ECDSA P-256"},
		{"not PEM", []byte("hello"), nil, "not PEM"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := LoadSigner(tt.pem, tt.pw)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tt.wantErr)
				}
				if tt.pw != nil && strings.Contains(err.Error(), string(tt.pw)) {
					t.Fatalf("password leaked into %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			sig, err := s.Sign([]byte("event"))
			if err != nil {
				t.Fatal(err)
			}
			ks, err := NewKeySet(s.PublicKey())
			if err != nil {
				t.Fatal(err)
			}
			if err := ks.Verify([]byte("event"), sig); err != nil {
				t.Fatal(err)
			}
			if err := ks.Verify([]byte("evenT"), sig); err == nil {
				t.Fatal("signature verified over other bytes")
			}
		})
	}
	// The public key cosign wrote verifies what the loaded key signs.
	s, _ := LoadSigner(encPriv, []byte("pw-123"))
	pubs, err := LoadPublicKeys(encPub)
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := NewKeySet(pubs...)
	sig, _ := s.Sign([]byte("x"))
	if err := ks.Verify([]byte("x"), sig); err != nil {
		t.Fatalf("cosign.pub does not verify: %v", err)
	}
}

func TestLocalKeysAreGeneratedOnceAndKept(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nova")
	a, err := LocalSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := LocalSigner(dir)
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := a.PublicKeyPEM()
	pb, _ := b.PublicKeyPEM()
	if !bytes.Equal(pa, pb) {
		t.Fatal("second load generated a new event key")
	}
	onDisk, err := os.ReadFile(filepath.Join(dir, localSigningPub))
	if err != nil || !bytes.Equal(onDisk, pa) {
		t.Fatalf("signing.pub = %q, %v", onDisk, err)
	}
	if fi, err := os.Stat(filepath.Join(dir, localSigningKey)); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("signing.key mode %v, %v; want 0600", fi.Mode(), err)
	}

	c1, err := LocalCommitSigner(dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	c2, err := LocalCommitSigner(dir, "Someone", "someone@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if c1.KeyID() != c2.KeyID() {
		t.Fatal("second load generated a new commit key")
	}
	if who := c1.Identity(c1.entity.PrimaryKey.CreationTime); who.Email != localCommitEmail {
		t.Errorf("default committer %q", who.Email)
	}
	if who := c2.Identity(c2.entity.PrimaryKey.CreationTime); who.Email != "someone@example.com" {
		t.Errorf("configured committer %q", who.Email)
	}
}

func TestLoadKeysFromConfig(t *testing.T) {
	priv, _, err := cryptoutils.GeneratePEMEncodedECDSAKeyPair(elliptic.P256(), cryptoutils.StaticPasswordFunc([]byte("pw")))
	if err != nil {
		t.Fatal(err)
	}
	cs, err := GenerateCommitSigner("Bot", "bot@example.com")
	if err != nil {
		t.Fatal(err)
	}
	// A passphrase-protected OpenPGP key, as `gpg --export-secret-keys -a`
	// would give it.
	if err := cs.entity.EncryptPrivateKeys([]byte("pass"), nil); err != nil {
		t.Fatal(err)
	}
	var armored bytes.Buffer
	w, _ := armor.Encode(&armored, openpgp.PrivateKeyType, nil)
	if err := cs.entity.SerializePrivateWithoutSigning(w, nil); err != nil {
		t.Fatal(err)
	}
	w.Close()

	keys, err := LoadKeys(KeyConfig{SigningKeyPEM: string(priv), SigningKeyPassword: []byte("pw"), CommitKeyArmored: armored.String(), CommitKeyPassphrase: []byte("pass")})
	if err != nil {
		t.Fatal(err)
	}
	if keys.Commit.KeyID() != cs.KeyID() || keys.Commit.Identity(cs.entity.PrimaryKey.CreationTime).Email != "bot@example.com" {
		t.Errorf("commit key %s <%s>", keys.Commit.KeyID(), keys.Commit.email)
	}
	_, err = LoadKeys(KeyConfig{SigningKeyPEM: string(priv), SigningKeyPassword: []byte("pw"), CommitKeyArmored: armored.String()})
	if runner.ReasonOf(err) != runner.EvidenceKeyInvalid || !strings.Contains(err.Error(), "passphrase") {
		t.Errorf("protected commit key without passphrase: %v", err)
	}
	if _, err := LoadKeys(KeyConfig{}); runner.ReasonOf(err) != runner.EvidenceKeyInvalid {
		t.Errorf("no keys configured: %v, want EVIDENCE_KEY_INVALID", err)
	}
}

// TestLoadCommitKeyRingReadsConcatenatedKeys: after a rotation the old and
// the new public key are pasted one after the other into one variable or
// file; every one of them must be allowed, not only the first.
func TestLoadCommitKeyRingReadsConcatenatedKeys(t *testing.T) {
	var armored []byte
	var signers []*CommitSigner
	for _, name := range []string{"Old", "New"} {
		cs, err := GenerateCommitSigner(name, strings.ToLower(name)+"@example.com")
		if err != nil {
			t.Fatal(err)
		}
		pub, err := cs.ArmoredPublicKey()
		if err != nil {
			t.Fatal(err)
		}
		armored = append(append(armored, pub...), '\n')
		signers = append(signers, cs)
	}
	kr, err := LoadCommitKeyRing(armored)
	if err != nil {
		t.Fatal(err)
	}
	for _, cs := range signers {
		c := &object.Commit{Author: cs.Identity(time.Now()), Committer: cs.Identity(time.Now()), Message: "m\n"}
		if err := cs.SignCommit(c); err != nil {
			t.Fatal(err)
		}
		// Checked as verify checks it: read from the stored commit.
		stored := &plumbing.MemoryObject{}
		if err := c.Encode(stored); err != nil {
			t.Fatal(err)
		}
		rd, err := stored.Reader()
		if err != nil {
			t.Fatal(err)
		}
		raw, err := io.ReadAll(rd)
		if err != nil {
			t.Fatal(err)
		}
		read, err := gitrepo.ParseCommit(stored.Hash(), raw)
		if err != nil {
			t.Fatal(err)
		}
		if reason, err := kr.CheckCommit(read.Signed, read.PGPSignature); err != nil {
			t.Errorf("commit by %s: %s %v", cs.name, reason, err)
		}
	}
	if _, err := LoadCommitKeyRing([]byte("not a key")); err == nil {
		t.Error("LoadCommitKeyRing accepted text without a key")
	}
}

// TestSignDER: the raw DER form (for DSSE envelopes) is the same signature
// as the .sig file's base64, and a KeySet accepts either.
func TestSignDER(t *testing.T) {
	priv, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	s, err := NewSigner(priv)
	if err != nil {
		t.Fatal(err)
	}
	der, err := s.SignDER([]byte("payload"))
	if err != nil {
		t.Fatal(err)
	}
	ks, _ := NewKeySet(s.PublicKey())
	if err := ks.Verify([]byte("payload"), der); err != nil {
		t.Fatalf("raw DER does not verify: %v", err)
	}
	if err := ks.Verify([]byte("other"), der); err == nil {
		t.Fatal("raw DER verified over other bytes")
	}
}
