package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// trustedJob is the workflow the keyless tests' signers.yml names: the
// repository's nova.yml, run from main.
var trustedJob = keylesstest.Job{Repository: "acme/infra", Workflow: ".github/workflows/nova.yml", Ref: "refs/heads/main"}

// keylessConsumer is a consumer whose evidence goes to a shared bare repo,
// signed keylessly with certificates from a real Fulcio on loopback for
// tokens of a loopback issuer; its commit key stays a key.
type keylessConsumer struct {
	*consumer
	iss    *keylesstest.Issuer
	fulcio *keylesstest.Fulcio
	remote string
	keys   string // local mode's key dir: the commit key, and an event key for the mixed test
}

func newKeylessConsumer(t *testing.T) *keylessConsumer {
	t.Helper()
	iss := keylesstest.NewIssuer(t)
	k := &keylessConsumer{consumer: newConsumer(t, helloContract("world", "dev")), iss: iss, fulcio: keylesstest.StartFulcio(t, iss)}
	ctx := t.Context()
	// A first command in local mode makes the keys; the commit key is then
	// given explicitly, as a CI job would be given it.
	if code, _, stderr := k.nova(ctx, "validate"); code != ExitPass {
		t.Fatalf("validate: exit %d\n%s", code, stderr)
	}
	k.keys = filepath.Join(k.env["HOME"], ".config", "nova")
	k.env["NOVA_COMMIT_KEY_FILE"] = filepath.Join(k.keys, "commit-key.asc")
	k.remote = filepath.Join(t.TempDir(), "evidence.git")
	if _, err := git.PlainInit(k.remote, true); err != nil {
		t.Fatal(err)
	}
	k.extra = []string{"--evidence-repo", "file://" + k.remote, "--commit", "2222222222222222222222222222222222222222"}
	// The consumer's directory is not a git checkout, so its signers.yml
	// is the trusted one (local mode reads the file on disk).
	writeFile(t, filepath.Join(k.dir, keyless.SignersFile), "signers:\n  - issuer: "+iss.URL+"\n    repository: acme/infra\n    workflow: .github/workflows/nova.yml\n")
	k.env["NOVA_DEFAULT_BRANCH"] = "main"
	k.env["NOVA_KEYLESS"] = "true"
	k.env["NOVA_FULCIO_URL"] = k.fulcio.URL
	k.env["NOVA_FULCIO_ROOT_FILE"] = k.fulcio.RootFile
	k.useToken(trustedJob)
	return k
}

// useToken gives the next commands a token for job, through a file as a
// job that is not GitHub's would.
func (k *keylessConsumer) useToken(job keylesstest.Job) {
	k.t.Helper()
	path := filepath.Join(k.t.TempDir(), "token")
	if err := os.WriteFile(path, []byte(k.iss.Token(k.t, job)), 0o600); err != nil {
		k.t.Fatal(err)
	}
	k.env["NOVA_OIDC_TOKEN_FILE"] = path
}

// verify runs `nova evidence verify` as an auditor on another machine
// would: the default branch's signers.yml, the Fulcio root, the commit
// key, and extra flags.
func (k *keylessConsumer) verify(wantCode int, extra ...string) (verifyJSON, string) {
	k.t.Helper()
	args := append([]string{"verify", "file://" + k.remote, "--output", "json",
		"--signers", filepath.Join(k.dir, keyless.SignersFile), "--fulcio-root", k.fulcio.RootFile,
		"--commit-key", filepath.Join(k.keys, "commit-key.pub.asc")}, extra...)
	var out, errOut bytes.Buffer
	home := k.t.TempDir()
	getenv := func(name string) string {
		switch name {
		case "HOME":
			return home
		case "NOVA_DEFAULT_BRANCH":
			return "main"
		}
		return ""
	}
	code := evidenceCommand(k.t.Context(), args, Env{Getenv: getenv, Stdout: &out, Stderr: &errOut})
	if code != wantCode {
		k.t.Fatalf("evidence verify: exit %d, want %d\n%s\n%s", code, wantCode, out.String(), errOut.String())
	}
	var r verifyJSON
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		k.t.Fatalf("verify output: %v\n%s", err, out.String())
	}
	return r, errOut.String()
}

