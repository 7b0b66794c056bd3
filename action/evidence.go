package main

import (
	"context"
	"crypto"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence"
	"github.com/nova-platform/nova/runner/evidence/signing"
	"github.com/nova-platform/nova/runner/local"
)

const evidenceUsage = `Usage:
  nova evidence verify [<path-or-url>] [flags]   check every signature, chain and commit
  nova evidence resolve --contract ID --env E --outcome applied|not-applied --note TEXT

The evidence repo is <path-or-url>, --evidence-repo, $NOVA_EVIDENCE_REPO, or in
local mode $XDG_DATA_HOME/nova/evidence.git. Exit codes: 0 verified, 1 findings,
2 could not verify.
`

// evidenceCommand runs `nova evidence <verify|resolve>`; args excludes
// "evidence" itself.
func evidenceCommand(ctx context.Context, args []string, env Env) int {
	if len(args) == 0 {
		fmt.Fprint(env.Stderr, evidenceUsage)
		return ExitError
	}
	switch args[0] {
	case "verify":
		return evidenceVerify(ctx, args[1:], env)
	case "resolve":
		return evidenceResolve(ctx, args[1:], env)
	case "help", "-h", "--help":
		fmt.Fprint(env.Stdout, evidenceUsage)
		return ExitPass
	}
	fmt.Fprintf(env.Stderr, "nova evidence: unknown command %q\n\n%s", args[0], evidenceUsage)
	return ExitError
}

// evidenceSettings are the evidence inputs every command shares, read once
// from flags and the environment.
type evidenceSettings struct {
	Repo   string
	Branch string
	// Local is true when no evidence repo was configured: the default repo
	// is created on first use and missing keys are generated.
	Local bool
	Paths evidence.LocalPaths
	Creds evidence.Credentials
}

// readEvidenceSettings resolves the repo: the flag, then NOVA_EVIDENCE_REPO,
// then local mode's default. A token (NOVA_EVIDENCE_TOKEN) is used as http
// basic auth and never appears in a URL or message.
func readEvidenceSettings(repoFlag, branch string, getenv func(string) string) (evidenceSettings, error) {
	paths, err := evidence.DefaultLocalPaths(getenv)
	if err != nil {
		return evidenceSettings{}, runner.Errorf(runner.ConfigInvalid, "locating local evidence paths: %w", err)
	}
	s := evidenceSettings{Repo: firstNonEmpty(repoFlag, getenv("NOVA_EVIDENCE_REPO")), Branch: branch, Paths: paths}
	if s.Repo == "" {
		s.Repo, s.Local = paths.Repo, true
	}
	if s.Branch == "" {
		s.Branch = firstNonEmpty(getenv("NOVA_EVIDENCE_BRANCH"), evidence.DefaultBranch)
	}
	if token := getenv("NOVA_EVIDENCE_TOKEN"); token != "" {
		s.Creds = evidence.Credentials{Username: firstNonEmpty(getenv("NOVA_EVIDENCE_USERNAME"), "x-access-token"), Password: token}
	}
	return s, nil
}

// evidenceKeyConfig reads the signing keys' sources from the environment.
// In local mode keys missing there are generated under the config dir.
func evidenceKeyConfig(s evidenceSettings, getenv func(string) string) signing.KeyConfig {
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
	return kc
}

// openEvidenceStore opens the Store for s with keys from the environment:
// what `nova run` wires as its Recorder, and what resolve writes through.
func openEvidenceStore(ctx context.Context, s evidenceSettings, env Env) (*evidence.Store, error) {
	keys, err := signing.LoadKeys(evidenceKeyConfig(s, env.Getenv))
	if err != nil {
		return nil, err
	}
	trustedEvents, allowedCommits, err := trustedEvidenceKeys(env.Getenv)
	if err != nil {
		return nil, err
	}
	opts := []evidence.Option{
		evidence.WithBranch(s.Branch),
		evidence.WithBasicAuth(s.Creds.Username, s.Creds.Password),
		evidence.WithLogf(func(format string, a ...any) { fmt.Fprintf(env.Stderr, format+"\n", a...) }),
	}
	if s.Local {
		opts = append(opts, evidence.WithCreate())
	}
	return evidence.Open(ctx, evidence.Config{
		Repo:              s.Repo,
		StateDir:          evidence.StateDirFor(s.Paths.StateBase, s.Repo),
		Keys:              keys,
		TrustedEventKeys:  trustedEvents,
		AllowedCommitKeys: allowedCommits,
	}, opts...)
}

