package signing

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// CommitSigner signs evidence commits with OpenPGP, the way go-git's
// CommitOptions.SignKey does (an armored detached signature over the commit
// encoded without its gpgsig header), so `git verify-commit`, GitHub, Gitea
// and go-git's Commit.Verify all accept the result.
type CommitSigner struct {
	entity *openpgp.Entity
	name   string
	email  string
}

// LoadCommitSigner reads the first private key of an armored key ring,
// decrypting it with passphrase when it is protected. name and email
// default to the key's first identity.
func LoadCommitSigner(armored, passphrase []byte, name, email string) (*CommitSigner, error) {
	el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(armored))
	if err != nil {
		return nil, fmt.Errorf("reading OpenPGP key: %w", err)
	}
	for _, e := range el {
		if e.PrivateKey == nil {
			continue
		}
		if e.PrivateKey.Encrypted {
			if passphrase == nil {
				return nil, errors.New("OpenPGP key is passphrase-protected and no passphrase is set")
			}
			if err := e.DecryptPrivateKeys(passphrase); err != nil {
				return nil, fmt.Errorf("decrypting OpenPGP key: %w", err)
			}
		}
		return newCommitSigner(e, name, email), nil
	}
	return nil, errors.New("OpenPGP key ring holds no private key")
}

// GenerateCommitSigner makes a new Ed25519 OpenPGP key for name <email>.
// Ed25519 signs in microseconds, and gpg, GitHub and Gitea all accept it.
func GenerateCommitSigner(name, email string) (*CommitSigner, error) {
	e, err := openpgp.NewEntity(name, "Nova evidence commits", email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return nil, fmt.Errorf("generating OpenPGP key: %w", err)
	}
	return newCommitSigner(e, name, email), nil
}

func newCommitSigner(e *openpgp.Entity, name, email string) *CommitSigner {
	if id := e.PrimaryIdentity(); id != nil && id.UserId != nil {
		if name == "" {
			name = id.UserId.Name
		}
		if email == "" {
			email = id.UserId.Email
		}
	}
	return &CommitSigner{entity: e, name: name, email: email}
}

// Identity is the committer and author of evidence commits.
func (c *CommitSigner) Identity(when time.Time) object.Signature {
	return object.Signature{Name: c.name, Email: c.email, When: when}
}

// KeyID is the signing key's long id in hex, as gpg prints it.
func (c *CommitSigner) KeyID() string {
	return fmt.Sprintf("%016X", c.entity.PrimaryKey.KeyId)
}

// ArmoredPublicKey is the key to register with the forge (GitHub, Gitea
// `POST /user/gpg_keys`) and to give `nova evidence verify --commit-key`.
func (c *CommitSigner) ArmoredPublicKey() ([]byte, error) {
	return armored(openpgp.PublicKeyType, func(w io.Writer) error { return c.entity.Serialize(w) })
}

func (c *CommitSigner) armoredPrivateKey() ([]byte, error) {
	return armored(openpgp.PrivateKeyType, func(w io.Writer) error { return c.entity.SerializePrivate(w, nil) })
}