type verifyJSON struct {
	Events     int `json:"events"`
	Findings   []struct{ Reason, Path, Message string }
	Signatures []struct {
		Path     string `json:"path"`
		Kind     string `json:"kind"`
		Identity string `json:"identity"`
	} `json:"signatures"`
}

// clone checks the evidence repo out, as an auditor exporting events would.
func (k *keylessConsumer) clone() string {
	k.t.Helper()
	dir := filepath.Join(k.t.TempDir(), "evidence")
	if out, err := exec.Command("git", "clone", "-q", "-b", chain.DefaultBranch, k.remote, dir).CombinedOutput(); err != nil {
		k.t.Fatalf("git clone: %v\n%s", err, out)
	}
	return dir
}

// TestKeylessRunEndToEnd: a dev run applies with real Terraform, every
// event signed with a certificate Fulcio issued for the trusted workflow's
// token and no event key; `nova evidence verify` accepts it with the
// signers policy alone and names the workflow per event; stock cosign
// verifies an exported event and the attestation. A later key-signed run
// into the same repo leaves both kinds, each reported as such.
func TestKeylessRunEndToEnd(t *testing.T) {
	cosign := mustTool(t, "cosign")
	k := newKeylessConsumer(t)
	ctx := t.Context()
	code, v, stderr := k.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("keyless run: exit %d (%s)\n%v\n%s", code, v.Reason, verdicts(v), stderr)
	}
	if got := outputValue(t, k.state(ctx, "dev"), "message__text"); got != "Hello, world!" {
		t.Fatalf("message__text = %q after the keyless run", got)
	}
	identity := keylesstest.WorkflowIdentity(trustedJob)
	r, _ := k.verify(ExitPass)
	if r.Events == 0 || len(r.Signatures) != r.Events {
		t.Fatalf("verify checked %d events and reports %d signatures", r.Events, len(r.Signatures))
	}
	for _, s := range r.Signatures {
		if s.Kind != signing.KindKeyless || !strings.Contains(s.Identity, identity) {
			t.Errorf("%s: signed %s by %q, want keyless by %s", s.Path, s.Kind, s.Identity, identity)
		}
	}

	// Stock cosign, with the local Fulcio's root and no Rekor or CT log.
	dir := k.clone()
	var attestation string
	err := filepath.WalkDir(filepath.Join(dir, "contracts"), func(p string, d os.DirEntry, err error) error {
		if err != nil || !strings.HasSuffix(p, ".json") {
			return err
		}
		if strings.HasSuffix(p, "-"+runner.EventAttestation+".json") {
			attestation = p
		}
		return nil
	})
	if err != nil || attestation == "" {
		t.Fatalf("no attestation event in the evidence repo (%v)", err)
	}
	cosignEnv := append(os.Environ(), "TUF_ROOT="+filepath.Join(t.TempDir(), "tuf"), "TUF_MIRROR=http://127.0.0.1:1")
	runCosign := func(want bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(cosign, args...)
		cmd.Env = cosignEnv
		out, err := cmd.CombinedOutput()
		if (err == nil) != want {
			t.Errorf("cosign %s: %v (want success %t)\n%s", strings.Join(args, " "), err, want, out)
		}
		return string(out)
	}
	keylessFlags := []string{"--certificate-identity", identity, "--certificate-oidc-issuer", k.iss.URL,
		"--certificate-chain", k.fulcio.RootFile, "--insecure-ignore-tlog", "--insecure-ignore-sct"}
	sig := strings.TrimSuffix(attestation, ".json") + ".sig"
	runCosign(true, append(append([]string{"verify-blob", "--bundle", sig}, keylessFlags...), attestation)...)
	// Another workflow's identity, or other bytes, are refused.
	other := keylesstest.WorkflowIdentity(keylesstest.Job{Repository: "acme/infra", Workflow: ".github/workflows/nova.yml", Ref: "refs/pull/7/merge"})
	runCosign(false, "verify-blob", "--bundle", sig, "--certificate-identity", other, "--certificate-oidc-issuer", k.iss.URL,
		"--certificate-chain", k.fulcio.RootFile, "--insecure-ignore-tlog", "--insecure-ignore-sct", attestation)
	runCosign(false, append(append([]string{"verify-blob", "--bundle", sig}, keylessFlags...), filepath.Join(k.dir, keyless.SignersFile))...)

	// The attestation: its envelope, certificate and the saved plan it
	// names, checked by verify-blob-attestation.
	var ev runner.Event
	b, err := os.ReadFile(attestation)
	if err == nil {
		err = json.Unmarshal(b, &ev)
	}
	var rec runner.AttestationRecord
	if err == nil {
		err = json.Unmarshal(ev.Data, &rec)
	}
	if err != nil {
		t.Fatal(err)
	}
	if rec.Certificate == "" {
		t.Fatal("the keyless attestation carries no certificate")
	}
	work := t.TempDir()
	env, _ := json.Marshal(rec.Envelope)
	envPath, certPath, planPath := filepath.Join(work, "envelope.json"), filepath.Join(work, "cert.pem"), filepath.Join(work, "tfplan")
	writeFile(t, envPath, string(env))
	leaf, _, _ := strings.Cut(rec.Certificate, "-----END CERTIFICATE-----")
	writeFile(t, certPath, leaf+"-----END CERTIFICATE-----\n")
	plan, err := os.ReadFile(rec.PlanFile)
	if err != nil {
		t.Fatalf("reading the attested plan: %v", err)
	}
	writeFile(t, planPath, string(plan))
	attFlags := append([]string{"verify-blob-attestation", "--signature", envPath, "--certificate", certPath, "--type", runner.AttestationPredicateType}, keylessFlags...)
	runCosign(true, append(attFlags, planPath)...)
	writeFile(t, planPath, string(plan)+"x")
	runCosign(false, append(attFlags, planPath)...)

	// The same repo, then written with the event key: both kinds verify,
	// each reported as what it is.
	delete(k.env, "NOVA_KEYLESS")
	k.env["NOVA_SIGNING_KEY_FILE"] = filepath.Join(k.keys, "signing.key")
	k.writeContract(helloContract("keys", "dev"))
	if code, v, stderr := k.nova(ctx, "run"); code != ExitPass {
		t.Fatalf("key-signed run: exit %d (%s)\n%s", code, v.Reason, stderr)
	}
	r, _ = k.verify(ExitPass, "--key", filepath.Join(k.keys, "signing.pub"))
	kinds := map[string]int{}
	for _, s := range r.Signatures {
		kinds[s.Kind]++
	}
	if kinds[signing.KindKey] == 0 || kinds[signing.KindKeyless] == 0 || kinds[signing.KindKey]+kinds[signing.KindKeyless] != r.Events {
		t.Errorf("signatures by kind %v over %d events, want both kinds covering all", kinds, r.Events)
	}
	// Without the event key the key-signed events are refused, the
	// keyless ones still verify.
	r, _ = k.verify(ExitFail)
	for _, f := range r.Findings {
		if f.Reason != string(runner.EvidenceSignatureInvalid) {
			t.Errorf("finding %s %s: %s", f.Reason, f.Path, f.Message)
		}
	}
}

