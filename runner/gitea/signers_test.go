package gitea

import (
	"errors"
	"io/fs"
	"net/http"
	"strconv"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
	"github.com/nova-platform/nova/runner/forgehttp"
)

// TestKeylessSignersFromTheTrustedBaseOnGitea: on the real server,
// signers.yml is read from the default branch, as approvers.yml is,
// whatever the pull request's head or an unprotected base it names holds.
// A pull request adding its author's workflow there does not make that
// workflow's signature (from a real Fulcio) count. Without signers.yml on
// the default branch, or under the directory asked, the read fails with
// SIGNERS_CONFIG_INVALID.
func TestKeylessSignersFromTheTrustedBaseOnGitea(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	fulcio := keylesstest.StartFulcio(t, iss)
	f := newForge(t)
	s := f.s
	nova := keylesstest.Job{Repository: org + "/" + repo, Workflow: ".github/workflows/nova.yml", Ref: "refs/heads/main"}
	mallory := keylesstest.Job{Repository: org + "/" + repo, Workflow: ".github/workflows/mallory.yml", Ref: "refs/heads/mallory"}
	entry := func(j keylesstest.Job) string {
		return "  - issuer: " + iss.URL + "\n    repository: " + j.Repository + "\n    workflow: " + j.Workflow + "\n"
	}
	trusted := "signers:\n" + entry(nova)
	widened := trusted + entry(mallory) + "    ref: " + mallory.Ref + "\n"
	s.CommitFiles(t, org, repo, "main", "main", map[string]string{keyless.SignersFile: trusted}, f.bot)
	s.CommitFiles(t, org, repo, "mine", "main", map[string]string{keyless.SignersFile: widened}, f.author)
	s.CommitFiles(t, org, repo, "signers-change", "main", map[string]string{keyless.SignersFile: widened}, f.author)

	msg := []byte(`{"type":"nova.apply.authorized"}`)
	sign := func(job keylesstest.Job) []byte {
		t.Helper()
		k, err := keyless.New(t.Context(), keyless.Options{FulcioURL: fulcio.URL, Token: iss.Token(t, job)})
		if err != nil {
			t.Fatalf("obtaining a certificate for %s: %v", job.Workflow, err)
		}
		sig, err := k.SigFile(msg)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	trustedSig, mallorySig := sign(nova), sign(mallory)

	for _, base := range []string{"main", "mine"} {
		t.Run("pull request against "+base, func(t *testing.T) {
			pr := int64(s.CreatePullRequest(t, org, repo, "signers-change", base, "signers against "+base, f.author))
			c, err := New(t.Context(), Config{URL: s.URL, Token: f.bot.Token, Owner: org, Repo: repo, PullRequest: pr, Retry: forgehttp.Policy{Sleep: noWait}})
			if err != nil {
				t.Fatal(err)
			}
			got, err := keyless.ReadTrustedSigners(t.Context(), c.TrustedBase(), keyless.SignersFile)
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Signers) != 1 || got.Signers[0].Subject() != keylesstest.WorkflowIdentity(nova) {
				t.Fatalf("signers %v, want main's nova.yml alone", got.Signers)
			}
			p, err := keyless.NewPolicy(got, fulcio.RootPEM)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.VerifyKeyless(msg, trustedSig); err != nil {
				t.Errorf("main's workflow's signature: %v", err)
			}
			if _, err := p.VerifyKeyless(msg, mallorySig); runner.ReasonOf(err) != runner.SignerIdentityUntrusted {
				t.Errorf("the workflow the pull request added: %v, want %s", err, runner.SignerIdentityUntrusted)
			}
			s.API(t, f.author.Token, http.MethodPatch, "/repos/"+org+"/"+repo+"/pulls/"+strconv.FormatInt(pr, 10), map[string]string{"state": "closed"}, nil)
		})
	}

	t.Run("missing on the default branch", func(t *testing.T) {
		_, err := keyless.ReadTrustedSigners(t.Context(), f.c.TrustedBase(), "svc/"+keyless.SignersFile)
		wantReason(t, err, runner.SignersConfigInvalid, "not in the trusted base main at ")
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("a missing signers.yml is told from a broken one by fs.ErrNotExist: %v", err)
		}
	})
	t.Run("invalid on the default branch", func(t *testing.T) {
		s.CommitFiles(t, org, repo, "main", "main", map[string]string{"bad/" + keyless.SignersFile: strings.Replace(trusted, ".github/workflows/nova.yml", "nova.yml", 1)}, f.bot)
		_, err := keyless.ReadTrustedSigners(t.Context(), f.c.TrustedBase(), "bad/"+keyless.SignersFile)
		wantReason(t, err, runner.SignersConfigInvalid, "read from main at ", "not a file under .github/workflows/")
	})
}
