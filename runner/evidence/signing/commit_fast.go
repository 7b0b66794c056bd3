package signing

import (
	"crypto/ed25519"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"hash"
	"time"

	"filippo.io/edwards25519"
	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/eddsa"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Verify checks a signature on every commit of a history, and so does a
// runner's first sync; openpgp's reader cost about 15 % of each check
// besides the Ed25519 arithmetic (the armour, the packet reader's
// buffers, the subpacket structures). Nova's
// own commit signatures, and gpg's with an Ed25519 key, have one shape:
// one armoured v4 EdDSA signature packet over the commit, binary, SHA-256
// or SHA-512, subpackets naming the creation time, the issuer and a salt.
// readFast reads exactly that shape, and CheckCommit accepts a signature
// of it only when everything openpgp would check holds; anything else,
// and every signature that does not verify, goes to openpgp, which
// decides and says why. So the fast path never rejects, and it accepts
// nothing openpgp would not (TestCheckFastAcceptsOnlyWhatOpenPGPAccepts,
// FuzzCheckFast).

// fastKeys are the allowed keys the fast path may check with, by key id: a v4
// Ed25519 primary key allowed to sign whose acceptance no longer depends
// on the time. Its self-signature and the key are not from the future,
// neither ever expires, nothing revokes the key or its identity, and no
// critical notation is on its self-signature. An id any other key shares
// (a subkey, or a key not so plain) is left to openpgp.
func fastKeys(keys openpgp.EntityList, now time.Time) map[uint64][]fastKey {
	out := map[uint64][]fastKey{}
	plain := map[uint64]bool{}
	for _, e := range keys {
		id := e.PrimaryKey.KeyId
		pub, ok := plainSigningKey(e, now)
		if seen, was := plain[id]; !was || seen {
			plain[id] = ok
		}
		if ok {
			out[id] = append(out[id], newFastKey(pub))
		}
		for _, sub := range e.Subkeys {
			plain[sub.PublicKey.KeyId] = false
		}
	}
	for id, ok := range plain {
		if !ok {
			delete(out, id)
		}
	}
	return out
}

func plainSigningKey(e *openpgp.Entity, now time.Time) (ed25519.PublicKey, bool) {
	pk := e.PrimaryKey
	if pk == nil || pk.Version != 4 || pk.PubKeyAlgo != packet.PubKeyAlgoEdDSA || !pk.CanSign() {
		return nil, false
	}
	ed, ok := pk.PublicKey.(*eddsa.PublicKey)
	if !ok || len(ed.X) != ed25519.PublicKeySize {
		return nil, false
	}
	self, identity := e.PrimarySelfSignature()
	if self == nil || !self.FlagsValid || !self.FlagSign {
		return nil, false
	}
	if len(e.Revocations) > 0 || identity != nil && len(identity.Revocations) > 0 {
		return nil, false
	}
	for _, n := range self.Notations {
		if n.IsCritical {
			return nil, false
		}
	}
	if pk.CreationTime.Unix() > now.Unix() || self.CreationTime.Unix() > now.Unix() {
		return nil, false
	}
	if self.KeyLifetimeSecs != nil && *self.KeyLifetimeSecs != 0 || self.SigLifetimeSecs != nil && *self.SigLifetimeSecs != 0 {
		return nil, false
	}
	return ed25519.PublicKey(ed.X), true
}

const (
	armorBegin = "-----BEGIN PGP SIGNATURE-----\n\n"
	armorEnd   = "-----END PGP SIGNATURE-----"
)

// fastKey is an allowed key the fast path may check with, and its point for
// checkBatch (nil when the key is no point on the curve: such a key
// verifies nothing, and ed25519.Verify says so on its own).
type fastKey struct {
	pub   ed25519.PublicKey
	point *edwards25519.Point
}

func newFastKey(pub ed25519.PublicKey) fastKey {
	p, err := new(edwards25519.Point).SetBytes(pub)
	if err != nil {
		p = nil
	}
	return fastKey{pub: pub, point: p}
}

// fastSignature is a signature of the one shape readFast reads, read:
// the Ed25519 signature, the digest it signs, and the allowed keys of the
// issuer it names. All that is left to check is the Ed25519 equation.
type fastSignature struct {
	keys   []fastKey
	digest []byte
	rs     [ed25519.SignatureSize]byte
}

// verify checks the Ed25519 signature alone, with each key the issuer names.
func (f *fastSignature) verify() bool {
	for _, k := range f.keys {
		if ed25519.Verify(k.pub, f.digest, f.rs[:]) {
			return true
		}
	}
	return false
}

// readFast reads signature when it has the fast path's shape and everything
// but the Ed25519 equation holds: the packet, its subpackets, its time,
// an allowed issuer and the hash tag.
func readFast(keys map[uint64][]fastKey, signed []byte, signature string, now time.Time) (f fastSignature, ok bool) {
	body, ok := dearmor(signature)
	if !ok {
		return f, false
	}
	sig, ok := signaturePacket(body)
	if !ok {
		return f, false
	}
	// version, type (binary), algorithm (EdDSA), hash, hashed length.
	if len(sig) < 6 || sig[0] != 4 || sig[1] != 0 || sig[2] != byte(packet.PubKeyAlgoEdDSA) {
		return f, false
	}
	var h hash.Hash
	switch sig[3] {
	case 8:
		h = sha256.New()
	case 10:
		h = sha512.New()
	default:
		return f, false
	}
	hashedEnd := 6 + int(binary.BigEndian.Uint16(sig[4:6]))
	if hashedEnd+2 > len(sig) {
		return f, false
	}
	unhashedEnd := hashedEnd + 2 + int(binary.BigEndian.Uint16(sig[hashedEnd:hashedEnd+2]))
	if unhashedEnd+2 > len(sig) {
		return f, false
	}
	var sp subpackets
	if !sp.read(sig[6:hashedEnd], true) || !sp.read(sig[hashedEnd+2:unhashedEnd], false) {
		return f, false
	}
	if !sp.created || !sp.hasIssuer || int64(sp.creation) > now.Unix() {
		return f, false
	}
	if f.keys = keys[sp.issuer]; len(f.keys) == 0 {
		return f, false
	}
	tag := sig[unhashedEnd : unhashedEnd+2]
	r, rest, ok := mpi(sig[unhashedEnd+2:])
	if !ok {
		return f, false
	}
	s, rest, ok := mpi(rest)
	if !ok || len(rest) != 0 || len(r) > 32 || len(s) > 32 {
		return f, false
	}
	h.Write(signed)
	h.Write(sig[:hashedEnd])
	var trailer [6]byte
	trailer[0], trailer[1] = 4, 0xff
	binary.BigEndian.PutUint32(trailer[2:], uint32(hashedEnd))
	h.Write(trailer[:])
	f.digest = h.Sum(make([]byte, 0, sha512.Size))
	if f.digest[0] != tag[0] || f.digest[1] != tag[1] {
		return f, false
	}
	copy(f.rs[32-len(r):32], r)
	copy(f.rs[64-len(s):], s)
	return f, true
}

// dearmor decodes an armoured signature with no headers whose checksum
// is present and right.
func dearmor(s string) ([]byte, bool) {
	if len(s) > 0 && s[len(s)-1] == '\n' {
		s = s[:len(s)-1]
	}
	if len(s) < len(armorBegin)+len(armorEnd) || s[:len(armorBegin)] != armorBegin || s[len(s)-len(armorEnd):] != armorEnd {
		return nil, false
	}
	s = s[len(armorBegin) : len(s)-len(armorEnd)]
	// What is left is base64 lines, then "=" and the checksum's four
	// characters on a line of their own.
	if len(s) < 8 || s[len(s)-1] != '\n' || s[len(s)-6] != '=' || s[len(s)-7] != '\n' {
		return nil, false
	}
	var sum [3]byte
	if n, err := base64.StdEncoding.Decode(sum[:], []byte(s[len(s)-5:len(s)-1])); err != nil || n != 3 {
		return nil, false
	}
	lines := s[:len(s)-6]
	enc := make([]byte, 0, len(lines))
	for len(lines) > 0 {
		i := 0
		for i < len(lines) && lines[i] != '\n' {
			i++
		}
		// openpgp's armour reader ends the body at a line that begins
		// with "=" and refuses one longer than 96 characters: such lines
		// are its to judge.
		if i == 0 || i == len(lines) || i > 96 || lines[0] == '=' {
			return nil, false
		}
		enc = append(enc, lines[:i]...)
		lines = lines[i+1:]
	}
	out := make([]byte, base64.StdEncoding.DecodedLen(len(enc)))
	n, err := base64.StdEncoding.Decode(out, enc)
	if err != nil {
		return nil, false
	}
	out = out[:n]
	c := crc24(out)
	if byte(c>>16) != sum[0] || byte(c>>8) != sum[1] || byte(c) != sum[2] {
		return nil, false
	}
	return out, true
}

// crc24 is the armour's checksum (RFC 4880, 6.1).
func crc24(b []byte) uint32 {
	crc := uint32(0xb704ce)
	for _, x := range b {
		crc ^= uint32(x) << 16
		for range 8 {
			crc <<= 1
			if crc&0x1000000 != 0 {
				crc ^= 0x1864cfb
			}
		}
	}
	return crc & 0xffffff
}

// signaturePacket returns the body of b when b is one signature packet
// (tag 2) of a definite length, in either header format, and nothing
// after it.
func signaturePacket(b []byte) ([]byte, bool) {
	if len(b) < 2 {
		return nil, false
	}
	var n, at int
	switch b[0] {
	case 0xc2: // new format
		switch l := int(b[1]); {
		case l < 192:
			n, at = l, 2
		case l < 224 && len(b) >= 3:
			n, at = (l-192)<<8+int(b[2])+192, 3
		default:
			return nil, false
		}
	case 0x88: // old format, one length byte
		n, at = int(b[1]), 2
	case 0x89: // old format, two
		if len(b) < 3 {
			return nil, false
		}
		n, at = int(binary.BigEndian.Uint16(b[1:3])), 3
	default:
		return nil, false
	}
	if at+n != len(b) {
		return nil, false
	}
	return b[at:], true
}

// subpackets is what readFast needs of a signature's subpackets.
type subpackets struct {
	created   bool
	creation  uint32
	hasIssuer bool
	issuer    uint64
}

// read parses one area of subpackets, allowing only what Nova's and
// gpg's signatures hold: the creation time (hashed), issuer key ids and
// fingerprints, which must all name one key, and notations that are not
// critical (go-crypto's salt).
func (sp *subpackets) read(b []byte, hashed bool) bool {
	for len(b) > 0 {
		n := int(b[0])
		switch {
		case n < 192:
			b = b[1:]
		case n < 255 && len(b) >= 2:
			n = (n-192)<<8 + int(b[1]) + 192
			b = b[2:]
		default:
			return false
		}
		if n == 0 || n > len(b) {
			return false
		}
		p := b[:n]
		b = b[n:]
		critical, data := p[0]&0x80 != 0, p[1:]
		switch p[0] & 0x7f {
		case 2: // creation time
			if !hashed || sp.created || len(data) != 4 {
				return false
			}
			sp.created, sp.creation = true, binary.BigEndian.Uint32(data)
		case 16: // issuer key id
			if len(data) != 8 || !sp.issuedBy(binary.BigEndian.Uint64(data)) {
				return false
			}
		case 33: // issuer fingerprint, v4
			if len(data) != 21 || data[0] != 4 || !sp.issuedBy(binary.BigEndian.Uint64(data[13:])) {
				return false
			}
		case 20: // notation
			if !hashed || critical || len(data) < 8 ||
				len(data) != 8+int(binary.BigEndian.Uint16(data[4:6]))+int(binary.BigEndian.Uint16(data[6:8])) {
				return false
			}
		default:
			return false
		}
	}
	return true
}

func (sp *subpackets) issuedBy(id uint64) bool {
	if sp.hasIssuer && sp.issuer != id {
		return false
	}
	sp.hasIssuer, sp.issuer = true, id
	return true
}

// mpi splits an OpenPGP multiprecision integer off b.
func mpi(b []byte) ([]byte, []byte, bool) {
	if len(b) < 2 {
		return nil, nil, false
	}
	n := (int(binary.BigEndian.Uint16(b)) + 7) / 8
	if 2+n > len(b) {
		return nil, nil, false
	}
	return b[2 : 2+n], b[2+n:], true
}
