package evidence

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// Local-mode key files, generated on first use under the user's config dir.
const (
	localSigningKey     = "signing.key" // PKCS#8 PEM, mode 0600
	localSigningPub     = "signing.pub" // cosign.pub format
	localCommitKey      = "commit-key.asc"
	localCommitPub      = "commit-key.pub.asc"
	localCommitIdentity = "Nova evidence"
	localCommitEmail    = "nova-evidence@localhost"
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
}

// Keys are the two signing identities of a writer.
type Keys struct {
	Events *Signer
	Commit *CommitSigner
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

// LocalSigner loads the local-mode event key from dir, generating it on
// first use. It is stored unencrypted with mode 0600, like an SSH key
// without passphrase: local mode runs unattended.
func LocalSigner(dir string) (*Signer, error) {
	path := filepath.Join(dir, localSigningKey)
	b, err := os.ReadFile(path)
	if err == nil {
		s, err := LoadSigner(b, nil)
		if err != nil {
			return nil, err
		}
		return s, ensurePublicFile(dir, localSigningPub, s.PublicKeyPEM)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading local signing key: %w", err)
	}
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating signing key: %w", err)
	}
	privPEM, err := cryptoutils.MarshalPrivateKeyToPEM(priv)
	if err != nil {
		return nil, fmt.Errorf("encoding signing key: %w", err)
	}
	if err := installPrivateKey(dir, localSigningKey, privPEM); errors.Is(err, os.ErrExist) {
		return LocalSigner(dir) // another run generated it first: use that one
	} else if err != nil {
		return nil, err
	}
	return LocalSigner(dir)
}

// ensurePublicFile writes the public half beside a private key when it is
// missing, so users always find the key to give verifiers.
func ensurePublicFile(dir, name string, pub func() ([]byte, error)) error {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, err := pub()
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	if err := writeFileAtomic(path, b, 0o644); err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	return nil
}

// installPrivateKey writes a generated key without ever leaving a
// half-written file behind (a crash mid-write must not make the next run
// fail or generate a second identity), and links it into place so that two
// first runs racing keep one key: the loser gets an os.ErrExist error.
func installPrivateKey(dir, name string, priv []byte) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating key dir: %w", err)
	}
	tmp, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(priv)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("writing %s: %w", name, werr)
	}
	if err := os.Link(tmp.Name(), filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("installing %s: %w", name, err)
	}
	return syncDir(dir)
}
