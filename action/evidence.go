package main

import (
	"context"
	"crypto"
	"encoding/json"
	"fmt"
	"os"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/signing"
	"github.com/nova-platform/nova/runner/local"
)

const evidenceUsage = `Usage:
  nova evidence verify [<path-or-url>] [flags]   check every signature, chain and commit
  nova evidence resolve --contract ID --env E --outcome applied|not-applied --note TEXT [--check]
  nova evidence query  [<path-or-url>] [--contract ID] [--env E] [--type T] [--approver A]
                       [--reason CODE] [--since T] [--until T] [--open-reviews]
                       [--output table|jsonl|csv]
  nova evidence export [<path-or-url>] --out DIR [--format jsonl|csv] [--contract ID]

The evidence repo is <path-or-url>, --evidence-repo, $NOVA_EVIDENCE_REPO, or in
local mode $XDG_DATA_HOME/nova/evidence.git. Exit codes: 0 verified, 1 findings,
2 could not verify.
`

// EvidenceConfig is where events go and how they are signed, read once
// from flags and the environment.
type EvidenceConfig struct {
	Repo   string
	Branch string
	// Local is true when no evidence repo was configured: the default repo
	// is created on first use and missing keys are generated.
	Local bool
	Paths evidence.LocalPaths
	Creds chain.Credentials
	Keys  signing.KeyConfig
	// TrustedEventKeys (PEM) and TrustedCommitKeys (armored OpenPGP) are
	// public keys trusted besides the signing keys' own: after a rotation
	// they carry the old keys.
	TrustedEventKeys, TrustedCommitKeys string
	// Keyless is keyless signing and whose keyless signatures count.
	Keyless KeylessConfig
}

// readEvidenceConfig resolves the repo: the flag, then NOVA_EVIDENCE_REPO,
// then local mode's default. A token (NOVA_EVIDENCE_TOKEN) is used as http
// basic auth and never appears in a URL or message.
func readEvidenceConfig(repoFlag, branch string, getenv func(string) string) (EvidenceConfig, error) {
	paths, err := evidence.DefaultLocalPaths(getenv)
	if err != nil {
		return EvidenceConfig{}, runner.Errorf(runner.ConfigInvalid, "locating local evidence paths: %w", err)
	}
	s := EvidenceConfig{Repo: firstNonEmpty(repoFlag, getenv("NOVA_EVIDENCE_REPO")), Branch: branch, Paths: paths}
	if s.Repo == "" {
		s.Repo, s.Local = paths.Repo, true
	}
	if s.Branch == "" {
		s.Branch = firstNonEmpty(getenv("NOVA_EVIDENCE_BRANCH"), chain.DefaultBranch)
	}
	if token := getenv("NOVA_EVIDENCE_TOKEN"); token != "" {
		s.Creds = chain.Credentials{Username: firstNonEmpty(getenv("NOVA_EVIDENCE_USERNAME"), "x-access-token"), Password: token}
	}
	if s.Keyless, err = readKeylessConfig(getenv); err != nil {
		return EvidenceConfig{}, err
	}
	s.Keys = evidenceKeyConfig(s, getenv)
	s.TrustedEventKeys, s.TrustedCommitKeys = getenv("NOVA_EVIDENCE_PUBLIC_KEY"), getenv("NOVA_COMMIT_PUBLIC_KEY")
	return s, nil
}