func armored(blockType string, serialize func(io.Writer) error) ([]byte, error) {
	var b bytes.Buffer
	w, err := armor.Encode(&b, blockType, nil)
	if err != nil {
		return nil, err
	}
	if err := serialize(w); err != nil {
		return nil, fmt.Errorf("encoding OpenPGP key: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// KeyRing is the public half, for verifiers.
func (c *CommitSigner) KeyRing() *CommitKeyRing {
	return &CommitKeyRing{keys: openpgp.EntityList{c.entity}}
}

// SignCommit sets commit.PGPSignature exactly as go-git's gpgSigner would.
func (c *CommitSigner) SignCommit(commit *object.Commit) error {
	payload := &plumbing.MemoryObject{}
	if err := commit.EncodeWithoutSignature(payload); err != nil {
		return fmt.Errorf("encoding commit for signing: %w", err)
	}
	r, err := payload.Reader()
	if err != nil {
		return err
	}
	var sig bytes.Buffer
	if err := openpgp.ArmoredDetachSign(&sig, c.entity, r, nil); err != nil {
		return fmt.Errorf("signing commit: %w", err)
	}
	commit.PGPSignature = sig.String()
	return nil
}

// CommitKeyRing holds the OpenPGP public keys allowed to sign evidence
// commits.
type CommitKeyRing struct {
	keys openpgp.EntityList
}

// LoadCommitKeyRing reads armored public (or private) keys; each argument
// may hold several, in one armored block or in several concatenated (old
// and new key after a rotation, pasted into one variable).
func LoadCommitKeyRing(armored ...[]byte) (*CommitKeyRing, error) {
	kr := &CommitKeyRing{}
	for _, a := range armored {
		for _, block := range armoredBlocks(a) {
			el, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(block))
			if err != nil {
				return nil, fmt.Errorf("reading OpenPGP public key: %w", err)
			}
			kr.keys = append(kr.keys, el...)
		}
	}
	if len(kr.keys) == 0 {
		return nil, errors.New("no OpenPGP public key given")
	}
	return kr, nil
}

// With returns a ring allowing k's keys and those of others (nil rings
// are skipped); k itself is not changed.
func (k *CommitKeyRing) With(others ...*CommitKeyRing) *CommitKeyRing {
	out := &CommitKeyRing{keys: append(openpgp.EntityList(nil), k.keys...)}
	for _, o := range others {
		if o != nil {
			out.keys = append(out.keys, o.keys...)
		}
	}
	return out
}

// Fingerprint names the allowed keys (each primary key and subkey),
// whatever their order.
func (k *CommitKeyRing) Fingerprint() string {
	var parts [][]byte
	for _, e := range k.keys {
		parts = append(parts, e.PrimaryKey.Fingerprint)
		for _, sub := range e.Subkeys {
			parts = append(parts, sub.PublicKey.Fingerprint)
		}
	}
	return fingerprint(parts)
}

// CheckCommit returns "" when signature, a commit's gpgsig header, is a
// valid signature by an allowed key of signed, the commit without its
// signature headers (what git's verify-commit checks), otherwise the
// reason it is not. go-crypto's OpenPGP reader decides, one signature at
// a time; it is safe to call from several goroutines.
func (k *CommitKeyRing) CheckCommit(signed []byte, signature string) (runner.Reason, error) {
	if signature == "" {
		return runner.EvidenceCommitUnsigned, errors.New("commit is not signed")
	}
	if !strings.HasPrefix(signature, "-----BEGIN PGP SIGNATURE-----") {
		return runner.EvidenceCommitKeyUnknown, errors.New("commit is not signed with OpenPGP")
	}
	_, err := openpgp.CheckArmoredDetachedSignature(k.keys, bytes.NewReader(signed), strings.NewReader(signature), nil)
	switch {
	case err == nil:
		return "", nil
	case errors.Is(err, pgperrors.ErrUnknownIssuer):
		return runner.EvidenceCommitKeyUnknown, errors.New("commit is signed by a key that is not allowed")
	default:
		return runner.EvidenceCommitSignatureInvalid, fmt.Errorf("commit signature does not verify: %w", err)
	}
}

// armoredBlocks splits b at each "-----BEGIN PGP" line: openpgp reads only
// the first armored block of its input and would silently drop the rest.
// Input without such a line is returned whole, for openpgp to reject.
func armoredBlocks(b []byte) [][]byte {
	begin := []byte("-----BEGIN PGP ")
	var blocks [][]byte
	for {
		i := bytes.Index(b, begin)
		if i < 0 {
			break
		}
		b = b[i:]
		next := bytes.Index(b[len(begin):], begin)
		if next < 0 {
			blocks = append(blocks, b)
			break
		}
		blocks = append(blocks, b[:len(begin)+next])
		b = b[len(begin)+next:]
	}
	if len(blocks) == 0 {
		return [][]byte{b}
	}
	return blocks
}