// trustedEvidenceKeys reads the public keys a store trusts besides its own
// signing keys: $NOVA_EVIDENCE_PUBLIC_KEY (PEM) for events and
// $NOVA_COMMIT_PUBLIC_KEY (armored OpenPGP) for commits, each possibly
// several keys concatenated — the keys verify trusts too. After a rotation
// they carry the old keys, without which the store rejects a contract's
// earlier events and commits and can never authorize it again.
func trustedEvidenceKeys(getenv func(string) string) ([]crypto.PublicKey, *signing.CommitKeyRing, error) {
	var events []crypto.PublicKey
	if v := getenv("NOVA_EVIDENCE_PUBLIC_KEY"); v != "" {
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
	if v := getenv("NOVA_COMMIT_PUBLIC_KEY"); v != "" {
		kr, err := signing.LoadCommitKeyRing([]byte(v))
		if err != nil {
			return nil, nil, runner.Errorf(runner.EvidenceKeyInvalid, "NOVA_COMMIT_PUBLIC_KEY: %w", err)
		}
		commits = kr
	}
	return events, commits, nil
}

func evidenceVerify(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("nova evidence verify", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	var keyFiles, commitKeyFiles listFlag
	repoFlag := fs.String("evidence-repo", "", "evidence repo path or URL (default: $NOVA_EVIDENCE_REPO, else the local repo)")
	branch := fs.String("branch", "", "evidence branch (default: $NOVA_EVIDENCE_BRANCH or main)")
	contract := fs.String("contract", "", "check only this contract's events (commits are always all checked)")
	fs.Var(&keyFiles, "key", "event public key, cosign.pub format (repeatable; default: $NOVA_EVIDENCE_PUBLIC_KEY, else the local key)")
	fs.Var(&commitKeyFiles, "commit-key", "allowed OpenPGP public key for commits, armored (repeatable; default: $NOVA_COMMIT_PUBLIC_KEY, else the local key)")
	witness := fs.String("witness", "", "file of heads this machine pushed, to detect force-pushes (default: the local store's witness, when present)")
	output := fs.String("output", "text", "text or json")
	if err := fs.Parse(reorderArgs(fs, args)); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitPass
		}
		return ExitError
	}
	if fs.NArg() > 1 {
		fmt.Fprintf(env.Stderr, "nova evidence verify: unexpected argument %q\n", fs.Arg(1))
		return ExitError
	}
	if *output != "text" && *output != "json" {
		fmt.Fprintf(env.Stderr, "nova evidence verify: %s: --output %q: want text or json\n", runner.ConfigInvalid, *output)
		return ExitError
	}
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "nova evidence verify: %s: %v\n", runner.ReasonOf(err), err)
		return ExitError
	}
	s, err := readEvidenceSettings(firstNonEmpty(fs.Arg(0), *repoFlag), *branch, env.Getenv)
	if err != nil {
		return fail(err)
	}
	opts := evidence.VerifyOptions{Contract: *contract}
	if opts.EventKeys, err = loadEventKeys(keyFiles, s, env.Getenv); err != nil {
		return fail(err)
	}
	if opts.CommitKeys, err = loadCommitKeys(commitKeyFiles, s, env.Getenv); err != nil {
		return fail(err)
	}
	witnessPath := *witness
	if witnessPath == "" {
		candidate := evidence.WitnessFile(evidence.StateDirFor(s.Paths.StateBase, s.Repo))
		if _, err := os.Stat(candidate); err == nil {
			witnessPath = candidate
		}
	}
	if witnessPath != "" {
		if opts.Witness, err = evidence.ReadWitness(witnessPath); err != nil {
			return fail(runner.Errorf(runner.ConfigInvalid, "--witness: %w", err))
		}
	}
	repo, err := evidence.OpenRepo(ctx, s.Repo, s.Branch, s.Creds)
	if err != nil {
		return fail(err)
	}
	defer repo.Close()
	report, err := evidence.Verify(ctx, repo, opts)
	if err != nil {
		return fail(err)
	}
	if *output == "json" {
		enc := json.NewEncoder(env.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return fail(err)
		}
	} else if err := writeVerifyReport(env.Stdout, report, s.Repo); err != nil {
		return fail(err)
	}
	if !report.OK() {
		return ExitFail
	}
	return ExitPass
}

// loadEventKeys reads --key files, else $NOVA_EVIDENCE_PUBLIC_KEY (PEM), else
// in local mode the generated key's public half.
func loadEventKeys(files []string, s evidenceSettings, getenv func(string) string) (*signing.KeySet, error) {
	var pems [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceKeyInvalid, "--key: %w", err)
		}
		pems = append(pems, b)
	}
	if len(pems) == 0 {
		if v := getenv("NOVA_EVIDENCE_PUBLIC_KEY"); v != "" {
			pems = append(pems, []byte(v))
		} else if b, err := os.ReadFile(s.Paths.SigningPublicKeyFile()); err == nil {
			pems = append(pems, b)
		}
	}
	if len(pems) == 0 {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "no event public key: pass --key cosign.pub or set NOVA_EVIDENCE_PUBLIC_KEY")
	}
	var keys []crypto.PublicKey
	for _, p := range pems {
		ks, err := signing.LoadPublicKeys(p)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
		}
		keys = append(keys, ks...)
	}
	ks, err := signing.NewKeySet(keys...)
	if err != nil {
		return nil, runner.Errorf(runner.EvidenceKeyInvalid, "%w", err)
	}
	return ks, nil
}

