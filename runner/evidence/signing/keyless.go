package signing

import (
	"bytes"
	"crypto"
	"errors"
)

// KeylessSigner signs with a short-lived certificate instead of a key
// (runner/evidence/keyless): Sign as Signer does, for DSSE envelopes whose
// certificate travels beside them; SigFile an event's .sig, the signature
// and its certificate in one bundle.
type KeylessSigner interface {
	Sign(msg []byte) ([]byte, error)
	SigFile(msg []byte) ([]byte, error)
	CertificatePEM() []byte
}

// KeylessVerifier checks a keyless .sig over msg and names the identity
// that signed it (runner/evidence/keyless.Policy: a trusted CA and the
// identities .nova/signers.yml names).
type KeylessVerifier interface {
	VerifyKeyless(msg, sigFile []byte) (identity string, err error)
	Fingerprint() string
}

// Kinds of event signature, as `nova evidence verify` reports them.
const (
	KindKey     = "key"
	KindKeyless = "keyless"
)

// Signed says which kind of signature verified an event, and for a
// keyless one whose.
type Signed struct {
	Kind     string `json:"kind"`
	Identity string `json:"identity,omitempty"`
}

// ErrKeylessNotTrusted is returned for a keyless signature where no
// signers policy is configured: nothing says whose certificates count.
var ErrKeylessNotTrusted = errors.New("event is signed keylessly and no signers policy (.nova/signers.yml and the Fulcio root) is configured")

// isKeylessSig tells a keyless bundle (JSON) from a key signature: base64
// never starts with '{', nor does DER (0x30).
func isKeylessSig(sigFile []byte) bool {
	b := bytes.TrimSpace(sigFile)
	return len(b) > 0 && b[0] == '{'
}

// SignEvent returns the .sig file content for an event: keyless when the
// keys have a KeylessSigner, else with the event key.
func (k Keys) SignEvent(msg []byte) ([]byte, error) {
	if k.Keyless != nil {
		return k.Keyless.SigFile(msg)
	}
	if k.Events == nil {
		return nil, errors.New("no event signing key")
	}
	return k.Events.Sign(msg)
}

// Attestor signs attestations and claims: the keyless signer when there
// is one (its CertificatePEM then goes beside the signature), else the
// event key.
func (k Keys) Attestor() interface{ Sign([]byte) ([]byte, error) } {
	if k.Keyless != nil {
		return k.Keyless
	}
	return k.Events
}

// WithKeyless returns a copy of k that also accepts keyless signatures v
// verifies. Its fingerprint changes with v's, so what was verified under
// one signers policy is verified again under another.
func (k *KeySet) WithKeyless(v KeylessVerifier) *KeySet {
	c := *k
	c.keyless = v
	return &c
}

// NewKeylessKeySet is a KeySet of v and any keys: a verifier of evidence
// signed only keylessly needs no public key.
func NewKeylessKeySet(v KeylessVerifier, keys ...crypto.PublicKey) (*KeySet, error) {
	if v == nil {
		return NewKeySet(keys...)
	}
	if len(keys) == 0 {
		return &KeySet{keyless: v}, nil
	}
	ks, err := NewKeySet(keys...)
	if err != nil {
		return nil, err
	}
	return ks.WithKeyless(v), nil
}

// VerifySigner is Verify, saying which kind of signature verified.
func (k *KeySet) VerifySigner(msg, sigFile []byte) (Signed, error) {
	if isKeylessSig(sigFile) {
		if k.keyless == nil {
			return Signed{Kind: KindKeyless}, ErrKeylessNotTrusted
		}
		who, err := k.keyless.VerifyKeyless(msg, sigFile)
		return Signed{Kind: KindKeyless, Identity: who}, err
	}
	return Signed{Kind: KindKey}, k.verifyKey(msg, sigFile)
}
