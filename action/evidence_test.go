package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// evidenceEnv is a process environment for local mode under a fresh HOME.
func evidenceEnv(t *testing.T, vars map[string]string) (Env, *bytes.Buffer, *bytes.Buffer) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	return Env{Getenv: func(k string) string { return vars[k] }, Stdout: &stdout, Stderr: &stderr}, &stdout, &stderr
}

// TestEvidenceLocalMode walks local mode end to end: the first run creates
// the repo and keys, verify finds them with no flags, an indeterminate apply
// is resolved once, and a forged event fails verify with its reason code.
func TestEvidenceLocalMode(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	vars := map[string]string{"HOME": home, "USER": "operator"}
	env, stdout, stderr := evidenceEnv(t, vars)

	s, err := readEvidenceConfig("", "", env.Getenv)
	if err != nil || !s.Local || s.Repo != filepath.Join(home, ".local", "share", "nova", "evidence.git") {
		t.Fatalf("settings = %+v, %v", s, err)
	}
	store, _, err := openEvidenceStore(ctx, s, env)
	if err != nil {
		t.Fatal(err)
	}
	em := runner.NewEmitter(store, "urn:nova:test", "run-1", nil)
	if _, err := em.Emit(ctx, runner.EventPlanCreated, "c-1", "dev", map[string]string{"digest": "d"}); err != nil {
		t.Fatal(err)
	}
	if _, err := em.Emit(ctx, runner.EventApplyIndeterminate, "c-1", "dev", map[string]string{"reason": "interrupted"}); err != nil {
		t.Fatal(err)
	}
	if err := store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()

	if code := evidenceCommand(ctx, []string{"verify"}, env); code != ExitPass {
		t.Fatalf("verify: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"events           2", "witnessed heads  1", "result           OK"} {
		if !strings.Contains(stdout.String(), want) {
			t.Errorf("verify output lacks %q:\n%s", want, stdout)
		}
	}

	resolve := []string{"resolve", "--contract", "c-1", "--env", "dev", "--outcome", "not-applied", "--note", "state shows no change"}
	stdout.Reset()
	if code := evidenceCommand(ctx, resolve, env); code != ExitPass {
		t.Fatalf("resolve: exit %d\n%s%s", code, stdout, stderr)
	}
	stderr.Reset()
	if code := evidenceCommand(ctx, resolve, env); code != ExitError || !strings.Contains(stderr.String(), "no unresolved indeterminate apply") {
		t.Fatalf("second resolve: exit %d, stderr %s", code, stderr)
	}

	stdout.Reset()
	if code := evidenceCommand(ctx, []string{"verify", "--output", "json", "--contract", "c-1"}, env); code != ExitPass {
		t.Fatalf("verify json: exit %d\n%s%s", code, stdout, stderr)
	}
	var rep chain.Report
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Events != 3 || !rep.OK() {
		t.Fatalf("json report %+v, %v", rep, err)
	}

	// Someone with push access but another event key adds an approval (the
	// forger's store trusts the real key, so it extends the chain).
	forgedVars := map[string]string{"HOME": home, "NOVA_SIGNING_KEY": string(newPEMKey(t)), "NOVA_EVIDENCE_PUBLIC_KEY": readKeyFile(t, s.Paths.SigningPublicKeyFile())}
	forgedEnv, _, _ := evidenceEnv(t, forgedVars)
	forged, err := readEvidenceConfig("", "", forgedEnv.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	forger, _, err := openEvidenceStore(ctx, forged, forgedEnv)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.NewEmitter(forger, "urn:x", "r", nil).Emit(ctx, runner.EventApprovalRecorded, "c-1", "prod", runner.ApprovalRecord{Environment: "prod", Approver: "mallory", PlanDigest: "d"}); err != nil {
		t.Fatal(err)
	}
	if err := forger.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	forger.Close()
	stdout.Reset()
	if code := evidenceCommand(ctx, []string{"verify"}, env); code != ExitFail {
		t.Fatalf("verify of a forged event: exit %d, want %d\n%s", code, ExitFail, stdout)
	}
	if !strings.Contains(stdout.String(), string(runner.EvidenceSignatureInvalid)) || !strings.Contains(stdout.String(), "contracts/a6/c-1/0xx/4-nova.approval.recorded.json") {
		t.Errorf("verify output does not name the forged event:\n%s", stdout)
	}
}

func TestEvidenceVerifyExplicitRepoAndKeys(t *testing.T) {
	ctx := context.Background()
	home := t.TempDir()
	env, _, _ := evidenceEnv(t, map[string]string{"HOME": home})
	s, _ := readEvidenceConfig("", "", env.Getenv)
	store, _, err := openEvidenceStore(ctx, s, env)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := runner.NewEmitter(store, "urn:x", "r", nil).Emit(ctx, runner.EventPlanCreated, "c-9", "dev", nil); err != nil {
		t.Fatal(err)
	}
	if err := store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()

	// Another machine: nothing local, keys and repo given explicitly, the
	// repo before or after the flags.
	other, stdout2, stderr2 := evidenceEnv(t, map[string]string{"HOME": t.TempDir()})
	keys := []string{"--key", s.Paths.SigningPublicKeyFile(), "--commit-key", s.Paths.CommitPublicKeyFile()}
	for _, args := range [][]string{
		append(append([]string{"verify", s.Repo}, keys...), "--contract", "c-9"),
		append(append([]string{"verify"}, keys...), s.Repo),
	} {
		stdout2.Reset()
		if code := evidenceCommand(ctx, args, other); code != ExitPass {
			t.Errorf("%v: exit %d\n%s%s", args, code, stdout2, stderr2)
		}
	}

	tests := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"no keys on a new machine", []string{"verify", s.Repo}, ExitError, string(runner.EvidenceKeyInvalid)},
		{"missing repo", append([]string{"verify", filepath.Join(t.TempDir(), "nope.git")}, keys...), ExitError, string(runner.EvidenceRepoUnavailable)},
		{"missing branch", append([]string{"verify", "--branch", "nope", s.Repo}, keys...), ExitError, string(runner.EvidenceRepoUnavailable) + ": evidence repo " + s.Repo + `: no branch "nope"`},
		{"bad output", append([]string{"verify", "--output", "xml", s.Repo}, keys...), ExitError, string(runner.ConfigInvalid)},
		{"unknown subcommand", []string{"audit"}, ExitError, `unknown command "audit"`},
		{"resolve without contract", []string{"resolve", "--env", "dev", "--outcome", "applied", "--note", "x"}, ExitError, "--contract is required"},
		{"resolve bad outcome", []string{"resolve", "--contract", "c", "--env", "dev", "--outcome", "maybe", "--note", "x"}, ExitError, "want applied or not-applied"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stderr2.Reset()
			if code := evidenceCommand(ctx, tt.args, other); code != tt.code || !strings.Contains(stderr2.String(), tt.want) {
				t.Errorf("exit %d (want %d), stderr %q lacks %q", code, tt.code, stderr2, tt.want)
			}
		})
	}
}

