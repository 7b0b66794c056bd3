package signing

import (
	"crypto"
	"crypto/ecdsa"
	"encoding/pem"
	"errors"
	"fmt"
	"os"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/nova-platform/nova/runner"
)

// KeyConfig says where the two keys come from. action/ fills it from flags
// and the environment; nothing here reads the environment.
type KeyConfig struct {
	// SigningKeyFile is a cosign key file (`cosign generate-key-pair`:
	// ENCRYPTED SIGSTORE/COSIGN PRIVATE KEY) or a plain PEM private key.
	SigningKeyFile string
	// SigningKeyPEM is the same content passed directly (an env var).
	SigningKeyPEM string
	// SigningKeyPassword decrypts an encrypted cosign key.
	SigningKeyPassword []byte

	// CommitKeyFile / CommitKeyArmored hold an armored OpenPGP private key.
	CommitKeyFile       string
	CommitKeyArmored    string
	CommitKeyPassphrase []byte
	// CommitterName and CommitterEmail default to the key's first identity;
	// GitHub and Gitea mark a commit verified only when the email matches
	// the key's registered email.
	CommitterName  string
	CommitterEmail string

	// LocalDir, when set, is where keys missing above are generated on first
	// use and found again on later runs (local mode). When empty a missing
	// key is a configuration error.
	LocalDir string
	// EventKeyOptional leaves Keys.Events nil rather than fail when no
	// event key is configured: keyless signing needs none.
	EventKeyOptional bool
}

// Keys are the two signing identities of a writer.
type Keys struct {
	Events *Signer
	Commit *CommitSigner
	// Keyless, when set, signs events and attestations in Events' stead
	// (SignEvent, Attestor); Events may then be nil.
	Keyless KeylessSigner
}

// LoadKeys resolves both keys from kc.
func LoadKeys(kc KeyConfig) (Keys, error) {
	var keys Keys
	var err error
	switch {
	case kc.SigningKeyPEM != "":
		keys.Events, err = LoadSigner([]byte(kc.SigningKeyPEM), kc.SigningKeyPassword)
	case kc.SigningKeyFile != "":
		keys.Events, err = LoadSignerFile(kc.SigningKeyFile, kc.SigningKeyPassword)
	case kc.LocalDir != "":
		keys.Events, err = LocalSigner(kc.LocalDir)
	case kc.EventKeyOptional:
	default:
		err = errors.New("no event signing key configured")
	}
	if err != nil {
		return Keys{}, runner.Errorf(runner.EvidenceKeyInvalid, "loading the event signing key: %w", err)
	}
	switch {
	case kc.CommitKeyArmored != "":
		keys.Commit, err = LoadCommitSigner([]byte(kc.CommitKeyArmored), kc.CommitKeyPassphrase, kc.CommitterName, kc.CommitterEmail)
	case kc.CommitKeyFile != "":
		var b []byte
		if b, err = os.ReadFile(kc.CommitKeyFile); err == nil {
			keys.Commit, err = LoadCommitSigner(b, kc.CommitKeyPassphrase, kc.CommitterName, kc.CommitterEmail)
		}
	case kc.LocalDir != "":
		keys.Commit, err = LocalCommitSigner(kc.LocalDir, kc.CommitterName, kc.CommitterEmail)
	default:
		err = errors.New("no commit signing key configured")
	}
	if err != nil {
		return Keys{}, runner.Errorf(runner.EvidenceKeyInvalid, "loading the commit signing key: %w", err)
	}
	return keys, nil
}

// LoadSignerFile reads a cosign key file or PEM private key.
func LoadSignerFile(path string, password []byte) (*Signer, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading signing key: %w", err)
	}
	return LoadSigner(b, password)
}

// LoadSigner parses a PEM private key: cosign's encrypted format (scrypt +
// secretbox, decrypted by sigstore's cryptoutils) or an unencrypted PKCS#8
// or SEC 1 key.
func LoadSigner(pemBytes, password []byte) (*Signer, error) {
	block, _ := pem.Decode(pemBytes)
	if block == nil {
		return nil, errors.New("signing key is not PEM")
	}
	pf := cryptoutils.SkipPassword
	switch cryptoutils.PEMType(block.Type) {
	case cryptoutils.EncryptedSigstorePrivateKeyPEMType, "ENCRYPTED COSIGN PRIVATE KEY":
		if password == nil {
			return nil, errors.New("signing key is encrypted and no password is set (COSIGN_PASSWORD or NOVA_SIGNING_KEY_PASSWORD)")
		}
		pf = cryptoutils.StaticPasswordFunc(password)
	}
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(pemBytes, pf)
	if err != nil {
		// The decryption error says nothing about the password itself.
		return nil, fmt.Errorf("decoding signing key (%s): %w", block.Type, err)
	}
	ec, ok := priv.(*ecdsa.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("signing key is %T, want ECDSA P-256", priv)
	}
	return NewSigner(ec)
}

// LoadPublicKeys parses one or more PEM public keys (cosign.pub files may
// be concatenated to allow rotated keys).
func LoadPublicKeys(pemBytes []byte) ([]crypto.PublicKey, error) {
	var keys []crypto.PublicKey
	rest := pemBytes
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		k, err := cryptoutils.UnmarshalPEMToPublicKey(pem.EncodeToMemory(block))
		if err != nil {
			return nil, fmt.Errorf("decoding public key: %w", err)
		}
		keys = append(keys, k)
	}
	if len(keys) == 0 {
		return nil, errors.New("no PEM public key found")
	}
	return keys, nil
}
