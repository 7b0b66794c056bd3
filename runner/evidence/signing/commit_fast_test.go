package signing

import (
	"bytes"
	"crypto"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/binary"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/eddsa"
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

// checkFast reports whether signature is, in the one shape readFast
// reads, a valid signature of signed by one of keys at now, checked
// alone, as CheckCommit checks it before openpgp. False is not a verdict.
func checkFast(keys map[uint64][]fastKey, signed []byte, signature string, now time.Time) bool {
	f, ok := readFast(keys, signed, signature, now)
	return ok && f.verify()
}

// openPGPAccepts is the verdict checkFast must never contradict.
func openPGPAccepts(keys openpgp.EntityList, signed []byte, sig string) bool {
	_, err := openpgp.CheckArmoredDetachedSignature(keys, bytes.NewReader(signed), strings.NewReader(sig), nil)
	return err == nil
}

// reArmor puts a packet back into armour with go-crypto's encoder, so the
// checksum and line layout are openpgp's and not checkFast's.
func reArmor(t testing.TB, pkt []byte) string {
	t.Helper()
	var b bytes.Buffer
	w, err := armor.Encode(&b, openpgp.SignatureType, nil)
	if err != nil {
		t.Fatal(err)
	}
	w.Write(pkt)
	w.Close()
	return b.String()
}

func TestCheckFastTakesNovasSignatures(t *testing.T) {
	eddsa := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	e := newEntity(t, eddsa)
	keys := openpgp.EntityList{e}
	fast := fastKeys(keys, time.Now())
	noSalt := false
	for name, cfg := range map[string]*packet.Config{
		"as SignCommit signs":   nil,
		"SHA-512":               {DefaultHash: crypto.SHA512},
		"without salt":          {NonDeterministicSignaturesViaNotation: &noSalt},
		"SHA-512, without salt": {DefaultHash: crypto.SHA512, NonDeterministicSignaturesViaNotation: &noSalt},
	} {
		signed, sig := signedCommit(t, e, cfg, "nova.plan.created c-1 dev seq=1\n")
		if !checkFast(fast, signed, sig, time.Now()) {
			t.Errorf("%s: checkFast left it to openpgp", name)
		}
		if !openPGPAccepts(keys, signed, sig) {
			t.Errorf("%s: openpgp does not accept it", name)
		}
		// The same with and without the header's final line break, and
		// in an old-format packet header as older signers write it.
		bare := strings.TrimSuffix(sig, "\n")
		if !checkFast(fast, signed, bare, time.Now()) || !checkFast(fast, signed, bare+"\n", time.Now()) {
			t.Errorf("%s: checkFast depends on the final line break", name)
		}
		body, ok := dearmor(sig)
		if !ok {
			t.Fatalf("%s: dearmor refused openpgp's armour", name)
		}
		pkt, _ := signaturePacket(body)
		old := reArmor(t, append([]byte{0x88, byte(len(pkt))}, pkt...))
		if !checkFast(fast, signed, old, time.Now()) || !openPGPAccepts(keys, signed, old) {
			t.Errorf("%s: an old-format header: fast %v, openpgp %v", name, checkFast(fast, signed, old, time.Now()), openPGPAccepts(keys, signed, old))
		}
	}

	// CheckCommit takes the same path: a ring of Nova's own key.
	cs, err := GenerateCommitSigner("Nova", "nova@example.com")
	if err != nil {
		t.Fatal(err)
	}
	signed, sig := signedCommit(t, cs.entity, nil, "m\n")
	kr := cs.KeyRing()
	if reason, err := kr.CheckCommit(signed, sig); err != nil {
		t.Fatalf("CheckCommit: %s %v", reason, err)
	}
	if !checkFast(kr.fast, signed, sig, time.Now()) {
		t.Error("CheckCommit's ring has no fast key for Nova's own")
	}
}

// TestCheckFastLeavesTheRestToOpenPGP: whatever checkFast does not take,
// openpgp decides as it did before, reason and all.
func TestCheckFastLeavesTheRestToOpenPGP(t *testing.T) {
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

	signed, sig := signedCommit(t, e, nil, "m\n")
	body, _ := dearmor(sig)
	header := strings.Replace(sig, "-----\n\n", "-----\nComment: a header\n\n", 1)
	crc := sig[:strings.LastIndex(sig, "\n=")+2] + "AAAA\n-----END PGP SIGNATURE-----"
	noCRC := sig[:strings.LastIndex(sig, "\n=")+1] + "-----END PGP SIGNATURE-----"
	twice := reArmor(t, append(append([]byte{}, body...), body...))

	cases := []struct {
		name   string
		keys   openpgp.EntityList
		signer *openpgp.Entity
		cfg    *packet.Config
		edit   func(signed []byte, sig string) ([]byte, string)
		reason runner.Reason // "" when openpgp accepts it
	}{
		{name: "another commit", keys: openpgp.EntityList{e}, signer: e, edit: func(s []byte, g string) ([]byte, string) {
			return append(append([]byte{}, s...), 'x'), g
		}, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "a key not allowed", keys: openpgp.EntityList{other}, signer: e, reason: runner.EvidenceCommitKeyUnknown},
		{name: "an RSA key", keys: openpgp.EntityList{rsaKey}, signer: rsaKey},
		{name: "a key that expires", keys: openpgp.EntityList{expiring}, signer: expiring},
		{name: "a revoked key", keys: openpgp.EntityList{revoked}, edit: func([]byte, string) ([]byte, string) { return revSigned, revSig }, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "a signing subkey", keys: openpgp.EntityList{withSub}, signer: withSub},
		{name: "made in the future", keys: openpgp.EntityList{e}, signer: e, cfg: &packet.Config{Time: future}, reason: runner.EvidenceCommitSignatureInvalid},
		{name: "an armour header", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, header }},
		// openpgp does not check the armour's checksum; checkFast does.
		{name: "a wrong checksum", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, crc }},
		{name: "no checksum", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, noCRC }},
		{name: "two packets", keys: openpgp.EntityList{e}, edit: func([]byte, string) ([]byte, string) { return signed, twice }},
	}
	for _, c := range cases {
		s, g := signed, sig
		if c.signer != nil {
			s, g = signedCommit(t, c.signer, c.cfg, "m\n")
		}
		if c.edit != nil {
			s, g = c.edit(s, g)
		}
		if checkFast(fastKeys(c.keys, time.Now()), s, g, time.Now()) {
			t.Errorf("%s: checkFast took it", c.name)
		}
		reason, err := (&CommitKeyRing{keys: c.keys}).CheckCommit(s, g)
		if reason != c.reason || (err == nil) != (c.reason == "") {
			t.Errorf("%s: CheckCommit gave %q (%v), want %q", c.name, reason, err, c.reason)
		}
		if accepts := openPGPAccepts(c.keys, s, g); accepts != (c.reason == "") {
			t.Errorf("%s: openpgp accepts %v, the case says %v", c.name, accepts, c.reason == "")
		}
	}
}