// evidenceKeyConfig reads the signing keys' sources from the environment.
// In local mode keys missing there are generated under the config dir.
func evidenceKeyConfig(s EvidenceConfig, getenv func(string) string) signing.KeyConfig {
	kc := signing.KeyConfig{
		SigningKeyFile:   getenv("NOVA_SIGNING_KEY_FILE"),
		SigningKeyPEM:    getenv("NOVA_SIGNING_KEY"),
		CommitKeyFile:    getenv("NOVA_COMMIT_KEY_FILE"),
		CommitKeyArmored: getenv("NOVA_COMMIT_KEY"),
		CommitterName:    getenv("NOVA_COMMITTER_NAME"),
		CommitterEmail:   getenv("NOVA_COMMITTER_EMAIL"),
	}
	if pw := firstNonEmpty(getenv("NOVA_SIGNING_KEY_PASSWORD"), getenv("COSIGN_PASSWORD")); pw != "" {
		kc.SigningKeyPassword = []byte(pw)
	}
	if pp := getenv("NOVA_COMMIT_KEY_PASSPHRASE"); pp != "" {
		kc.CommitKeyPassphrase = []byte(pp)
	}
	if s.Local {
		kc.LocalDir = s.Paths.ConfigDir
	}
	// A keyless job signs events with its certificate: an event key is
	// used when one is given (local claims), never required.
	kc.EventKeyOptional = s.Keyless.Sign
	return kc
}

// openEvidenceStore opens the Store for s: what `nova run` wires as its
// Recorder, and what resolve writes through.
func openEvidenceStore(ctx context.Context, s EvidenceConfig, env Env) (*evidence.Store, signing.Keys, error) {
	keys, err := signing.LoadKeys(s.Keys)
	if err != nil {
		return nil, keys, err
	}
	signers, err := s.Keyless.policy(ctx)
	if err != nil {
		return nil, keys, err
	}
	if s.Keyless.RekorURL != "" && !s.Keyless.Sign {
		// Only keyless signatures are uploaded: a key-signed job told to
		// log would otherwise record nothing in the log, silently.
		return nil, keys, runner.Errorf(runner.ConfigInvalid, "NOVA_REKOR_URL (rekor-url) uploads keyless signatures, and this job signs with a key: set NOVA_KEYLESS=true (keyless: true) or unset it")
	}
	if s.Keyless.Sign {
		r, err := s.Keyless.signer(ctx)
		if err != nil {
			return nil, keys, err
		}
		keys.Keyless = r
		// A job whose identity signers.yml does not name (a pull
		// request's run, a fork, another workflow) would write evidence
		// nobody accepts: it stops here instead. The probe is no event
		// and is never uploaded to a log.
		probe := []byte("nova keyless identity check")
		sig, err := r.LocalSigFile(probe)
		if err != nil {
			return nil, keys, err
		}
		if _, err := signers.VerifyKeylessIdentity(probe, sig); err != nil {
			return nil, keys, err
		}
	}
	trustedEvents, allowedCommits, err := trustedEvidenceKeys(s)
	if err != nil {
		return nil, keys, err
	}
	opts := []evidence.Option{
		evidence.WithBranch(s.Branch),
		evidence.WithBasicAuth(s.Creds.Username, s.Creds.Password),
		evidence.WithLogf(func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }),
	}
	if s.Local {
		opts = append(opts, evidence.WithCreate())
	}
	store, err := evidence.Open(ctx, evidence.Config{
		Repo:              s.Repo,
		StateDir:          evidence.StateDirFor(s.Paths.StateBase, s.Repo),
		Keys:              keys,
		TrustedEventKeys:  trustedEvents,
		AllowedCommitKeys: allowedCommits,
		Signers:           keylessVerifier(signers),
	}, opts...)
	return store, keys, err
}

// keylessVerifier is p as the store takes it: no verifier, not a typed nil.
func keylessVerifier(p *keyless.Policy) signing.KeylessVerifier {
	if p == nil {
		return nil
	}
	return p
}

