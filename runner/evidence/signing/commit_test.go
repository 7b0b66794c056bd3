package signing

import (
	"bytes"
	"crypto"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/gitrepo"
)

// signedCommit signs a commit with e as SignCommit does, but with cfg, and
// returns the bytes verify checks and the gpgsig header as verify reads it
// back from the stored commit.
func signedCommit(t testing.TB, e *openpgp.Entity, cfg *packet.Config, msg string) ([]byte, string) {
	t.Helper()
	c := &object.Commit{
		Author:    object.Signature{Name: "Nova", Email: "nova@example.com", When: time.Unix(1767225600, 0)},
		Committer: object.Signature{Name: "Nova", Email: "nova@example.com", When: time.Unix(1767225600, 0)},
		TreeHash:  plumbing.NewHash("4b825dc642cb6eb9a060e54bf8d69288fbee4904"),
		Message:   msg,
	}
	payload := &plumbing.MemoryObject{}
	if err := c.EncodeWithoutSignature(payload); err != nil {
		t.Fatal(err)
	}
	rd, _ := payload.Reader()
	var sig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&sig, e, rd, cfg); err != nil {
		t.Fatal(err)
	}
	c.PGPSignature = sig.String()
	stored := &plumbing.MemoryObject{}
	if err := c.Encode(stored); err != nil {
		t.Fatal(err)
	}
	srd, _ := stored.Reader()
	var raw bytes.Buffer
	if _, err := raw.ReadFrom(srd); err != nil {
		t.Fatal(err)
	}
	read, err := gitrepo.ParseCommit(stored.Hash(), raw.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	return read.Signed, read.PGPSignature
}

func newEntity(t testing.TB, cfg *packet.Config) *openpgp.Entity {
	t.Helper()
	e, err := openpgp.NewEntity("Nova", "", "nova@example.com", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// TestCheckCommit: what CheckCommit accepts and refuses, and the reason
// it gives, for Nova's own signatures and for keys and signatures of
// other kinds.
func TestCheckCommit(t *testing.T) {
	eddsa := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e, other := newEntity(t, eddsa), newEntity(t, eddsa)
	rsaKey := newEntity(t, &packet.Config{Algorithm: packet.PubKeyAlgoRSA, RSABits: 2048})
	expiring := newEntity(t, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA, KeyLifetimeSecs: 86400 * 365})
	// A key revoked after it signed.
	revoked := newEntity(t, eddsa)
	revSigned, revSig := signedCommit(t, revoked, nil, "m\n")
	if err := revoked.RevokeKey(packet.KeySuperseded, "rotated", nil); err != nil {
		t.Fatal(err)
	}
	withSub := newEntity(t, eddsa)
	if err := withSub.AddSigningSubkey(eddsa); err != nil {
		t.Fatal(err)
	}
	future := func() time.Time { return time.Now().Add(48 * time.Hour) }
	noSalt := false

	signed, sig := signedCommit(t, e, nil, "m\n")
	header := strings.Replace(sig, "-----\n\n", "-----\nComment: a header\n\n", 1)
	body := sig[strings.Index(sig, "\n\n")+2 : strings.LastIndex(sig, "\n=")]
	truncated := strings.Replace(sig, body, body[:len(body)/2], 1)
	ssh := "-----BEGIN SSH SIGNATURE-----\nU1NIU0lH\n-----END SSH SIGNATURE-----\n"

	cases := []struct {
		name   string
		keys   openpgp.EntityList
		signer *openpgp.Entity
		cfg    *packet.Config
		edit   func(signed []byte, sig string) ([]byte, string)
		reason runner.Reason // "" when accepted
	}{
		{name: "as SignCommit signs", keys: openpgp.EntityList{e}, signer: e},
		{name: "SHA-512", keys: openpgp.EntityList{e}, signer: e, cfg: &packet.Config{DefaultHash: crypto.SHA512}},
		{name: "without salt", keys: openpgp.EntityList{e}, signer: e, cfg: &packet.Config{NonDeterministicSignaturesViaNotation: &noSalt}},
		{name: "without the final line break", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, strings.TrimSuffix(sig, "\n") }},
		{name: "an armour header", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, header }},
		{name: "one of several allowed keys", keys: openpgp.EntityList{other, e}, signer: e},
		{name: "an RSA key", keys: openpgp.EntityList{rsaKey}, signer: rsaKey},
		{name: "a key that expires", keys: openpgp.EntityList{expiring}, signer: expiring},
		{name: "a signing subkey", keys: openpgp.EntityList{withSub}, signer: withSub},
		{name: "another commit", keys: openpgp.EntityList{e}, signer: e, edit: func(s []byte, g string) ([]byte, string) {
			return append(append([]byte{}, s...), 'x'), g
		}, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "a key not allowed", keys: openpgp.EntityList{other}, signer: e, reason: runner.EvidenceCommitKeyUnknown},
		{name: "a revoked key", keys: openpgp.EntityList{revoked}, edit: func([]byte, string) ([]byte, string) { return revSigned, revSig }, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "made in the future", keys: openpgp.EntityList{e}, signer: e, cfg: &packet.Config{Time: future}, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "a truncated packet", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, truncated }, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "unsigned", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, "" }, reason: runner.EvidenceCommitUnsigned},
		{name: "an SSH signature", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, ssh }, reason: runner.EvidenceCommitKeyUnknown},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s, g := signed, sig
			if c.signer != nil {
				s, g = signedCommit(t, c.signer, c.cfg, "m\n")
			}
			if c.edit != nil {
				s, g = c.edit(s, g)
			}
			reason, err := (&CommitKeyRing{keys: c.keys}).CheckCommit(s, g)
			if reason != c.reason || (err == nil) != (c.reason == "") {
				t.Errorf("CheckCommit gave %q (%v), want %q", reason, err, c.reason)
			}
		})
	}
}

