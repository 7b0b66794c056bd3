package signing

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"errors"
	"fmt"
	"os"
	"path/filepath"

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

// LocalSigningPublicKey is the file in dir holding the local event key's
// public half (cosign.pub format), written beside the key.
func LocalSigningPublicKey(dir string) string { return filepath.Join(dir, localSigningPub) }

// LocalCommitPublicKey is the file in dir holding the local commit key's
// armored public half.
func LocalCommitPublicKey(dir string) string { return filepath.Join(dir, localCommitPub) }

// LocalSigner loads the local-mode event key from dir, generating it on
// first use. It is stored unencrypted with mode 0600, like an SSH key
// without passphrase: local mode runs unattended.
func LocalSigner(dir string) (*Signer, error) {
	b, err := os.ReadFile(filepath.Join(dir, localSigningKey))
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
	// Another run that generated a key first wins (os.ErrExist): use that one.
	if err := installPrivateKey(dir, localSigningKey, privPEM); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return LocalSigner(dir)
}

// LocalCommitSigner loads the local-mode commit key from dir, generating it
// on first use.
func LocalCommitSigner(dir, name, email string) (*CommitSigner, error) {
	b, err := os.ReadFile(filepath.Join(dir, localCommitKey))
	if err == nil {
		c, err := LoadCommitSigner(b, nil, name, email)
		if err != nil {
			return nil, err
		}
		return c, ensurePublicFile(dir, localCommitPub, c.ArmoredPublicKey)
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading local commit key: %w", err)
	}
	c, err := GenerateCommitSigner(localCommitIdentity, localCommitEmail)
	if err != nil {
		return nil, err
	}
	priv, err := c.armoredPrivateKey()
	if err != nil {
		return nil, err
	}
	if err := installPrivateKey(dir, localCommitKey, priv); err != nil && !errors.Is(err, os.ErrExist) {
		return nil, err
	}
	return LocalCommitSigner(dir, name, email)
}

// ensurePublicFile writes the public half beside a private key when it is
// missing, so users always find the key to give verifiers. It goes through
// a temporary file so a crash never leaves a torn key behind.
func ensurePublicFile(dir, name string, pub func() ([]byte, error)) error {
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err == nil {
		return nil
	}
	b, err := pub()
	if err != nil {
		return fmt.Errorf("encoding %s: %w", name, err)
	}
	tmp, err := writeTemp(dir, name, b, 0o644)
	if err == nil {
		defer os.Remove(tmp)
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
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
	tmp, err := writeTemp(dir, name, priv, 0o600)
	if err != nil {
		return fmt.Errorf("writing %s: %w", name, err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, filepath.Join(dir, name)); err != nil {
		return fmt.Errorf("installing %s: %w", name, err)
	}
	return syncDir(dir)
}

// writeTemp writes data to a synced temporary file in dir and returns its
// path.
func writeTemp(dir, name string, data []byte, perm os.FileMode) (string, error) {
	f, err := os.CreateTemp(dir, "."+name+"-*")
	if err != nil {
		return "", err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Chmod(perm)
	}
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// syncDir makes a rename or link in dir durable.
func syncDir(dir string) error {
	f, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