// TestKeylessTokenFromAnotherWorkflowRefRefused: a pull request's run gets
// a certificate from Fulcio all the same, for its own job_workflow_ref;
// Nova refuses to sign evidence with it, and evidence it (or a tampered
// Nova) wrote anyway fails `nova evidence verify` and the next trusted run.
func TestKeylessTokenFromAnotherWorkflowRefRefused(t *testing.T) {
	k := newKeylessConsumer(t)
	ctx := t.Context()
	pr := trustedJob
	pr.Ref, pr.EventName = "refs/pull/7/merge", "pull_request"
	k.useToken(pr)
	code, v, stderr := k.nova(ctx, "run")
	if code != ExitError || v.Reason != string(runner.SignerIdentityUntrusted) {
		t.Fatalf("run with a pull request's token: exit %d reason %s, want %d %s\n%s", code, v.Reason, ExitError, runner.SignerIdentityUntrusted, stderr)
	}

	// Evidence written under the pull request's identity by a store that
	// did not check (its signers.yml names the pull request's ref).
	k.useToken(trustedJob)
	if code, v, stderr := k.nova(ctx, "run"); code != ExitPass {
		t.Fatalf("trusted run: exit %d (%s)\n%s", code, v.Reason, stderr)
	}
	lax := filepath.Join(t.TempDir(), "signers.yml")
	writeFile(t, lax, "signers:\n  - issuer: "+k.iss.URL+"\n    repository: acme/infra\n    workflow: .github/workflows/nova.yml\n    ref: refs/heads/main\n  - issuer: "+k.iss.URL+"\n    repository: acme/infra\n    workflow: .github/workflows/nova.yml\n    ref: refs/heads/pr-7\n")
	k.env["NOVA_SIGNERS_FILE"] = lax
	prBranch := trustedJob
	prBranch.Ref = "refs/heads/pr-7"
	k.useToken(prBranch)
	k.writeContract(helloContract("from-a-branch", "dev"))
	if code, v, stderr := k.nova(ctx, "run"); code != ExitPass {
		t.Fatalf("run under the lax signers: exit %d (%s)\n%s", code, v.Reason, stderr)
	}
	r, _ := k.verify(ExitFail)
	untrusted := 0
	for _, f := range r.Findings {
		if f.Reason == string(runner.SignerIdentityUntrusted) {
			untrusted++
			if !strings.Contains(f.Message, "refs/heads/pr-7") {
				t.Errorf("finding does not name the signer: %s", f.Message)
			}
		}
	}
	if untrusted == 0 {
		t.Fatalf("verify found no %s among %+v", runner.SignerIdentityUntrusted, r.Findings)
	}
	// The trusted workflow's next run refuses the contract's chain.
	delete(k.env, "NOVA_SIGNERS_FILE")
	k.useToken(trustedJob)
	code, v, stderr = k.nova(ctx, "run")
	if code != ExitError || v.Reason != string(runner.SignerIdentityUntrusted) {
		t.Fatalf("the trusted run after evidence another identity signed: exit %d (%s), want %d %s\n%v\n%s", code, v.Reason, ExitError, runner.SignerIdentityUntrusted, verdicts(v), stderr)
	}
}