func newPEMKey(t *testing.T) []byte {
	t.Helper()
	dir := t.TempDir()
	if _, err := signing.LocalSigner(dir); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, "signing.key"))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestEvidenceStoreTrustsRotatedKeysFromEnv: once the signing keys are
// rotated, the old public keys given in NOVA_EVIDENCE_PUBLIC_KEY and
// NOVA_COMMIT_PUBLIC_KEY (concatenated with the new ones, as an operator
// would paste them) let the store read the history the old keys signed:
// the open indeterminate apply is found and can be resolved. Without them
// the store refuses that history.
func TestEvidenceStoreTrustsRotatedKeysFromEnv(t *testing.T) {
	ctx := t.Context()
	oldEnv, _, _ := evidenceEnv(t, map[string]string{"HOME": t.TempDir()})
	s, err := readEvidenceConfig("", "", oldEnv.Getenv)
	if err != nil {
		t.Fatal(err)
	}
	store, _, err := openEvidenceStore(ctx, s, oldEnv)
	if err != nil {
		t.Fatal(err)
	}
	ind, err := runner.NewEmitter(store, "urn:nova:test", "run-1", nil).Emit(ctx, runner.EventApplyIndeterminate, "c-1", "dev", map[string]string{"reason": "interrupted"})
	if err != nil {
		t.Fatal(err)
	}
	if err := store.Drain(ctx); err != nil {
		t.Fatal(err)
	}
	store.Close()
	oldEventPub, oldCommitPub := readKeyFile(t, s.Paths.SigningPublicKeyFile()), readKeyFile(t, s.Paths.CommitPublicKeyFile())

	newKeys := t.TempDir()
	if _, err := signing.LocalSigner(newKeys); err != nil {
		t.Fatal(err)
	}
	if _, err := signing.LocalCommitSigner(newKeys, "", ""); err != nil {
		t.Fatal(err)
	}
	rotated := map[string]string{
		"HOME":               t.TempDir(),
		"USER":               "operator",
		"NOVA_EVIDENCE_REPO": s.Repo,
		"NOVA_SIGNING_KEY":   readKeyFile(t, filepath.Join(newKeys, "signing.key")),
		"NOVA_COMMIT_KEY":    readKeyFile(t, filepath.Join(newKeys, "commit-key.asc")),
	}
	unresolved := func(vars map[string]string) (string, error) {
		t.Helper()
		env, _, _ := evidenceEnv(t, vars)
		rs, err := readEvidenceConfig("", "", env.Getenv)
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := openEvidenceStore(ctx, rs, env)
		if err != nil {
			return "", err
		}
		defer st.Close()
		events, err := st.Chain(ctx, "c-1")
		if err != nil {
			return "", err
		}
		if open := runner.UnresolvedApply(events, "dev"); open != nil {
			return open.ID, nil
		}
		return "", nil
	}
	if id, err := unresolved(rotated); runner.ReasonOf(err) != runner.EvidenceCommitKeyUnknown {
		t.Fatalf("without the old keys: %q, %v; want %s", id, err, runner.EvidenceCommitKeyUnknown)
	}

	rotated["NOVA_EVIDENCE_PUBLIC_KEY"] = readKeyFile(t, filepath.Join(newKeys, "signing.pub")) + oldEventPub
	rotated["NOVA_COMMIT_PUBLIC_KEY"] = readKeyFile(t, filepath.Join(newKeys, "commit-key.pub.asc")) + oldCommitPub
	if id, err := unresolved(rotated); err != nil || id != ind.ID {
		t.Fatalf("with the old keys trusted: %q, %v; want %s", id, err, ind.ID)
	}
	env, stdout, stderr := evidenceEnv(t, rotated)
	resolve := []string{"resolve", "--contract", "c-1", "--env", "dev", "--outcome", "applied", "--note", "state matches the plan"}
	if code := evidenceCommand(ctx, resolve, env); code != ExitPass {
		t.Fatalf("resolve after the rotation: exit %d\n%s%s", code, stdout, stderr)
	}

	rotated["NOVA_COMMIT_PUBLIC_KEY"] = "not a key"
	if _, err := unresolved(rotated); runner.ReasonOf(err) != runner.EvidenceKeyInvalid || !strings.Contains(err.Error(), "NOVA_COMMIT_PUBLIC_KEY") {
		t.Errorf("a malformed NOVA_COMMIT_PUBLIC_KEY: %v; want %s naming it", err, runner.EvidenceKeyInvalid)
	}
}

func readKeyFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// evidenceCommand runs `nova evidence <args>` and returns its exit code.
func evidenceCommand(ctx context.Context, args []string, env Env) int {
	env.Args = append([]string{"evidence"}, args...)
	return exitCode(run(ctx, env))
}
