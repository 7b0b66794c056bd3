package main

import (
	"context"
	"errors"
	"os"
	"strconv"
	"strings"
	"sync"

	"github.com/go-git/go-git/v5"
	"github.com/sigstore/cosign/v2/pkg/providers"
	// Registers GitHub Actions' token provider: the job's id-token,
	// requested with ACTIONS_ID_TOKEN_REQUEST_URL/TOKEN.
	_ "github.com/sigstore/cosign/v2/pkg/providers/github"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/local"
)

// KeylessConfig is how events are signed without a key, and whose keyless
// signatures count. Read from the environment once (readKeylessConfig).
type KeylessConfig struct {
	// Sign is NOVA_KEYLESS: sign events and attestations with a Fulcio
	// certificate for the job's OIDC token instead of the event key.
	Sign bool
	// FulcioURL is NOVA_FULCIO_URL (Sigstore's public Fulcio by default).
	FulcioURL string
	// Token and TokenFile (NOVA_OIDC_TOKEN, NOVA_OIDC_TOKEN_FILE) give the
	// token where the job is not GitHub's; on GitHub the job's id-token is
	// requested (permissions: id-token: write).
	Token, TokenFile string
	// Root is the Fulcio CA (PEM: NOVA_FULCIO_ROOT, or the file
	// NOVA_FULCIO_ROOT_FILE) keyless signatures must chain to.
	Root string
	// SignersFile is an explicit signers.yml (NOVA_SIGNERS_FILE, verify's
	// --signers): an auditor's copy of the default branch's, for verifying
	// outside a forge's job. In a forge's job it is refused (keylessFlags).
	SignersFile string
	// DefaultRef is the ref the identities of SignersFile or of Trusted's
	// copy default to: refs/heads/ + NOVA_DEFAULT_BRANCH, else the
	// trusted base's branch. Refused in a forge's job, like SignersFile.
	DefaultRef string
	// Forge reads .nova/signers.yml from the trusted base through the
	// forge's API: a forge's job with a token. It wins over the others.
	Forge *forgeSigners
	// Trusted reads .nova/signers.yml from the checkout's trusted base
	// (the default branch), never the working tree.
	Trusted *local.TrustedApprovers
	// RekorURL is NOVA_REKOR_URL: when set, every keyless event
	// signature is uploaded to this transparency log and its entry kept
	// in the event's bundle. Off by default (private forges).
	RekorURL string
	// RekorKey is the log's public key (PEM: NOVA_REKOR_PUBLIC_KEY, or
	// the file NOVA_REKOR_PUBLIC_KEY_FILE; verify's --rekor-public-key):
	// with it, verification checks the entries bundles carry, and the
	// signer refuses answers not signed with it.
	RekorKey string
	// RequireLog is NOVA_REKOR_REQUIRED (verify's --require-tlog): a
	// keyless signature without a log entry does not count.
	RequireLog bool
}

func readKeylessConfig(getenv func(string) string) (KeylessConfig, error) {
	k := KeylessConfig{
		FulcioURL:   getenv("NOVA_FULCIO_URL"),
		Token:       getenv("NOVA_OIDC_TOKEN"),
		TokenFile:   getenv("NOVA_OIDC_TOKEN_FILE"),
		Root:        getenv("NOVA_FULCIO_ROOT"),
		SignersFile: getenv("NOVA_SIGNERS_FILE"),
	}
	k.RekorURL, k.RekorKey = getenv("NOVA_REKOR_URL"), getenv("NOVA_REKOR_PUBLIC_KEY")
	if f := getenv("NOVA_REKOR_PUBLIC_KEY_FILE"); f != "" && k.RekorKey == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return k, runner.Errorf(runner.ConfigInvalid, "NOVA_REKOR_PUBLIC_KEY_FILE: %w", err)
		}
		k.RekorKey = string(b)
	}
	if v := getenv("NOVA_REKOR_REQUIRED"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return k, runner.Errorf(runner.ConfigInvalid, "NOVA_REKOR_REQUIRED=%q: want true or false", v)
		}
		k.RequireLog = on
	}
	if v := getenv("NOVA_KEYLESS"); v != "" {
		on, err := strconv.ParseBool(v)
		if err != nil {
			return k, runner.Errorf(runner.ConfigInvalid, "NOVA_KEYLESS=%q: want true or false", v)
		}
		k.Sign = on
	}
	if b := getenv("NOVA_DEFAULT_BRANCH"); b != "" {
		k.DefaultRef = "refs/heads/" + strings.TrimPrefix(b, "refs/heads/")
	}
	if f := getenv("NOVA_FULCIO_ROOT_FILE"); f != "" && k.Root == "" {
		b, err := os.ReadFile(f)
		if err != nil {
			return k, runner.Errorf(runner.SignersConfigInvalid, "NOVA_FULCIO_ROOT_FILE: %w", err)
		}
		k.Root = string(b)
	}
	return k, nil
}

// configured reports whether keyless signatures are to be signed or
// verified at all: a key-only setup reads no signers.yml.
func (k KeylessConfig) configured() bool {
	return k.Sign || k.Root != "" || k.SignersFile != ""
}

