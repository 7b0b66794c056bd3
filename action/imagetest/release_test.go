package imagetest

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
)

// The release as GitHub runs it: the repository, the workflow file and a
// tag. The certificate identity users verify (docs/install.md) is
// https://github.com/<repository>/<workflow>@<tag ref>.
const (
	releaseRepository = "nova-platform/nova"
	releaseWorkflow   = ".github/workflows/release.yml"
	releaseVersion    = "v0.0.0-releasetest"
	releaseSHA        = "0123456789abcdef0123456789abcdef01234567"
)

// TestReleaseIsSignedKeylessAndVerifies runs the signing lines of
// workflows-src/release.yml as its job would, against a registry and a
// Fulcio on loopback and with the job's OIDC token served as GitHub's
// runtime serves it to cosign; then stock cosign verifies the image, its
// SLSA provenance and the binaries with the identity docs/install.md
// tells users to require, and refuses them under a pull request's
// identity and a pull request run's signatures under the release's.
func TestReleaseIsSignedKeylessAndVerifies(t *testing.T) {
	image := novaImage(t)
	cosign := cosignBin(t)
	if _, err := exec.LookPath("jq"); err != nil {
		t.Fatal("jq is not on PATH: .ci/release-sign.sh builds the provenance with it; run `make tools` (.ci/tools.sh jq)")
	}
	registry := startRegistry(t)
	iss := keylesstest.NewIssuer(t)
	fulcio := keylesstest.StartFulcio(t, iss)
	runtime := newTokenService(t)
	steps := releaseSigningSteps(t)
	identityShape, issuerInDocs := installDocIdentity(t)
	if issuerInDocs != "https://token.actions.githubusercontent.com" {
		t.Errorf("docs/install.md verifies against issuer %q, want GitHub Actions' https://token.actions.githubusercontent.com", issuerInDocs)
	}

	release := keylesstest.Job{Repository: releaseRepository, Workflow: releaseWorkflow, Ref: "refs/tags/" + releaseVersion, SHA: releaseSHA}
	identity := strings.ReplaceAll(identityShape, "$VERSION", releaseVersion)
	if want := keylesstest.WorkflowIdentity(release); identity != want {
		t.Fatalf("docs/install.md's identity for %s is %s; the release job's certificate names %s", releaseVersion, identity, want)
	}
	pull := keylesstest.Job{Repository: releaseRepository, Workflow: releaseWorkflow, Ref: "refs/pull/7/merge", SHA: releaseSHA, EventName: "pull_request"}

	cosignHome := t.TempDir()
	// What every cosign run shares: the loopback Fulcio's root instead of
	// Sigstore's TUF root, a TUF cache and docker config of the test's own
	// (no credential of this machine's is offered to the registry).
	sigstoreEnv := map[string]string{
		"SIGSTORE_ROOT_FILE": fulcio.RootFile,
		"TUF_ROOT":           filepath.Join(cosignHome, "tuf"),
		"DOCKER_CONFIG":      filepath.Join(cosignHome, "docker"),
	}
	// The job's environment: what GitHub sets, the workflow's env with the
	// loopback registry for ghcr.io, and the flags of a private Sigstore
	// deployment (no Rekor, no CT log).
	jobEnv := func(job keylesstest.Job, imageName, version string) map[string]string {
		env := map[string]string{
			"COSIGN":                         cosign,
			"SIGSTORE_FLAGS":                 "--fulcio-url=" + fulcio.URL + " --tlog-upload=false --insecure-skip-verify",
			"ACTIONS_ID_TOKEN_REQUEST_URL":   runtime.URL + "/_apis/token?api-version=2.0",
			"ACTIONS_ID_TOKEN_REQUEST_TOKEN": runtime.bearer,
			"GITHUB_SERVER_URL":              "https://github.com",
			"GITHUB_REPOSITORY":              job.Repository,
			"GITHUB_REPOSITORY_ID":           "4242",
			"GITHUB_REPOSITORY_OWNER_ID":     "42",
			"GITHUB_REF":                     job.Ref,
			"GITHUB_SHA":                     job.SHA,
			"GITHUB_WORKFLOW_REF":            job.Repository + "/" + job.Workflow + "@" + job.Ref,
			"GITHUB_EVENT_NAME":              job.EventName,
			"RUNNER_ENVIRONMENT":             "github-hosted",
			"GITHUB_RUN_ID":                  "9001",
			"GITHUB_RUN_ATTEMPT":             "1",
			"IMAGE":                          imageName,
			"VERSION":                        version,
		}
		if env["GITHUB_EVENT_NAME"] == "" {
			env["GITHUB_EVENT_NAME"] = "push"
		}
		for k, v := range sigstoreEnv {
			env[k] = v
		}
		runtime.serve(iss.Token(t, job))
		return env
	}

	// The release job: the binaries, then the image pushed to the
	// registry under the name the workflow gives it.
	work := releaseWorkdir(t)
	binaries := []string{"nova_" + releaseVersion + "_linux_amd64", "SHA256SUMS"}
	for _, name := range binaries {
		if err := os.WriteFile(filepath.Join(work, "dist", name), []byte("release "+name+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	imageName := registry + "/" + releaseRepository
	env := jobEnv(release, imageName, releaseVersion)
	runStep(t, work, env, steps.blobs)
	tagImage(t, image, imageName+":"+releaseVersion)
	out := runStep(t, work, env, steps.image)
	digestRef := lastLine(out)
	if !strings.HasPrefix(digestRef, imageName+"@sha256:") {
		t.Fatalf("the image step printed %q, want %s@sha256:…", out, imageName)
	}
	digest := strings.TrimPrefix(digestRef, imageName+"@")

	verifyFlags := func(identity string) []string {
		return []string{"--certificate-identity", identity, "--certificate-oidc-issuer", iss.URL,
			// No Rekor and no CT log in a private deployment.
			"--insecure-ignore-tlog", "--insecure-ignore-sct"}
	}
	cosignRun := func(args ...string) (string, string, error) {
		var stdout, stderr bytes.Buffer
		cmd := commandContext(t.Context(), sigstoreEnv, cosign, args...)
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	mustVerify := func(what string, args ...string) string {
		t.Helper()
		stdout, stderr, err := cosignRun(args...)
		if err != nil {
			t.Fatalf("%s: cosign %s: %v\n%s", what, strings.Join(args, " "), err, stderr)
		}
		return stdout
	}
	// A refusal must be for the identity, not for a reason that would
	// refuse anything (an unreachable registry, a bad flag).
	mustRefuse := func(what string, args ...string) {
		t.Helper()
		_, stderr, err := cosignRun(args...)
		if err == nil {
			t.Errorf("%s: cosign %s accepted it", what, strings.Join(args, " "))
			return
		}
		if !strings.Contains(stderr, "none of the expected identities matched") {
			t.Errorf("%s: cosign %s refused it for another reason than the identity:\n%s", what, strings.Join(args, " "), stderr)
		}
	}

	// As docs/install.md does: verify by tag and pin the digest that was
	// verified.
	out = mustVerify("the image by tag", append([]string{"verify"}, append(verifyFlags(identity), imageName+":"+releaseVersion)...)...)
	var verified []struct {
		Critical struct {
			Image struct {
				Digest string `json:"docker-manifest-digest"`
			} `json:"image"`
		} `json:"critical"`
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &verified); err != nil || len(verified) == 0 {
		t.Fatalf("cosign verify printed no signature payloads (%v):\n%s", err, out)
	}
	if verified[0].Critical.Image.Digest != digest {
		t.Errorf("cosign verified digest %s, the release pushed %s", verified[0].Critical.Image.Digest, digest)
	}

	out = mustVerify("the provenance", append([]string{"verify-attestation", "--type", "slsaprovenance1"}, append(verifyFlags(identity), digestRef)...)...)
	checkProvenance(t, out, digest, identity, release)

	for _, name := range binaries {
		f := filepath.Join(work, "dist", name)
		mustVerify("binary "+name, append([]string{"verify-blob", "--bundle", f + ".sigstore.json"}, append(verifyFlags(identity), f)...)...)
	}
	sums := filepath.Join(work, "dist", "SHA256SUMS")
	sumsProvenance := []string{"verify-blob-attestation", "--type", "slsaprovenance1", "--bundle", sums + ".intoto.sigstore.json"}
	mustVerify("the binaries' provenance", append(sumsProvenance, append(verifyFlags(identity), sums)...)...)

	// A pull request's run of the same workflow file has another
	// identity: whatever it signs does not pass as the release.
	pullIdentity := keylesstest.WorkflowIdentity(pull)
	mustRefuse("the release image under a pull request's identity", append([]string{"verify"}, append(verifyFlags(pullIdentity), digestRef)...)...)
	mustRefuse("the provenance under a pull request's identity", append([]string{"verify-attestation", "--type", "slsaprovenance1"}, append(verifyFlags(pullIdentity), digestRef)...)...)
	mustRefuse("the binaries' provenance under a pull request's identity", append(sumsProvenance, append(verifyFlags(pullIdentity), sums)...)...)
	mustRefuse("a binary under a pull request's identity", append([]string{"verify-blob", "--bundle", filepath.Join(work, "dist", binaries[0]) + ".sigstore.json"}, append(verifyFlags(pullIdentity), filepath.Join(work, "dist", binaries[0]))...)...)

	// The pull request's run signs the same image under a name of its own
	// (signatures live beside the image in its repository): the release's
	// identity refuses it, its own accepts it, so the refusal is the
	// identity's.
	pullName := registry + "/attacker/nova"
	pullEnv := jobEnv(pull, pullName, "pr-7")
	tagImage(t, image, pullName+":pr-7")
	pullRef := lastLine(runStep(t, work, pullEnv, steps.image))
	mustRefuse("a pull request run's image under the release's identity", append([]string{"verify"}, append(verifyFlags(identity), pullRef)...)...)
	mustRefuse("a pull request run's provenance under the release's identity", append([]string{"verify-attestation", "--type", "slsaprovenance1"}, append(verifyFlags(identity), pullRef)...)...)
	mustVerify("a pull request run's image under its own identity", append([]string{"verify"}, append(verifyFlags(pullIdentity), pullRef)...)...)
}

// checkProvenance reads what verify-attestation printed (DSSE envelopes,
// one a line) and checks the in-toto statement: SLSA v1, about the pushed
// digest, built by the release workflow from the tag's commit.
func checkProvenance(t *testing.T, out, digest, identity string, job keylesstest.Job) {
	t.Helper()
	var envelope struct {
		PayloadType string `json:"payloadType"`
		Payload     string `json:"payload"`
	}
	if err := json.Unmarshal([]byte(lastLine(out)), &envelope); err != nil {
		t.Fatalf("verify-attestation printed no envelope (%v):\n%s", err, out)
	}
	payload, err := base64.StdEncoding.DecodeString(envelope.Payload)
	if err != nil {
		t.Fatalf("envelope payload: %v", err)
	}
	var st struct {
		PredicateType string `json:"predicateType"`
		Subject       []struct {
			Digest map[string]string `json:"digest"`
		} `json:"subject"`
		Predicate struct {
			BuildDefinition struct {
				BuildType          string `json:"buildType"`
				ExternalParameters struct {
					Workflow struct {
						Ref, Repository, Path string
					} `json:"workflow"`
				} `json:"externalParameters"`
				ResolvedDependencies []struct {
					URI    string            `json:"uri"`
					Digest map[string]string `json:"digest"`
				} `json:"resolvedDependencies"`
			} `json:"buildDefinition"`
			RunDetails struct {
				Builder struct {
					ID string `json:"id"`
				} `json:"builder"`
			} `json:"runDetails"`
		} `json:"predicate"`
	}
	if err := json.Unmarshal(payload, &st); err != nil {
		t.Fatalf("in-toto statement: %v\n%s", err, payload)
	}
	if envelope.PayloadType != "application/vnd.in-toto+json" || st.PredicateType != "https://slsa.dev/provenance/v1" {
		t.Errorf("attestation is %s / %s, want an in-toto statement of SLSA provenance v1", envelope.PayloadType, st.PredicateType)
	}
	if len(st.Subject) != 1 || "sha256:"+st.Subject[0].Digest["sha256"] != digest {
		t.Errorf("provenance subject %+v, want the pushed image %s", st.Subject, digest)
	}
	def := st.Predicate.BuildDefinition
	if st.Predicate.RunDetails.Builder.ID != identity {
		t.Errorf("provenance builder %q, want the release workflow %q", st.Predicate.RunDetails.Builder.ID, identity)
	}
	if w := def.ExternalParameters.Workflow; w.Ref != job.Ref || w.Path != job.Workflow || w.Repository != "https://github.com/"+job.Repository {
		t.Errorf("provenance workflow %+v, want %s at %s in %s", w, job.Workflow, job.Ref, job.Repository)
	}
	if len(def.ResolvedDependencies) != 1 || def.ResolvedDependencies[0].Digest["gitCommit"] != job.SHA {
		t.Errorf("provenance sources %+v, want the tag's commit %s", def.ResolvedDependencies, job.SHA)
	}
}

// signingSteps are the run lines of the release job's steps that sign.
type signingSteps struct{ blobs, image string }

// releaseSigningSteps reads workflows-src/release.yml: the job that signs
// asks for id-token: write, and its steps call .ci/release-sign.sh once for
// the binaries and once for the image. The test runs those lines as they
// are, so a workflow that signs some other way fails here.
func releaseSigningSteps(t *testing.T) signingSteps {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mustRepoRoot(t), "workflows-src", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Permissions map[string]string `yaml:"permissions"`
			Steps       []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	var s signingSteps
	for name, job := range wf.Jobs {
		for _, step := range job.Steps {
			if !strings.Contains(step.Run, ".ci/release-sign.sh") {
				continue
			}
			if job.Permissions["id-token"] != "write" {
				t.Errorf("job %s signs without id-token: write", name)
			}
			switch {
			case strings.Contains(step.Run, "release-sign.sh blobs ") && s.blobs == "":
				s.blobs = step.Run
			case strings.Contains(step.Run, "release-sign.sh image ") && s.image == "":
				s.image = step.Run
			default:
				t.Errorf("job %s: unexpected signing step %q", name, step.Run)
			}
		}
	}
	if s.blobs == "" || s.image == "" {
		t.Fatalf("workflows-src/release.yml does not sign both the binaries and the image with .ci/release-sign.sh (blobs %q, image %q)", s.blobs, s.image)
	}
	return s
}

// installDocIdentity reads the identity and issuer docs/install.md tells
// users to require, as its shell lines set them.
func installDocIdentity(t *testing.T) (identity, issuer string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(mustRepoRoot(t), "docs", "install.md"))
	if err != nil {
		t.Fatal(err)
	}
	id := regexp.MustCompile(`(?m)^IDENTITY="?([^"\s]+)"?$`).FindSubmatch(data)
	is := regexp.MustCompile(`(?m)^ISSUER="?([^"\s]+)"?$`).FindSubmatch(data)
	if id == nil || is == nil {
		t.Fatal("docs/install.md sets no IDENTITY= or ISSUER= line for cosign verify")
	}
	return string(id[1]), string(is[1])
}

// releaseWorkdir is the job's checkout as the signing steps see it: .ci
// (the repository's own) and an empty dist.
func releaseWorkdir(t *testing.T) string {
	t.Helper()
	work := t.TempDir()
	if err := os.Symlink(filepath.Join(mustRepoRoot(t), ".ci"), filepath.Join(work, ".ci")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(work, "dist"), 0o755); err != nil {
		t.Fatal(err)
	}
	return work
}

// runStep runs one step's run lines as GitHub's runner does (bash -e)
// and returns its stdout.
func runStep(t *testing.T, dir string, env map[string]string, run string) string {
	t.Helper()
	var stdout, stderr bytes.Buffer
	cmd := commandContext(t.Context(), env, "bash", "--noprofile", "--norc", "-e", "-c", run)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("step %q: %v\n%s%s", run, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// tagImage names the test's image as the release's build step would, and
// removes the name when the test ends.
func tagImage(t *testing.T, image, name string) {
	t.Helper()
	docker(t, "tag", image, name)
	t.Cleanup(func() { _ = exec.Command("docker", "image", "rm", name).Run() })
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// cosignBin is the cosign v2 CLI of the tools cache (COSIGN_VERSION of
// .ci/tools.sh), else one on PATH of that version: the flags used here
// are v2's.
func cosignBin(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(toolsBin(t), "cosign")
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("cosign"); err != nil {
			t.Fatal("cosign is not in the tools cache nor on PATH: run `make tools` (.ci/tools.sh cosign)")
		}
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").CombinedOutput()
	if err != nil {
		t.Fatalf("%s version: %v\n%s", bin, err, out)
	}
	want := "v" + toolsPin(t, "COSIGN_VERSION")
	if !regexp.MustCompile(`(?m)^GitVersion:\s+` + regexp.QuoteMeta(want) + `$`).Match(out) {
		t.Fatalf("%s is not cosign %s:\n%s", bin, want, out)
	}
	return bin
}

// tokenService is GitHub's runtime token endpoint as a job with
// id-token: write sees it (ACTIONS_ID_TOKEN_REQUEST_URL and _TOKEN): cosign's
// GitHub provider asks it for a token with audience sigstore, exactly as
// in the release job. It hands out the token last given to serve.
type tokenService struct {
	URL    string
	bearer string
	token  atomic.Pointer[string]
}

func newTokenService(t *testing.T) *tokenService {
	t.Helper()
	s := &tokenService{bearer: randomHex(16)}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "bearer "+s.bearer {
			http.Error(w, "bad request token", http.StatusUnauthorized)
			return
		}
		if aud := r.URL.Query().Get("audience"); aud != "sigstore" {
			http.Error(w, "audience "+aud+", want sigstore", http.StatusBadRequest)
			return
		}
		tok := s.token.Load()
		if tok == nil {
			http.Error(w, "no job", http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"value": *tok})
	}))
	t.Cleanup(srv.Close)
	s.URL = srv.URL
	return s
}

func (s *tokenService) serve(token string) { s.token.Store(&token) }

// startRegistry runs the pinned distribution registry (.ci/tools.sh
// registry) on 127.0.0.1 with storage in a temporary directory and
// returns its host:port, which Docker treats as an insecure (plain HTTP)
// registry as it does all of 127.0.0.0/8. It stops when the test ends.
func startRegistry(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(toolsBin(t), "registry-v"+toolsPin(t, "REGISTRY_VERSION"))
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("registry not found at %s: run `make tools` (.ci/tools.sh registry)", bin)
	}
	dir := t.TempDir()
	// The port is found free and handed over, so another process may take
	// it in between: the registry then exits at once and a new port is
	// tried.
	var lastErr error
	for range 3 {
		addr, err := runRegistry(t, bin, dir)
		if err == nil {
			return addr
		}
		lastErr = err
	}
	t.Fatalf("starting the registry: %v", lastErr)
	return ""
}

func runRegistry(t *testing.T, bin, dir string) (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := ln.Addr().String()
	ln.Close()
	cfg := fmt.Sprintf("version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n    rootdirectory: %s\nhttp:\n  addr: %s\n",
		strconv.Quote(filepath.Join(dir, "data")), addr)
	cfgPath := filepath.Join(dir, "config.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o600); err != nil {
		return "", err
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, bin, "serve", cfgPath)
	// A fixed secret keeps a warning out of the log; no traces are sent.
	cmd.Env = append(os.Environ(), "REGISTRY_HTTP_SECRET="+randomHex(16), "OTEL_TRACES_EXPORTER=none", "OTEL_SDK_DISABLED=true")
	var logs keylesstest.LockedBuffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Start(); err != nil {
		cancel()
		return "", err
	}
	exited := make(chan struct{})
	var waitErr error
	go func() {
		waitErr = cmd.Wait()
		close(exited)
	}()
	stop := func() {
		cancel()
		<-exited
	}
	if err := waitHTTP("http://"+addr+"/v2/", exited); err != nil {
		stop()
		return "", fmt.Errorf("%w (%v)\n%s", err, waitErr, logs.String())
	}
	t.Cleanup(func() {
		stop()
		if t.Failed() {
			t.Logf("registry log:\n%s", logs.String())
		}
	})
	return addr, nil
}

// waitHTTP polls url until it answers 200 or the process exits.
func waitHTTP(url string, exited <-chan struct{}) error {
	client := &http.Client{Timeout: 2 * time.Second}
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(60 * time.Second)
	for {
		if resp, err := client.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-exited:
			return errors.New("exited before serving")
		case <-deadline:
			return fmt.Errorf("%s did not answer within a minute", url)
		case <-tick.C:
		}
	}
}
