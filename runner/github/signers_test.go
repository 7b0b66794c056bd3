package github

import (
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
)

// The workflow main's signers.yml names, and the one a pull request adds:
// mallory's own workflow, run by a push to her branch.
var (
	novaJob    = keylesstest.Job{Repository: "octo-org/infra", Workflow: ".github/workflows/nova.yml", Ref: "refs/heads/main"}
	malloryJob = keylesstest.Job{Repository: "octo-org/infra", Workflow: ".github/workflows/mallory.yml", Ref: "refs/heads/mallory"}
)

func signersYAML(iss string, jobs ...keylesstest.Job) string {
	var b strings.Builder
	b.WriteString("signers:\n")
	for _, j := range jobs {
		b.WriteString("  - issuer: " + iss + "\n    repository: " + j.Repository + "\n    workflow: " + j.Workflow + "\n")
		if j.Ref != "refs/heads/main" {
			b.WriteString("    ref: " + j.Ref + "\n")
		}
	}
	return b.String()
}

// serveRepo answers the calls a trusted base makes for octo-org/infra:
// the repository, pull request 7 (head at headSHA, against base), its
// branches and the files at each commit.
func serveRepo(t *testing.T, f *fakeGitHub, base string, branches map[string]struct {
	sha       string
	protected bool
}, files map[string]map[string]string) {
	f.handle("GET /repos/octo-org/infra", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "repo.json"))
	})
	f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixtureWith(t, "pull.json", func(p map[string]any) {
			p["base"].(map[string]any)["ref"] = base
			p["base"].(map[string]any)["sha"] = branches[base].sha
		}))
	})
	f.handle("GET /repos/octo-org/infra/branches/{branch}", func(w http.ResponseWriter, r *http.Request) {
		b, ok := branches[r.PathValue("branch")]
		if !ok {
			writeJSON(w, 404, fixture(t, "not_found.json"))
			return
		}
		writeJSON(w, 200, fixtureWith(t, "branch.json", func(m map[string]any) {
			m["name"], m["protected"] = r.PathValue("branch"), b.protected
			m["commit"].(map[string]any)["sha"] = b.sha
		}))
	})
	f.handle("GET /repos/octo-org/infra/contents/{path...}", func(w http.ResponseWriter, r *http.Request) {
		text, ok := files[r.URL.Query().Get("ref")][r.PathValue("path")]
		if !ok {
			writeJSON(w, 404, fixture(t, "not_found.json"))
			return
		}
		writeJSON(w, 200, fixtureWith(t, "content.json", func(m map[string]any) {
			m["content"], m["size"] = base64.StdEncoding.EncodeToString([]byte(text)), len(text)
		}))
	})
}

// TestKeylessSignersFromTheTrustedBase: signers.yml is read through
// GitHub's API from the default branch, as approvers.yml is, whatever the
// pull request's head or an unprotected base it names holds. A pull
// request that adds its author's workflow there gets a certificate from
// (a real) Fulcio all the same, and its signature does not count; the
// default branch's workflow's does.
func TestKeylessSignersFromTheTrustedBase(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	fulcio := keylesstest.StartFulcio(t, iss)
	const (
		mainSHA = "c5b97d5ae6c19d5c5df71a34c7fbeeda2479ccbc"
		mineSHA = "1111111111111111111111111111111111111111"
		headSHA = "3333333333333333333333333333333333333333"
	)
	branches := map[string]struct {
		sha       string
		protected bool
	}{"main": {mainSHA, true}, "mallory-base": {mineSHA, false}}
	widened := signersYAML(iss.URL, novaJob, malloryJob)
	files := map[string]map[string]string{
		mainSHA: {keyless.SignersFile: signersYAML(iss.URL, novaJob)},
		mineSHA: {keyless.SignersFile: widened},
		headSHA: {keyless.SignersFile: widened},
	}
	msg := []byte(`{"type":"nova.apply.authorized"}`)
	sign := func(job keylesstest.Job) []byte {
		t.Helper()
		s, err := keyless.New(t.Context(), keyless.Options{FulcioURL: fulcio.URL, Token: iss.Token(t, job)})
		if err != nil {
			t.Fatalf("obtaining a certificate for %s: %v", job.Workflow, err)
		}
		sig, err := s.SigFile(msg)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	trustedSig, mallorySig := sign(novaJob), sign(malloryJob)

	for _, base := range []string{"main", "mallory-base"} {
		t.Run("pull request against "+base, func(t *testing.T) {
			f := newFakeGitHub(t)
			serveRepo(t, f, base, branches, files)
			s, err := keyless.ReadTrustedSigners(t.Context(), f.client().TrustedBase(), keyless.SignersFile)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Signers) != 1 || s.Signers[0].Subject() != keylesstest.WorkflowIdentity(novaJob) {
				t.Fatalf("signers %v, want main's nova.yml alone", s.Signers)
			}
			p, err := keyless.NewPolicy(s, fulcio.RootPEM)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.VerifyKeyless(msg, trustedSig); err != nil {
				t.Errorf("main's workflow's signature: %v", err)
			}
			_, err = p.VerifyKeyless(msg, mallorySig)
			if runner.ReasonOf(err) != runner.SignerIdentityUntrusted || !strings.Contains(fmtErr(err), "mallory.yml") {
				t.Errorf("the workflow the pull request added: %v, want %s naming it", err, runner.SignerIdentityUntrusted)
			}
		})
	}

	t.Run("missing on the default branch", func(t *testing.T) {
		f := newFakeGitHub(t)
		serveRepo(t, f, "main", branches, map[string]map[string]string{headSHA: {keyless.SignersFile: widened}})
		_, err := keyless.ReadTrustedSigners(t.Context(), f.client().TrustedBase(), keyless.SignersFile)
		if runner.ReasonOf(err) != runner.SignersConfigInvalid || !errors.Is(err, fs.ErrNotExist) || !strings.Contains(fmtErr(err), "not in the trusted base main at c5b97d5ae6c1") {
			t.Errorf("no signers.yml on main: %v, want %s saying it is not in the trusted base", err, runner.SignersConfigInvalid)
		}
	})
	t.Run("invalid on the default branch", func(t *testing.T) {
		f := newFakeGitHub(t)
		serveRepo(t, f, "main", branches, map[string]map[string]string{mainSHA: {keyless.SignersFile: "signers:\n  - issuer: " + iss.URL + "\n    repository: octo-org/infra\n    workflow: nova.yml\n"}})
		_, err := keyless.ReadTrustedSigners(t.Context(), f.client().TrustedBase(), keyless.SignersFile)
		if runner.ReasonOf(err) != runner.SignersConfigInvalid || !strings.Contains(fmtErr(err), "read from main at c5b97d5ae6c1") {
			t.Errorf("an invalid signers.yml on main: %v, want %s naming where it was read", err, runner.SignersConfigInvalid)
		}
	})
}

func fmtErr(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