// policy is the verifier of keyless signatures: the Fulcio root and the
// identities signers.yml names. Nil when keyless is not configured.
func (k KeylessConfig) policy(ctx context.Context) (*keyless.Policy, error) {
	if !k.configured() {
		return nil, nil
	}
	if k.Root == "" {
		return nil, runner.Errorf(runner.SignersConfigInvalid, "keyless signatures need the Fulcio root they chain to (NOVA_FULCIO_ROOT or NOVA_FULCIO_ROOT_FILE; Sigstore's public one for fulcio.sigstore.dev)")
	}
	s, err := k.signers(ctx)
	if err != nil {
		return nil, err
	}
	p, err := keyless.NewPolicy(s, []byte(k.Root))
	if err != nil {
		return nil, err
	}
	// Wherever signers.yml came from, the log's key and requirement
	// apply: a forge's job is where they matter most.
	switch {
	case k.RekorKey != "":
		return p.WithRekor([]byte(k.RekorKey), k.RequireLog)
	case k.RequireLog:
		return nil, runner.Errorf(runner.ConfigInvalid, "a Rekor entry is required (NOVA_REKOR_REQUIRED, --require-tlog) and no Rekor public key checks it (NOVA_REKOR_PUBLIC_KEY, --rekor-public-key)")
	}
	return p, nil
}

// signers reads .nova/signers.yml: through the forge's API in a forge's
// job, else the file named, else the checkout's trusted base.
func (k KeylessConfig) signers(ctx context.Context) (*keyless.Signers, error) {
	if k.Forge != nil {
		return k.Forge.read(ctx)
	}
	var data []byte
	defaultRef := k.DefaultRef
	switch {
	case k.SignersFile != "":
		b, err := os.ReadFile(k.SignersFile)
		if err != nil {
			return nil, runner.Errorf(runner.SignersConfigInvalid, "reading %s: %w", k.SignersFile, err)
		}
		data = b
	case k.Trusted != nil:
		b, branch, err := k.Trusted.TrustedFile(keyless.SignersFile, keyless.MaxSignersBytes, runner.SignersConfigInvalid)
		if err != nil {
			return nil, err
		}
		data = b
		if defaultRef == "" {
			defaultRef = branch
		}
	default:
		return nil, runner.Errorf(runner.SignersConfigInvalid, "no %s to say whose keyless signatures count (NOVA_SIGNERS_FILE, or a checkout with it on the default branch)", keyless.SignersFile)
	}
	return keyless.ParseSigners(data, defaultRef)
}

// signer obtains the run's keyless signer: the first certificate now,
// later ones as they expire.
func (k KeylessConfig) signer(ctx context.Context) (*keyless.Renewing, error) {
	return keyless.NewRenewing(ctx, keyless.Options{FulcioURL: k.FulcioURL, RekorURL: k.RekorURL, RekorPublicKey: []byte(k.RekorKey)}, k.token)
}

// token is the job's OIDC token for Fulcio (audience sigstore).
func (k KeylessConfig) token(ctx context.Context) (string, error) {
	switch {
	case k.Token != "":
		return k.Token, nil
	case k.TokenFile != "":
		b, err := os.ReadFile(k.TokenFile)
		if err != nil {
			return "", runner.Errorf(runner.KeylessTokenMissing, "NOVA_OIDC_TOKEN_FILE: %w", err)
		}
		return strings.TrimSpace(string(b)), nil
	}
	p, err := providers.ProvideFrom(ctx, "github-actions")
	if err != nil || !p.Enabled(ctx) {
		return "", runner.Errorf(runner.KeylessTokenMissing, "keyless signing (NOVA_KEYLESS) needs the job's OIDC token: give the job `permissions: id-token: write` on GitHub, or set NOVA_OIDC_TOKEN / NOVA_OIDC_TOKEN_FILE")
	}
	tok, err := p.Provide(ctx, "sigstore")
	if err != nil {
		return "", runner.Errorf(runner.KeylessTokenMissing, "requesting the job's OIDC token: %v", err)
	}
	return tok, nil
}

// forgeSigners reads .nova/signers.yml from the forge's trusted base
// through its API, once per process, as the approver config is read in a
// forge's job (runner.ForgeApprovers).
type forgeSigners struct {
	forge Forge
	api   ForgeConfig
	// dir is the checkout: the file is its .nova/signers.yml, asked of
	// the forge by its path from the repository's root, as the approver
	// config is.
	dir string

	once    sync.Once
	signers *keyless.Signers
	err     error
}

func (f *forgeSigners) read(ctx context.Context) (*keyless.Signers, error) {
	f.once.Do(func() {
		path, err := local.RepoPath(f.dir, keyless.SignersFile)
		if errors.Is(err, git.ErrRepositoryNotExists) {
			// A job without a checkout (an auditor's verify): the
			// repository's own, which is read from the trusted base all
			// the same.
			path, err = keyless.SignersFile, nil
		}
		if err != nil {
			f.err = runner.Errorf(runner.SignersConfigInvalid, "naming %s in the repository: %w", keyless.SignersFile, err)
			return
		}
		base, err := forgeTrustedBase(ctx, f.forge, f.api)
		if err != nil {
			f.err = err
			return
		}
		f.signers, f.err = keyless.ReadTrustedSigners(ctx, base, path)
	})
	return f.signers, f.err
}
