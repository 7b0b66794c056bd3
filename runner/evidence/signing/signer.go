// Package signing holds the two identities that sign Nova's evidence: an
// ECDSA P-256 key for events (cosign's blob format, so `cosign verify-blob`
// accepts them without Nova) and an OpenPGP key for commits (so
// `git verify-commit`, GitHub and Gitea accept them), with the key sets
// that verify both and the key files local mode generates.
package signing

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Signer signs events: ECDSA P-256 over SHA-256 of the event's canonical
// bytes, ASN.1 DER, base64-encoded — exactly what `cosign sign-blob`
// writes, so `cosign verify-blob --key` accepts the .sig files as they are.
// Any other message (a DSSE envelope's PAE, an approver claim) is signed
// the same way, so one key vouches for all of them.
//
// The standard library does the signing: sigstore's signature package
// does the same two calls, and linking it cost every start of Nova the
// inits of protobuf descriptors and container-image name parsing.
type Signer struct {
	priv *ecdsa.PrivateKey
}

// NewSigner wraps a P-256 private key. Other curves are refused: cosign
// and the design both name P-256, and a verifier must know what to expect.
func NewSigner(priv *ecdsa.PrivateKey) (*Signer, error) {
	if priv == nil || priv.Curve != elliptic.P256() {
		return nil, errors.New("event signing key must be ECDSA P-256")
	}
	return &Signer{priv: priv}, nil
}

// Sign returns the .sig file content for msg: base64 of SignDER.
func (s *Signer) Sign(msg []byte) ([]byte, error) {
	der, err := s.SignDER(msg)
	if err != nil {
		return nil, err
	}
	out := make([]byte, base64.StdEncoding.EncodedLen(len(der)))
	base64.StdEncoding.Encode(out, der)
	return out, nil
}

// SignDER returns the raw ASN.1 DER signature over SHA-256 of msg, for
// formats that encode signatures themselves (DSSE).
func (s *Signer) SignDER(msg []byte) ([]byte, error) {
	digest := sha256.Sum256(msg)
	der, err := ecdsa.SignASN1(rand.Reader, s.priv, digest[:])
	if err != nil {
		return nil, fmt.Errorf("signing: %w", err)
	}
	return der, nil
}

// PublicKey is the key a verifier needs.
func (s *Signer) PublicKey() crypto.PublicKey { return &s.priv.PublicKey }

// PublicKeyPEM is the public key as cosign writes cosign.pub.
func (s *Signer) PublicKeyPEM() ([]byte, error) {
	return cryptoutils.MarshalPublicKeyToPEM(&s.priv.PublicKey)
}

// KeySet verifies event signatures against one or more allowed public keys
// (a key rotation leaves old events signed by the old key).
type KeySet struct {
	keys []*ecdsa.PublicKey
	// der holds each key's PKIX encoding, for Fingerprint.
	der [][]byte
	// keyless, when set, verifies keyless signatures (WithKeyless).
	keyless KeylessVerifier
}

// NewKeySet accepts ECDSA public keys; anything else is a configuration
// mistake worth failing on rather than silently never matching.
func NewKeySet(keys ...crypto.PublicKey) (*KeySet, error) {
	if len(keys) == 0 {
		return nil, errors.New("no event public key given")
	}
	ks := &KeySet{}
	for i, k := range keys {
		pub, ok := k.(*ecdsa.PublicKey)
		if !ok {
			return nil, fmt.Errorf("event public key %d is %T, want ECDSA P-256", i+1, k)
		}
		if pub == nil || pub.Curve != elliptic.P256() {
			return nil, fmt.Errorf("event public key %d is not on P-256", i+1)
		}
		der, err := x509.MarshalPKIXPublicKey(pub)
		if err != nil {
			return nil, fmt.Errorf("encoding event public key %d: %w", i+1, err)
		}
		ks.keys = append(ks.keys, pub)
		ks.der = append(ks.der, der)
	}
	return ks, nil
}

// Fingerprint names the set of keys, whatever their order: what was
// verified with one set must be verified again under another.
func (k *KeySet) Fingerprint() string {
	if k.keyless != nil {
		return fingerprint(append(slices.Clone(k.der), []byte(k.keyless.Fingerprint())))
	}
	return fingerprint(k.der)
}

// fingerprint is the sha256 of the sorted, deduplicated parts.
func fingerprint(parts [][]byte) string {
	sums := make([]string, 0, len(parts))
	for _, p := range parts {
		s := sha256.Sum256(p)
		sums = append(sums, hex.EncodeToString(s[:]))
	}
	slices.Sort(sums)
	sums = slices.Compact(sums)
	all := sha256.Sum256([]byte(strings.Join(sums, "\n")))
	return hex.EncodeToString(all[:])
}

// ErrSignatureMismatch is returned when no allowed key verifies a signature.
var ErrSignatureMismatch = errors.New("signature does not verify with any allowed key")

// Verify checks a .sig file's content against msg: a keyless bundle with
// the keyless verifier (WithKeyless), anything else with the keys.
func (k *KeySet) Verify(msg, sigFile []byte) error {
	_, err := k.VerifySigner(msg, sigFile)
	return err
}

// verifyKey checks a key signature. Like cosign it accepts the base64
// text (surrounding whitespace ignored) and, failing that, raw DER.
func (k *KeySet) verifyKey(msg, sigFile []byte) error {
	// A .sig file is base64 with maybe a newline; anything else is taken
	// as raw DER, untrimmed: a DER signature may end in a byte that reads
	// as whitespace.
	der := sigFile
	if b, err := base64.StdEncoding.DecodeString(string(bytes.TrimSpace(sigFile))); err == nil {
		der = b
	}
	digest := sha256.Sum256(msg)
	for _, pub := range k.keys {
		if ecdsa.VerifyASN1(pub, digest[:], der) {
			return nil
		}
	}
	return ErrSignatureMismatch
}