// loadCommitKeys reads --commit-key files, else $NOVA_COMMIT_PUBLIC_KEY, else
// in local mode the generated commit key's public half.
func loadCommitKeys(files []string, s evidenceSettings, getenv func(string) string) (*signing.CommitKeyRing, error) {
	var armored [][]byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, runner.Errorf(runner.EvidenceKeyInvalid, "--commit-key: %w", err)
		}
		armored = append(armored, b)
	}
	if len(armored) == 0 {
		if v := getenv("NOVA_COMMIT_PUBLIC_KEY"); v != "" {
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

func evidenceResolve(ctx context.Context, args []string, env Env) int {
	fs := flag.NewFlagSet("nova evidence resolve", flag.ContinueOnError)
	fs.SetOutput(env.Stderr)
	repoFlag := fs.String("evidence-repo", "", "evidence repo path or URL (default: $NOVA_EVIDENCE_REPO, else the local repo)")
	branch := fs.String("branch", "", "evidence branch (default: $NOVA_EVIDENCE_BRANCH or main)")
	contract := fs.String("contract", "", "contract id (required)")
	envName := fs.String("env", "", "environment of the indeterminate apply (required)")
	outcome := fs.String("outcome", "", "what the operator found: applied or not-applied (required)")
	note := fs.String("note", "", "how it was established (required)")
	as := fs.String("as", "", "who resolves (default: $GITHUB_ACTOR or $USER)")
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return ExitPass
		}
		return ExitError
	}
	fail := func(err error) int {
		fmt.Fprintf(env.Stderr, "nova evidence resolve: %s: %v\n", runner.ReasonOf(err), err)
		return ExitError
	}
	environment := runner.Environment(*envName)
	switch {
	case fs.NArg() > 0:
		return fail(runner.Errorf(runner.ConfigInvalid, "unexpected argument %q", fs.Arg(0)))
	case *contract == "":
		return fail(runner.Errorf(runner.ConfigInvalid, "--contract is required"))
	case !environment.Valid():
		return fail(runner.Errorf(runner.ConfigInvalid, "--env %q: want dev, qa, prod or dr", *envName))
	case *outcome != runner.ResolvedApplied && *outcome != runner.ResolvedNotApplied:
		return fail(runner.Errorf(runner.ConfigInvalid, "--outcome %q: want applied or not-applied", *outcome))
	case *note == "":
		return fail(runner.Errorf(runner.ConfigInvalid, "--note is required: say how the outcome was established"))
	}
	s, err := readEvidenceSettings(*repoFlag, *branch, env.Getenv)
	if err != nil {
		return fail(err)
	}
	store, err := openEvidenceStore(ctx, s, env)
	if err != nil {
		return fail(err)
	}
	// Deliver anything an earlier run left behind first: the indeterminate
	// event itself may still be in the outbox. Then decide on the repo as
	// it is now, never on a stale copy.
	if err := store.Drain(ctx); err != nil {
		return fail(err)
	}
	if err := store.Sync(ctx); err != nil {
		return fail(err)
	}
	events, err := store.Chain(ctx, *contract)
	if err != nil {
		return fail(err)
	}
	open := runner.UnresolvedApply(events, environment)
	if open == nil {
		return fail(runner.Errorf(runner.ConfigInvalid, "contract %s has no unresolved indeterminate apply", *contract))
	}
	by := firstNonEmpty(*as, env.Getenv("GITHUB_ACTOR"), env.Getenv("USER"), "unknown")
	em := runner.NewEmitter(store, eventSource(env.Getenv), local.NewRunID(time.Now()), nil)
	e, err := em.Emit(ctx, runner.EventApplyResolved, *contract, environment, runner.Resolution{
		Outcome: *outcome, Note: *note, Resolves: open.ID, ResolvedBy: by,
	})
	if err != nil {
		return fail(err)
	}
	// Record keeps ordinary events in the outbox on a failed push; a
	// resolution unblocks applies, so it must be in the repo before we
	// say it is done.
	if err := store.Drain(ctx); err != nil {
		return fail(err)
	}
	fmt.Fprintf(env.Stdout, "recorded %s %s for contract %s (%s): %s resolves %s\n", runner.EventApplyResolved, e.ID, *contract, environment, *outcome, open.ID)
	return ExitPass
}

// eventSource is the CloudEvents source, as parseConfig derives it.
func eventSource(getenv func(string) string) string {
	if server, repo, runID := getenv("GITHUB_SERVER_URL"), getenv("GITHUB_REPOSITORY"), getenv("GITHUB_RUN_ID"); server != "" && repo != "" && runID != "" {
		return server + "/" + repo + "/actions/runs/" + runID
	}
	return "urn:nova:local"
}

// reorderArgs lets the positional repo come before flags
// (`nova evidence verify ./repo --contract X`), which flag stops at.
func reorderArgs(fs *flag.FlagSet, args []string) []string {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if len(a) > 1 && a[0] == '-' {
			flags = append(flags, a)
			name := a[1:]
			if len(name) > 0 && name[0] == '-' {
				name = name[1:]
			}
			if f := fs.Lookup(name); f != nil && !isBoolFlag(f) && i+1 < len(args) {
				i++
				flags = append(flags, args[i])
			}
			continue
		}
		positional = append(positional, a)
	}
	return append(flags, positional...)
}

func isBoolFlag(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}
