package giteatest

import (
	"bytes"
	"context"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
)

// Option configures the Gitea that Start runs.
type Option func(*options)

type options struct{ signMerges bool }

// SignMerges makes Gitea sign the merge commits it creates with an
// instance key of its own, as [repository.signing] MERGES = always does on
// an operator's Gitea; it signs nothing else, so the commits other tests
// create stay as they were. Gitea then shows its merge commits as
// verified, which is what a merged commit's provenance rests on. It needs
// gpg on PATH: Gitea signs through git, and git through gpg.
func SignMerges() Option { return func(o *options) { o.signMerges = true } }

// signingKey makes the instance's OpenPGP key in a GNUPGHOME under work
// and returns the app.ini section that has Gitea sign merges with it, and
// the environment Gitea needs to find it.
func signingKey(ctx context.Context, work string) (ini string, env []string, stop func(), err error) {
	gpg, err := exec.LookPath("gpg")
	if err != nil {
		return "", nil, nil, fmt.Errorf("gpg is not on PATH, and Gitea signs merge commits through it: %w", err)
	}
	const name, email = "giteatest", "gitea@giteatest.invalid"
	e, err := openpgp.NewEntity(name, "", email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return "", nil, nil, fmt.Errorf("making the signing key: %w", err)
	}
	var secret bytes.Buffer
	if err := e.SerializePrivate(&secret, nil); err != nil {
		return "", nil, nil, fmt.Errorf("encoding the signing key: %w", err)
	}
	home := filepath.Join(work, "gnupg")
	if err := os.Mkdir(home, 0o700); err != nil {
		return "", nil, nil, err
	}
	env = []string{"GNUPGHOME=" + home}
	stop = func() {
		// gpg leaves an agent running in the home; it must not outlive
		// the test.
		cmd := exec.Command("gpgconf", "--kill", "all")
		cmd.Env = append(cleanEnv(), env...)
		_ = cmd.Run()
	}
	cmd := exec.CommandContext(ctx, gpg, "--batch", "--import")
	cmd.Env, cmd.Stdin = append(cleanEnv(), env...), &secret
	if out, err := cmd.CombinedOutput(); err != nil {
		stop()
		return "", nil, nil, fmt.Errorf("importing the signing key into gpg: %w\n%s", err, out)
	}
	fpr := strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint))
	ini = fmt.Sprintf(`
[repository.signing]
SIGNING_KEY = %s
SIGNING_NAME = %s
SIGNING_EMAIL = %s
INITIAL_COMMIT = never
CRUD_ACTIONS = never
WIKI = never
MERGES = always
`, fpr, name, email)
	return ini, env, stop, nil
}