// TestCheckCommitRefusesEveryChangedByte: a signature covers every byte
// of the commit, and every byte of the signature packet matters.
func TestCheckCommitRefusesEveryChangedByte(t *testing.T) {
	cs, err := GenerateCommitSigner("Nova", "nova@example.com")
	if err != nil {
		t.Fatal(err)
	}
	kr := cs.KeyRing()
	signed, sig := signedCommit(t, cs.entity, nil, "nova.plan.created c-1 dev seq=1\n")
	if reason, err := kr.CheckCommit(signed, sig); err != nil {
		t.Fatalf("Nova's own signature: %s %v", reason, err)
	}
	for i := range signed {
		s := append([]byte{}, signed...)
		s[i] ^= 0x20
		if reason, err := kr.CheckCommit(s, sig); err == nil || reason != runner.EvidenceCommitSignatureInvalid {
			t.Fatalf("commit byte %d changed: %q %v", i, reason, err)
		}
	}
	// Every byte of the signature packet, armoured again so the armour
	// itself stays well formed. openpgp reads some bytes leniently (the
	// hash tag, a quick check of the digest's first two bytes it does not
	// compare for a v4 signature; the low bits of a number's bit count):
	// a change there may be accepted, but only as the very same signature
	// over the same hashed data.
	block, err := armor.Decode(strings.NewReader(sig))
	if err != nil {
		t.Fatal(err)
	}
	pkt, err := io.ReadAll(block.Body)
	if err != nil {
		t.Fatal(err)
	}
	orig := readSignaturePacket(t, pkt)
	for i := range pkt {
		for _, x := range []byte{0x01, 0x80} {
			b := append([]byte{}, pkt...)
			b[i] ^= x
			if _, err := kr.CheckCommit(signed, reArmor(t, b)); err != nil {
				continue
			}
			got := readSignaturePacket(t, b)
			if !bytes.Equal(got.HashSuffix, orig.HashSuffix) || !bytes.Equal(got.EdDSASigR.Bytes(), orig.EdDSASigR.Bytes()) || !bytes.Equal(got.EdDSASigS.Bytes(), orig.EdDSASigS.Bytes()) {
				t.Fatalf("signature byte %d of %d ^ %#x: another signature accepted", i, len(pkt), x)
			}
		}
	}
}

func readSignaturePacket(t *testing.T, pkt []byte) *packet.Signature {
	t.Helper()
	p, err := packet.Read(bytes.NewReader(pkt))
	if err != nil {
		t.Fatal(err)
	}
	sig, ok := p.(*packet.Signature)
	if !ok {
		t.Fatalf("a %T, not a signature", p)
	}
	return sig
}

// reArmor puts a packet back into armour with go-crypto's encoder.
func reArmor(t testing.TB, pkt []byte) string {
	t.Helper()
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.SignatureType, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write(pkt); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestCheckCommitAcceptsGPGSignatures: commits signed by gpg with an
// Ed25519 key, as a user's own commit key may be, verify.
func TestCheckCommitAcceptsGPGSignatures(t *testing.T) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		t.Fatal("gpg is not on PATH")
	}
	home, err := os.MkdirTemp("", "gnupg-") // short: gpg's socket names are length-limited
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = exec.Command("gpgconf", "--homedir", home, "--kill", "all").Run()
		os.RemoveAll(home)
	})
	run := func(stdin []byte, args ...string) []byte {
		t.Helper()
		cmd := exec.Command(gpg, append([]string{"--homedir", home, "--batch", "--pinentry-mode", "loopback", "--passphrase", ""}, args...)...)
		cmd.Stdin = bytes.NewReader(stdin)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("gpg %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return out
	}
	run(nil, "--quick-generate-key", "Nova GPG <gpg@example.com>", "ed25519", "sign", "never")
	pub := run(nil, "--armor", "--export", "gpg@example.com")
	kr, err := LoadCommitKeyRing(pub)
	if err != nil {
		t.Fatal(err)
	}
	signed := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\nauthor A <a@example.com> 1767225600 +0000\ncommitter A <a@example.com> 1767225600 +0000\n\nm\n")
	for _, digest := range []string{"SHA256", "SHA512"} {
		sig := string(run(signed, "--armor", "--detach-sign", "--digest-algo", digest))
		if reason, err := kr.CheckCommit(signed, sig); err != nil {
			t.Errorf("gpg's %s signature: %s %v", digest, reason, err)
		}
		if reason, _ := kr.CheckCommit(append([]byte("x"), signed...), sig); reason != runner.EvidenceCommitSignatureInvalid {
			t.Errorf("gpg's %s signature over other bytes: %q", digest, reason)
		}
	}
}

// BenchmarkCheckCommit measures one check of Nova's own commit signature:
// what verify and a first sync spend per commit on its signature.
func BenchmarkCheckCommit(b *testing.B) {
	cs, err := GenerateCommitSigner("Nova", "nova@example.com")
	if err != nil {
		b.Fatal(err)
	}
	kr := cs.KeyRing()
	signed, sig := signedCommit(b, cs.entity, nil, "nova.plan.created c-1 dev seq=1\n")
	for b.Loop() {
		if _, err := kr.CheckCommit(signed, sig); err != nil {
			b.Fatal(err)
		}
	}
}