// trustedEvidenceKeys reads the public keys a store trusts besides its own
// signing keys: $NOVA_EVIDENCE_PUBLIC_KEY (PEM) for events and
// $NOVA_COMMIT_PUBLIC_KEY (armored OpenPGP) for commits, each possibly
// several keys concatenated — the keys verify trusts too. After a rotation
// they carry the old keys, without which the store rejects a contract's
// earlier events and commits and can never authorize it again.
func trustedEvidenceKeys(s EvidenceConfig) ([]crypto.PublicKey, *signing.CommitKeyRing, error) {
	var events []crypto.PublicKey
	if v := s.TrustedEventKeys; v != "" {
		keys, err := signing.LoadPublicKeys([]byte(v))
		if err == nil {
			_, err = signing.NewKeySet(keys...) // refuse a non-P-256 key now, not at the gate
		}
		if err != nil {
			return nil, nil, runner.Errorf(runner.EvidenceKeyInvalid, "NOVA_EVIDENCE_PUBLIC_KEY: %w", err)
		}
		events = keys
	}
	var commits *signing.CommitKeyRing
	if v := s.TrustedCommitKeys; v != "" {
		kr, err := signing.LoadCommitKeyRing([]byte(v))
		if err != nil {
			return nil, nil, runner.Errorf(runner.EvidenceKeyInvalid, "NOVA_COMMIT_PUBLIC_KEY: %w", err)
		}
		commits = kr
	}
	return events, commits, nil
}

func evidenceVerify(ctx context.Context, cfg Config, env Env) error {
	s := cfg.Evidence
	opts, err := verifyOptions(ctx, cfg)
	if err != nil {
		return failed(env, cfg, err)
	}
	repo, err := chain.OpenRepo(ctx, s.Repo, s.Branch, s.Creds)
	if err != nil {
		return failed(env, cfg, err)
	}
	defer repo.Close()
	report, err := chain.Verify(ctx, repo, opts)
	if err != nil {
		return failed(env, cfg, err)
	}
	if cfg.Output == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return failed(env, cfg, err)
		}
	} else if err := writeVerifyReport(env.Stdout, report, s.Repo); err != nil {
		return failed(env, cfg, err)
	}
	if !report.OK() {
		return verdict(runner.Fail, report.Findings[0].Reason)
	}
	return nil
}

// verifyOptions reads what a verification trusts from the verify flags:
// the keys, and the witness (--witness, else the local store's when there
// is one).
func verifyOptions(ctx context.Context, cfg Config) (chain.VerifyOptions, error) {
	s := cfg.Evidence
	opts := chain.VerifyOptions{Contract: cfg.Verify.Contract, Since: cfg.Verify.Since}
	var err error
	signers, err := s.Keyless.policy(ctx)
	if err != nil {
		return opts, err
	}
	if opts.EventKeys, err = loadEventKeys(cfg.Verify.KeyFiles, s, keylessVerifier(signers)); err != nil {
		return opts, err
	}
	if opts.CommitKeys, err = loadCommitKeys(cfg.Verify.CommitKeyFiles, s); err != nil {
		return opts, err
	}
	witnessPath := cfg.Verify.Witness
	if witnessPath == "" {
		candidate := evidence.WitnessFile(evidence.StateDirFor(s.Paths.StateBase, s.Repo))
		if _, err := os.Stat(candidate); err == nil {
			witnessPath = candidate
		}
	}
	if witnessPath != "" {
		if opts.Witness, err = evidence.ReadWitness(witnessPath); err != nil {
			return opts, runner.Errorf(runner.ConfigInvalid, "--witness: %w", err)
		}
	}
	return opts, nil
}

// loadEventKeys reads --key files, else $NOVA_EVIDENCE_PUBLIC_KEY (PEM), else
// in local mode the generated key's public half.
func loadEventKeys(files []string, s EvidenceConfig, signers signing.KeylessVerifier) (*signing.KeySet, error) {
	var pems [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceKeyInvalid, "--key: %w", err)
		}
		pems = append(pems, b)
	}
	if len(pems) == 0 {
		if v := s.TrustedEventKeys; v != "" {
			pems = append(pems, []byte(v))
		} else if b, err := os.ReadFile(s.Paths.SigningPublicKeyFile()); err == nil {
			pems = append(pems, b)
		}
	}
	if len(pems) == 0 && signers == nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "no event public key: pass --key cosign.pub or set NOVA_EVIDENCE_PUBLIC_KEY (or, for keyless evidence, --signers and --fulcio-root)")
	}
	var keys []crypto.PublicKey
	for _, p := range pems {
		ks, err := signing.LoadPublicKeys(p)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
		}
		keys = append(keys, ks...)
	}
	ks, err := signing.NewKeylessKeySet(signers, keys...)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
	}
	return ks, nil
}

