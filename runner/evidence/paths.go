package evidence

import (
	"errors"
	"path/filepath"

	"github.com/nova-platform/nova/runner/evidence/signing"
)

// LocalPaths are where local mode keeps its evidence when nothing is
// configured, following the XDG base directories.
type LocalPaths struct {
	// ConfigDir holds the generated keys: $XDG_CONFIG_HOME/nova.
	ConfigDir string
	// Repo is the default evidence repo, a bare repo created on first use:
	// $XDG_DATA_HOME/nova/evidence.git.
	Repo string
	// StateBase holds one state dir (outbox, witness, clone) per evidence
	// repo: $XDG_STATE_HOME/nova/evidence.
	StateBase string
}

// DefaultLocalPaths resolves LocalPaths from the environment through
// getenv (action/ passes os.Getenv; nothing here reads the environment).
func DefaultLocalPaths(getenv func(string) string) (LocalPaths, error) {
	home := getenv("HOME")
	dir := func(xdg, fallback string) (string, error) {
		if d := getenv(xdg); d != "" {
			return filepath.Join(d, "nova"), nil
		}
		if home == "" {
			return "", errors.New("neither " + xdg + " nor HOME is set")
		}
		return filepath.Join(home, fallback, "nova"), nil
	}
	cfg, err := dir("XDG_CONFIG_HOME", ".config")
	if err != nil {
		return LocalPaths{}, err
	}
	data, err := dir("XDG_DATA_HOME", filepath.Join(".local", "share"))
	if err != nil {
		return LocalPaths{}, err
	}
	state, err := dir("XDG_STATE_HOME", filepath.Join(".local", "state"))
	if err != nil {
		return LocalPaths{}, err
	}
	return LocalPaths{
		ConfigDir: cfg,
		Repo:      filepath.Join(data, "evidence.git"),
		StateBase: filepath.Join(state, "evidence"),
	}, nil
}

// SigningPublicKeyFile is the local event key's public half (cosign.pub
// format), generated with the key.
func (p LocalPaths) SigningPublicKeyFile() string { return signing.LocalSigningPublicKey(p.ConfigDir) }

// CommitPublicKeyFile is the local commit key's armored public half.
func (p LocalPaths) CommitPublicKeyFile() string { return signing.LocalCommitPublicKey(p.ConfigDir) }

// WitnessFile is the witness of pushed heads in a store's state dir.
func WitnessFile(stateDir string) string { return filepath.Join(stateDir, witnessFile) }