// TestCheckFastAcceptsOnlyWhatOpenPGPAccepts changes every byte of a
// signature packet in turn, re-armoured by openpgp's own encoder so the
// checksum holds, and every byte of the signed commit: checkFast must
// never take what openpgp refuses.
func TestCheckFastAcceptsOnlyWhatOpenPGPAccepts(t *testing.T) {
	e := newEntity(t, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	keys := openpgp.EntityList{e}
	fast := fastKeys(keys, time.Now())
	noSalt := false
	for _, cfg := range []*packet.Config{nil, {NonDeterministicSignaturesViaNotation: &noSalt, DefaultHash: crypto.SHA512}} {
		signed, sig := signedCommit(t, e, cfg, "nova.plan.created c-1 dev seq=1\n")
		body, _ := dearmor(sig)
		taken := 0
		for i := range body {
			for _, x := range []byte{0x01, 0x80, 0xff} {
				b := append([]byte{}, body...)
				b[i] ^= x
				g := reArmor(t, b)
				if checkFast(fast, signed, g, time.Now()) {
					taken++
					if !openPGPAccepts(keys, signed, g) {
						t.Fatalf("byte %d ^ %#x: checkFast accepts what openpgp refuses", i, x)
					}
				}
			}
		}
		for i := range signed {
			s := append([]byte{}, signed...)
			s[i] ^= 0x20
			if checkFast(fast, s, sig, time.Now()) {
				t.Fatalf("signed byte %d changed: checkFast accepts it", i)
			}
		}
		t.Logf("%d of %d changed packets taken", taken, 3*len(body))
	}
}

// FuzzCheckFast holds checkFast to openpgp's verdict on any packet and any
// armour. The seeds are signatures of one key over one commit; the fuzzer
// changes each as a packet, armoured again before both check it, and as
// the armoured text itself.
func FuzzCheckFast(f *testing.F) {
	e := newEntity(f, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	keys := openpgp.EntityList{e}
	fast := fastKeys(keys, time.Now())
	noSalt := false
	signed, _ := signedCommit(f, e, nil, "m\n")
	for _, cfg := range []*packet.Config{nil, {NonDeterministicSignaturesViaNotation: &noSalt}, {DefaultHash: crypto.SHA512}} {
		s, sig := signedCommit(f, e, cfg, "m\n")
		if !bytes.Equal(s, signed) {
			f.Fatal("the commit signed changed")
		}
		body, _ := dearmor(sig)
		f.Add(body)
		f.Add([]byte(sig))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		for _, g := range []string{reArmor(t, b), string(b)} {
			if checkFast(fast, signed, g, time.Now()) && !openPGPAccepts(keys, signed, g) {
				t.Fatalf("checkFast accepts %q, which openpgp refuses", g)
			}
		}
	})
}

// TestCheckFastTakesGPGSignatures: commits signed by gpg with an Ed25519
// key, as a user's own commit key may be, take the same path.
func TestCheckFastTakesGPGSignatures(t *testing.T) {
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
	sig := string(run(signed, "--armor", "--detach-sign", "--digest-algo", "SHA256"))
	if reason, err := kr.CheckCommit(signed, sig); err != nil {
		t.Fatalf("CheckCommit: %s %v", reason, err)
	}
	if !checkFast(kr.fast, signed, sig, time.Now()) {
		t.Errorf("gpg's signature went to openpgp:\n%s", sig)
	}
}

// handSigned signs signed with e's Ed25519 key in a v4 packet of the given
// subpacket areas, built here byte by byte: shapes openpgp's signer does
// not make.
func handSigned(t *testing.T, e *openpgp.Entity, signed, hashed, unhashed []byte, tag func([]byte) []byte) string {
	t.Helper()
	priv := ed25519.NewKeyFromSeed(e.PrivateKey.PrivateKey.(*eddsa.PrivateKey).D)
	head := append([]byte{4, 0, byte(packet.PubKeyAlgoEdDSA), 8, byte(len(hashed) >> 8), byte(len(hashed))}, hashed...)
	h := sha256.New()
	h.Write(signed)
	h.Write(head)
	h.Write([]byte{4, 0xff, 0, 0, byte(len(head) >> 8), byte(len(head))})
	digest := h.Sum(nil)
	sig := ed25519.Sign(priv, digest)
	body := append(head, byte(len(unhashed)>>8), byte(len(unhashed)))
	body = append(body, unhashed...)
	body = append(body, tag(digest[:2])...)
	for _, x := range [][]byte{sig[:32], sig[32:]} {
		x = bytes.TrimLeft(x, "\x00")
		bits := 8*len(x) - 8
		for b := x[0]; b != 0; b >>= 1 {
			bits++
		}
		body = append(body, byte(bits>>8), byte(bits))
		body = append(body, x...)
	}
	return reArmor(t, append([]byte{0xc2, byte(len(body))}, body...))
}

func subpacket(typ byte, data ...byte) []byte {
	return append([]byte{byte(1 + len(data)), typ}, data...)
}

// TestCheckFastRefusesWhatOpenPGPRefuses: signatures that verify, in shapes
// openpgp refuses, and shapes where checkFast would read a field other
// than the one openpgp reads.
func TestCheckFastRefusesWhatOpenPGPRefuses(t *testing.T) {
	e := newEntity(t, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	keys := openpgp.EntityList{e}
	fast := fastKeys(keys, time.Now())
	signed := []byte("tree 4b825dc642cb6eb9a060e54bf8d69288fbee4904\n\nm\n")
	be32 := func(v int64) []byte { return []byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)} }
	past, later := be32(time.Now().Add(-time.Hour).Unix()), be32(time.Now().Add(48*time.Hour).Unix())
	id := make([]byte, 8)
	binary.BigEndian.PutUint64(id, e.PrimaryKey.KeyId)
	fpr := append([]byte{4}, e.PrimaryKey.Fingerprint...)
	issuer := subpacket(33, fpr...)
	notation := func(critical bool) []byte {
		typ := byte(20)
		if critical {
			typ |= 0x80
		}
		return subpacket(typ, append([]byte{0x80, 0, 0, 0, 0, 13, 0, 1}, "x@example.com1"...)...)
	}
	same := func(t []byte) []byte { return t }
	cat := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }

	cases := []struct {
		name             string
		hashed, unhashed []byte
		tag              func([]byte) []byte
		accepts          bool // openpgp's verdict
		fast             bool
	}{
		{name: "the plain shape", hashed: cat(subpacket(2, past...), issuer), tag: same, accepts: true, fast: true},
		{name: "an unhashed issuer id", hashed: subpacket(2, past...), unhashed: subpacket(16, id...), tag: same, accepts: true, fast: true},
		{name: "a notation", hashed: cat(subpacket(2, past...), issuer, notation(false)), tag: same, accepts: true, fast: true},
		{name: "a critical notation", hashed: cat(subpacket(2, past...), issuer, notation(true)), tag: same},
		{name: "a second creation time, later", hashed: cat(subpacket(2, past...), subpacket(2, later...), issuer), tag: same},
		// openpgp reads no creation time from the unhashed area.
		{name: "a later creation time, an earlier unhashed", hashed: cat(subpacket(2, later...), issuer), unhashed: subpacket(2, past...), tag: same},
		{name: "an unknown critical subpacket", hashed: cat(subpacket(2, past...), issuer, subpacket(0x80|99, 1)), tag: same},
		{name: "an expiry", hashed: cat(subpacket(2, past...), issuer, subpacket(3, 0, 0, 0, 1)), tag: same},
		{name: "issuers that differ", hashed: cat(subpacket(2, past...), issuer), unhashed: subpacket(16, 1, 2, 3, 4, 5, 6, 7, 8), tag: same},
		{name: "no issuer", hashed: subpacket(2, past...), tag: same},
		{name: "no creation time", hashed: issuer, tag: same},
		// v4: openpgp does not compare the hash's first bytes; checkFast does.
		{name: "a wrong hash tag", hashed: cat(subpacket(2, past...), issuer), tag: func(t []byte) []byte { return []byte{t[0] ^ 1, t[1]} }, accepts: true},
	}
	for _, c := range cases {
		sig := handSigned(t, e, signed, c.hashed, c.unhashed, c.tag)
		if got := openPGPAccepts(keys, signed, sig); got != c.accepts {
			t.Errorf("%s: openpgp accepts %v, the case says %v", c.name, got, c.accepts)
		}
		if got := checkFast(fast, signed, sig, time.Now()); got != c.fast {
			t.Errorf("%s: checkFast %v, want %v", c.name, got, c.fast)
		}
	}
}

// TestFastKeysLeaveSharedIDsToOpenPGP: a key id that is also a subkey's
// (the same key material imported as one entity's key and another's
// subkey) gets openpgp's checks of that subkey, so checkFast does not
// answer for it.
func TestFastKeysLeaveSharedIDsToOpenPGP(t *testing.T) {
	cfg := &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA}
	a, b := newEntity(t, cfg), newEntity(t, cfg)
	if got := fastKeys(openpgp.EntityList{a, b}, time.Now()); len(got[a.PrimaryKey.KeyId]) != 1 || len(got[b.PrimaryKey.KeyId]) != 1 {
		t.Fatalf("two plain keys: %v", got)
	}
	b.Subkeys = append(b.Subkeys, openpgp.Subkey{PublicKey: a.PrimaryKey})
	if got := fastKeys(openpgp.EntityList{a, b}, time.Now()); len(got[a.PrimaryKey.KeyId]) != 0 || len(got[b.PrimaryKey.KeyId]) != 1 {
		t.Errorf("a key that is also a subkey: %v", got)
	}
}