// mustTool finds name on PATH; a missing tool fails the test.
func mustTool(t *testing.T, name string) string {
	t.Helper()
	p, err := exec.LookPath(name)
	if err != nil {
		t.Fatalf("%s is not on PATH: run `make tools` and put its bin dir (~/.cache/nova-tools/bin) on PATH", name)
	}
	return p
}

// TestKeylessRunLoggedInRekor: with NOVA_REKOR_URL every event signature
// of a keyless run is uploaded to a real Rekor on loopback (Trillian over
// PostgreSQL) and its entry kept in the event's bundle: `nova evidence
// verify` checks each with the log's key (--require-tlog), and stock
// cosign verifies an exported event with the transparency log. A log that
// cannot be reached fails the run with REKOR_UPLOAD_FAILED and records
// nothing; events signed without the log are refused where an entry is
// required.
func TestKeylessRunLoggedInRekor(t *testing.T) {
	cosign := mustTool(t, "cosign")
	k := newKeylessConsumer(t)
	r := keylesstest.StartRekor(t)
	k.env["NOVA_REKOR_URL"] = r.URL
	k.env["NOVA_REKOR_PUBLIC_KEY_FILE"] = r.PublicKeyFile
	ctx := t.Context()
	code, v, stderr := k.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("keyless run with rekor: exit %d (%s)\n%v\n%s", code, v.Reason, verdicts(v), stderr)
	}
	logFlags := []string{"--rekor-public-key", r.PublicKeyFile, "--require-tlog"}
	rep, _ := k.verify(ExitPass, logFlags...)
	if rep.Events == 0 || len(rep.Signatures) != rep.Events {
		t.Fatalf("verify checked %d events and reports %d signatures", rep.Events, len(rep.Signatures))
	}
	for _, s := range rep.Signatures {
		if s.Kind != signing.KindKeyless || !strings.Contains(s.Identity, "logged in Rekor") {
			t.Errorf("%s: signed %s by %q, want keyless with a log entry", s.Path, s.Kind, s.Identity)
		}
	}
	logged := rep.Events

	// Stock cosign, checking the log (no --insecure-ignore-tlog).
	dir := k.clone()
	var event string
	err := filepath.WalkDir(filepath.Join(dir, "contracts"), func(p string, d os.DirEntry, err error) error {
		if err == nil && event == "" && strings.HasSuffix(p, ".json") {
			event = p
		}
		return err
	})
	if err != nil || event == "" {
		t.Fatalf("no event in the evidence repo (%v)", err)
	}
	cmd := exec.Command(cosign, "verify-blob", "--bundle", strings.TrimSuffix(event, ".json")+".sig",
		"--certificate-identity", keylesstest.WorkflowIdentity(trustedJob), "--certificate-oidc-issuer", k.iss.URL,
		"--certificate-chain", k.fulcio.RootFile, "--insecure-ignore-sct", "--rekor-url", r.URL, event)
	cmd.Env = append(os.Environ(), "SIGSTORE_REKOR_PUBLIC_KEY="+r.PublicKeyFile,
		"TUF_ROOT="+filepath.Join(t.TempDir(), "tuf"), "TUF_MIRROR=http://127.0.0.1:1")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("cosign verify-blob with the log: %v\n%s", err, out)
	}

	// A log that cannot be reached: the run fails with the reason and the
	// evidence repo holds what it held.
	k.env["NOVA_REKOR_URL"] = "http://127.0.0.1:1"
	k.writeContract(helloContract("unlogged", "dev"))
	code, v, stderr = k.nova(ctx, "run")
	if code != ExitError || v.Reason != string(runner.RekorUploadFailed) {
		t.Fatalf("run with an unreachable rekor: exit %d (%s), want %d %s\n%s", code, v.Reason, ExitError, runner.RekorUploadFailed, stderr)
	}
	if rep, _ = k.verify(ExitPass, logFlags...); rep.Events != logged {
		t.Fatalf("the evidence repo holds %d events after the failed upload, want the %d logged before", rep.Events, logged)
	}

	// Without the log, the run records events that have no entry: they
	// verify where none is required, and are refused where one is.
	delete(k.env, "NOVA_REKOR_URL")
	code, v, stderr = k.nova(ctx, "run")
	if code != ExitPass {
		t.Fatalf("keyless run without rekor: exit %d (%s)\n%s", code, v.Reason, stderr)
	}
	k.verify(ExitPass, "--rekor-public-key", r.PublicKeyFile)
	rep, _ = k.verify(ExitFail, logFlags...)
	if len(rep.Findings) != rep.Events-logged || len(rep.Findings) == 0 {
		t.Errorf("%d findings for %d unlogged events", len(rep.Findings), rep.Events-logged)
	}
	for _, f := range rep.Findings {
		if f.Reason != string(runner.RekorEntryInvalid) {
			t.Errorf("finding %s %s: %s", f.Reason, f.Path, f.Message)
		}
	}
}