// loadCommitKeys reads --commit-key files, else $NOVA_COMMIT_PUBLIC_KEY, else
// in local mode the generated commit key's public half.
func loadCommitKeys(files []string, s EvidenceConfig) (*signing.CommitKeyRing, error) {
	var armored [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceKeyInvalid, "--commit-key: %w", err)
		}
		armored = append(armored, b)
	}
	if len(armored) == 0 {
		if v := s.TrustedCommitKeys; v != "" {
			armored = append(armored, []byte(v))
		} else if b, err := os.ReadFile(s.Paths.CommitPublicKeyFile()); err == nil {
			armored = append(armored, b)
		}
	}
	if len(armored) == 0 {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "no allowed commit key: pass --commit-key key.asc or set NOVA_COMMIT_PUBLIC_KEY")
	}
	kr, err := signing.LoadCommitKeyRing(armored...)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
	}
	return kr, nil
}

// openCurrentEvidence opens the store for a command that decides on the
// evidence repo as it is now: it delivers what an earlier run left in the
// outbox first, then syncs, never deciding on a stale copy. The caller
// closes the store.
func openCurrentEvidence(ctx context.Context, cfg Config, env Env) (*evidence.Store, error) {
	store, _, err := openEvidenceStore(ctx, cfg.Evidence, env)
	if err != nil {
		return nil, err
	}
	if err := store.Drain(ctx); err != nil {
		_ = store.Close()
		return nil, err
	}
	if err := store.Sync(ctx); err != nil {
		_ = store.Close()
		return nil, err
	}
	return store, nil
}

func evidenceResolve(ctx context.Context, cfg Config, env Env) error {
	r := cfg.Resolve
	if err := guardEvidence(ctx, cfg, env.Stderr); err != nil {
		return failed(env, cfg, err)
	}
	// The indeterminate event itself may still be in the outbox.
	store, done, err := openEvidenceToDecide(ctx, cfg, env)
	if err != nil {
		return failed(env, cfg, err)
	}
	defer done()
	events, err := store.Chain(ctx, r.Contract)
	if err != nil {
		return failed(env, cfg, err)
	}
	open := runner.UnresolvedApply(events, r.Env)
	if open == nil {
		return failed(env, cfg, runner.Errorf(runner.ConfigInvalid, "contract %s has no unresolved indeterminate apply", r.Contract))
	}
	rec := recordInto(cfg, store)
	em := runner.NewEmitter(rec, cfg.Source, local.NewRunID(time.Now()), nil)
	e, err := em.Emit(ctx, runner.EventApplyResolved, r.Contract, r.Env, runner.Resolution{
		Outcome: r.Outcome, Note: r.Note, Resolves: open.ID, ResolvedBy: cfg.Actor,
	})
	if err != nil {
		return failed(env, cfg, err)
	}
	backfillOutcomes(ctx, rec, em, r.Contract, env)
	if cfg.Check {
		fmt.Fprintf(env.Stdout, "would record %s for contract %s (%s): %s resolves %s\n  %s\n", runner.EventApplyResolved, r.Contract, r.Env, r.Outcome, open.ID, checkNote(cfg, wouldRecord(rec, r.Contract)))
		return nil
	}
	// Record keeps ordinary events in the outbox on a failed push; a
	// resolution unblocks applies, so it must be in the repo before we
	// say it is done.
	if err := store.Drain(ctx); err != nil {
		return failed(env, cfg, err)
	}
	fmt.Fprintf(env.Stdout, "recorded %s %s for contract %s (%s): %s resolves %s\n", runner.EventApplyResolved, e.ID, r.Contract, r.Env, r.Outcome, open.ID)
	return nil
}