// TestRekorURLWithoutKeylessRefused: only keyless signatures are uploaded,
// so a key-signed job given a log says so instead of logging nothing.
func TestRekorURLWithoutKeylessRefused(t *testing.T) {
	c := newConsumer(t, helloContract("world", "dev"))
	c.env["NOVA_REKOR_URL"] = "http://127.0.0.1:1"
	code, v, stderr := c.nova(t.Context(), "run")
	if code != ExitError || v.Reason != string(runner.ConfigInvalid) {
		t.Fatalf("a key-signed run with NOVA_REKOR_URL: exit %d (%s), want %d %s\n%s", code, v.Reason, ExitError, runner.ConfigInvalid, stderr)
	}
}

// trustedRepoAPI is GitHub's API for acme/infra as far as reading the
// default branch's files goes: main at mainSHA holding files.
func trustedRepoAPI(t *testing.T, files map[string]string) *httptest.Server {
	t.Helper()
	const mainSHA = "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc"
	mux := http.NewServeMux()
	mux.HandleFunc("GET /repos/acme/infra", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(mustJSON(map[string]any{"name": "infra", "full_name": "acme/infra", "default_branch": "main"}))
	})
	mux.HandleFunc("GET /repos/acme/infra/branches/main", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(mustJSON(map[string]any{"name": "main", "protected": true, "commit": map[string]any{"sha": mainSHA}}))
	})
	mux.HandleFunc("GET /repos/acme/infra/contents/{path...}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		text, ok := files[r.PathValue("path")]
		if !ok || r.URL.Query().Get("ref") != mainSHA {
			w.WriteHeader(http.StatusNotFound)
			w.Write([]byte(`{"message": "Not Found"}`))
			return
		}
		w.Write(mustJSON(map[string]any{"type": "file", "encoding": "base64", "name": path.Base(r.PathValue("path")), "path": r.PathValue("path"),
			"content": base64.StdEncoding.EncodeToString([]byte(text)), "size": len(text)}))
	})
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(http.StatusNotFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// TestKeylessSignersReadThroughTheForge: in a GitHub job Nova reads
// .nova/signers.yml from the default branch through the API, never the
// checkout. A pull request that adds its author's workflow to the
// checkout's copy does not make that workflow's certificate count: the
// job refuses to sign with it. Without signers.yml on the default branch
// the job fails with SIGNERS_CONFIG_INVALID, and a signers file or default
// branch the job names is refused rather than trusted.
func TestKeylessSignersReadThroughTheForge(t *testing.T) {
	k := newKeylessConsumer(t)
	mallory := keylesstest.Job{Repository: "acme/infra", Workflow: ".github/workflows/mallory.yml", Ref: "refs/heads/mallory"}
	trusted := "signers:\n  - issuer: " + k.iss.URL + "\n    repository: acme/infra\n    workflow: .github/workflows/nova.yml\n"
	// The change under review, checked out: its signers.yml names its
	// author's workflow too.
	writeFile(t, filepath.Join(k.dir, keyless.SignersFile), trusted+"  - issuer: "+k.iss.URL+"\n    repository: acme/infra\n    workflow: "+mallory.Workflow+"\n    ref: "+mallory.Ref+"\n")
	gitCommit(t, k.dir)
	k.useToken(mallory)
	// onForge runs `nova run` as the job would, with its text output,
	// which says why it stopped.
	onForge := func(api *httptest.Server) (string, error) {
		t.Helper()
		env := map[string]string{
			"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.URL, "GITHUB_SERVER_URL": "https://github.example.com",
			"GITHUB_REPOSITORY": "acme/infra", "GITHUB_EVENT_NAME": "push", "GITHUB_TOKEN": "ghs_faketoken", "GITHUB_RUN_ID": "7",
		}
		for name, v := range k.env {
			if name != "NOVA_DEFAULT_BRANCH" {
				env[name] = v
			}
		}
		var out bytes.Buffer
		err := run(t.Context(), Env{Args: []string{"run", "--dir", k.dir, "--state-dir", k.stateDir, "--evidence-repo", "file://" + k.remote},
			Getenv: func(n string) string { return env[n] }, Environ: os.Environ(), Stdout: &out, Stderr: &out})
		return out.String(), err
	}

	api := trustedRepoAPI(t, map[string]string{keyless.SignersFile: trusted})
	out, err := onForge(api)
	if runner.ReasonOf(err) != runner.SignerIdentityUntrusted || !strings.Contains(out, "mallory.yml") {
		t.Fatalf("a job of the workflow only the checkout's signers.yml names: %v, want %s naming it\n%s", err, runner.SignerIdentityUntrusted, out)
	}
	out, err = onForge(trustedRepoAPI(t, nil))
	if runner.ReasonOf(err) != runner.SignersConfigInvalid || !strings.Contains(out, "not in the trusted base main at c5b97d5ae6c1") {
		t.Fatalf("no signers.yml on the default branch: %v, want %s saying so\n%s", err, runner.SignersConfigInvalid, out)
	}

	// The log's settings hold for the signers read through the forge too:
	// a log required with no key to check it is refused, not dropped.
	k.env["NOVA_REKOR_REQUIRED"] = "true"
	out, err = onForge(api)
	delete(k.env, "NOVA_REKOR_REQUIRED")
	if runner.ReasonOf(err) != runner.ConfigInvalid || !strings.Contains(out, "no Rekor public key") {
		t.Fatalf("a GitHub job requiring a Rekor entry without the log's key: %v, want %s\n%s", err, runner.ConfigInvalid, out)
	}

	for name, v := range map[string]string{"NOVA_SIGNERS_FILE": filepath.Join(k.dir, keyless.SignersFile), "NOVA_DEFAULT_BRANCH": "mallory"} {
		var stderr bytes.Buffer
		env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_API_URL": api.URL, "GITHUB_REPOSITORY": "acme/infra", "GITHUB_TOKEN": "ghs_faketoken", "HOME": k.env["HOME"], name: v}
		err := run(t.Context(), Env{Args: []string{"run", "--dir", k.dir, "--state-dir", k.stateDir}, Getenv: func(n string) string { return env[n] }, Environ: os.Environ(), Stdout: io.Discard, Stderr: &stderr})
		if runner.ReasonOf(err) != runner.SignersConfigInvalid {
			t.Errorf("%s in a GitHub job: %v, want %s\n%s", name, err, runner.SignersConfigInvalid, stderr.String())
		}
	}
}
