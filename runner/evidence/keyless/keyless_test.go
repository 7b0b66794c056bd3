package keyless_test

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
)

// trusted is the workflow signers.yml names in these tests.
var trusted = keylesstest.Job{Repository: "acme/infra", Workflow: ".github/workflows/nova.yml", Ref: "refs/heads/main"}

func signers(t *testing.T, iss *keylesstest.Issuer) *keyless.Signers {
	t.Helper()
	s, err := keyless.ParseSigners([]byte("signers:\n  - issuer: "+iss.URL+"\n    repository: acme/infra\n    workflow: .github/workflows/nova.yml\n"), "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func policy(t *testing.T, iss *keylesstest.Issuer, f *keylesstest.Fulcio) *keyless.Policy {
	t.Helper()
	p, err := keyless.NewPolicy(signers(t, iss), f.RootPEM)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func newSigner(t *testing.T, iss *keylesstest.Issuer, f *keylesstest.Fulcio, job keylesstest.Job) *keyless.Signer {
	t.Helper()
	s, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(t, job)})
	if err != nil {
		t.Fatalf("obtaining a certificate: %v", err)
	}
	return s
}

func wantReason(t *testing.T, err error, want runner.Reason) {
	t.Helper()
	var re *runner.Error
	if !errors.As(err, &re) || re.Reason != want {
		t.Fatalf("error %v, want reason %s", err, want)
	}
}

// TestKeylessSignatureVerifiesAsTheTrustedWorkflow signs with a real
// Fulcio's certificate for the trusted workflow's token: the signature
// verifies, names the workflow, and fails over other bytes.
func TestKeylessSignatureVerifiesAsTheTrustedWorkflow(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	s := newSigner(t, iss, f, trusted)
	id, err := keyless.ReadIdentity(s.Certificate())
	if err != nil {
		t.Fatal(err)
	}
	if id.Subject != keylesstest.WorkflowIdentity(trusted) || id.Issuer != iss.URL {
		t.Fatalf("certificate identity %s, want %s (%s)", id, keylesstest.WorkflowIdentity(trusted), iss.URL)
	}
	msg := []byte(`{"type":"nova.apply.authorized"}`)
	sig, err := s.SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	if !keyless.IsBundle(sig) {
		t.Fatalf("a keyless .sig is a bundle, got %q", sig)
	}
	p := policy(t, iss, f)
	who, err := p.VerifyKeyless(msg, sig)
	if err != nil {
		t.Fatalf("verifying: %v", err)
	}
	if !strings.Contains(who, keylesstest.WorkflowIdentity(trusted)) {
		t.Errorf("verified as %q, want the workflow's identity", who)
	}
	if _, err := p.VerifyKeyless([]byte(`{"type":"nova.apply.rejected"}`), sig); err == nil {
		t.Error("a keyless signature verified over other bytes")
	}
}

// TestPullRequestWorkflowRefused: a pull request's run of the workflow
// (its own, possibly edited, copy) gets a certificate from Fulcio, but for
// another job_workflow_ref; signers.yml does not name it.
func TestPullRequestWorkflowRefused(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	pr := trusted
	pr.Ref, pr.EventName = "refs/pull/7/merge", "pull_request"
	s := newSigner(t, iss, f, pr)
	msg := []byte(`{"type":"nova.approval.recorded"}`)
	sig, err := s.SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy(t, iss, f).VerifyKeyless(msg, sig)
	wantReason(t, err, runner.SignerIdentityUntrusted)
	if !strings.Contains(err.Error(), "refs/pull/7/merge") {
		t.Errorf("the refusal does not say whose signature it was: %v", err)
	}
}

// TestReusableWorkflowCalledFromAnotherRepoRefused: another repository
// calling the trusted workflow file as a reusable workflow gets a
// certificate naming that file at main; it ran elsewhere and does not count.
func TestReusableWorkflowCalledFromAnotherRepoRefused(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	other := keylesstest.Job{Repository: "mallory/tools", Workflow: ".github/workflows/call.yml", Ref: "refs/heads/main",
		JobWorkflowRef: "acme/infra/.github/workflows/nova.yml@refs/heads/main"}
	s := newSigner(t, iss, f, other)
	msg := []byte(`{}`)
	sig, err := s.SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy(t, iss, f).VerifyKeyless(msg, sig)
	wantReason(t, err, runner.SignerIdentityUntrusted)
}

// TestTrustedWorkflowCalledAsReusableRefused: a workflow of the same
// repository, at the same ref, that calls the trusted workflow file as a
// reusable one gets a certificate naming that file; it started elsewhere
// (its Build Config URI is the caller) and does not count.
func TestTrustedWorkflowCalledAsReusableRefused(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	caller := keylesstest.Job{Repository: "acme/infra", Workflow: ".github/workflows/other.yml", Ref: "refs/heads/main",
		JobWorkflowRef: "acme/infra/.github/workflows/nova.yml@refs/heads/main"}
	msg := []byte(`{}`)
	sig, err := newSigner(t, iss, f, caller).SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy(t, iss, f).VerifyKeyless(msg, sig)
	wantReason(t, err, runner.SignerIdentityUntrusted)
	if !strings.Contains(err.Error(), "other.yml") {
		t.Errorf("the refusal does not name the caller: %v", err)
	}
}

// TestReusableSignerPinnedToItsCaller: an identity with reusableWorkflow
// accepts that reusable workflow's signature only when the run started
// from the named caller, in the named repository at the named ref (the
// Build Config URI and Source Repository extensions); another caller, the
// caller's pull request run, or another version of the reusable workflow
// do not count.
func TestReusableSignerPinnedToItsCaller(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	const deploy = "nova-platform/nova/.github/workflows/deploy.yml@refs/tags/v1"
	s, err := keyless.ParseSigners([]byte("signers:\n  - issuer: "+iss.URL+"\n    repository: acme/infra\n    workflow: .github/workflows/nova.yml\n    reusableWorkflow: "+deploy+"\n"), "refs/heads/main")
	if err != nil {
		t.Fatal(err)
	}
	p, err := keyless.NewPolicy(s, f.RootPEM)
	if err != nil {
		t.Fatal(err)
	}
	caller := keylesstest.Job{Repository: "acme/infra", Workflow: ".github/workflows/nova.yml", Ref: "refs/heads/main", JobWorkflowRef: deploy}
	msg := []byte(`{}`)
	sign := func(job keylesstest.Job) []byte {
		t.Helper()
		sig, err := newSigner(t, iss, f, job).SigFile(msg)
		if err != nil {
			t.Fatal(err)
		}
		return sig
	}
	who, err := p.VerifyKeyless(msg, sign(caller))
	if err != nil {
		t.Fatalf("the reusable workflow called by the trusted caller: %v", err)
	}
	if !strings.Contains(who, "deploy.yml@refs/tags/v1 called by https://github.com/acme/infra/.github/workflows/nova.yml@refs/heads/main") {
		t.Errorf("verified as %q, want the reusable workflow and its caller", who)
	}
	other := caller
	other.Workflow = ".github/workflows/mallory.yml"
	pr := caller
	pr.Ref, pr.EventName = "refs/pull/7/merge", "pull_request"
	v2 := caller
	v2.JobWorkflowRef = "nova-platform/nova/.github/workflows/deploy.yml@refs/heads/mallory"
	forked := caller
	forked.Repository = "mallory/infra"
	for name, job := range map[string]keylesstest.Job{"another caller": other, "the caller's pull request run": pr, "another version": v2, "another repository": forked} {
		_, err := p.VerifyKeyless(msg, sign(job))
		var re *runner.Error
		if !errors.As(err, &re) || re.Reason != runner.SignerIdentityUntrusted {
			t.Errorf("%s: %v, want %s", name, err, runner.SignerIdentityUntrusted)
		}
	}
}

// TestAnotherFulciosCertificateRefused: a certificate from a CA the
// verifier was not configured with proves nothing, whatever it names.
func TestAnotherFulciosCertificateRefused(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	rogue := keylesstest.StartFulcio(t, iss)
	s := newSigner(t, iss, rogue, trusted)
	msg := []byte(`{}`)
	sig, err := s.SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = policy(t, iss, f).VerifyKeyless(msg, sig)
	wantReason(t, err, runner.SignerIdentityUntrusted)
}

// TestExpiredCertificateRefusedAtSigning: once the certificate's validity
// has passed, the signer signs nothing with it.
func TestExpiredCertificateRefusedAtSigning(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	var now time.Time
	s, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(t, trusted), Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	now = s.Certificate().NotAfter.Add(-time.Second)
	if _, err := s.SigFile([]byte(`{}`)); err != nil {
		t.Fatalf("signing inside the validity: %v", err)
	}
	now = s.Certificate().NotAfter.Add(time.Second)
	_, err = s.SigFile([]byte(`{}`))
	wantReason(t, err, runner.KeylessCertificateExpired)
	_, err = s.Sign([]byte(`{}`))
	wantReason(t, err, runner.KeylessCertificateExpired)
}

// TestFulcioRefusesAnExpiredToken: Fulcio checks the token; Nova says why
// it has no certificate and never repeats the token.
func TestFulcioRefusesAnExpiredToken(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	old := trusted
	old.IssuedAt = time.Now().Add(-time.Hour)
	tok := iss.Token(t, old)
	_, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: tok})
	wantReason(t, err, runner.KeylessCertificateRefused)
	if strings.Contains(err.Error(), tok) {
		t.Error("the error repeats the token")
	}
	_, err = keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL})
	wantReason(t, err, runner.KeylessTokenMissing)
}

func TestParseSignersRefusesPullRequestRefsAndUnknownFields(t *testing.T) {
	for name, doc := range map[string]string{
		"pull ref":               "signers:\n  - issuer: https://token.actions.githubusercontent.com\n    repository: a/b\n    workflow: .github/workflows/n.yml\n    ref: refs/pull/1/merge\n",
		"unknown field":          "signers:\n  - issuer: https://token.actions.githubusercontent.com\n    repository: a/b\n    workflow: .github/workflows/n.yml\n    branch: main\n",
		"no workflow":            "signers:\n  - issuer: https://token.actions.githubusercontent.com\n    repository: a/b\n",
		"empty":                  "signers: []\n",
		"reusable at a pull ref": "signers:\n  - issuer: https://token.actions.githubusercontent.com\n    repository: a/b\n    workflow: .github/workflows/n.yml\n    reusableWorkflow: nova-platform/nova/.github/workflows/deploy.yml@refs/pull/1/merge\n",
		"reusable without ref":   "signers:\n  - issuer: https://token.actions.githubusercontent.com\n    repository: a/b\n    workflow: .github/workflows/n.yml\n    reusableWorkflow: nova-platform/nova/.github/workflows/deploy.yml\n",
	} {
		_, err := keyless.ParseSigners([]byte(doc), "refs/heads/main")
		var re *runner.Error
		if !errors.As(err, &re) || re.Reason != runner.SignersConfigInvalid {
			t.Errorf("%s: got %v, want %s", name, err, runner.SignersConfigInvalid)
		}
	}
}

// TestRenewingSignerObtainsANewCertificateBeforeExpiry: a run that
// outlasts its certificate signs on with a new one, for a new token, and
// never with one about to expire.
func TestRenewingSignerObtainsANewCertificateBeforeExpiry(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	// The clock is the real one until the test moves it: a time taken
	// before Fulcio issues the first certificate can fall before its
	// NotBefore (whole seconds), where signing is rightly refused.
	var now time.Time
	clock := func() time.Time {
		if now.IsZero() {
			return time.Now()
		}
		return now
	}
	tokens := 0
	r, err := keyless.NewRenewing(context.Background(), keyless.Options{FulcioURL: f.URL, Now: clock},
		func(context.Context) (string, error) {
			tokens++
			return iss.Token(t, trusted), nil
		})
	if err != nil {
		t.Fatal(err)
	}
	first := r.CertificatePEM()
	p := policy(t, iss, f)
	msg := []byte(`{}`)
	sig, err := r.SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.VerifyKeyless(msg, sig); err != nil {
		t.Fatal(err)
	}
	if tokens != 1 {
		t.Fatalf("%d tokens requested for one certificate", tokens)
	}
	// Ten seconds before the certificate expires, a new one is obtained.
	_, cert, _, _, err := keyless.ParseBundle(sig)
	if err != nil {
		t.Fatal(err)
	}
	now = cert.NotAfter.Add(-10 * time.Second)
	sig, certPEM, err := r.SignCertified(msg)
	if err != nil {
		t.Fatal(err)
	}
	if tokens != 2 || bytes.Equal(certPEM, first) {
		t.Fatalf("no new certificate near expiry (%d tokens)", tokens)
	}
	if len(sig) == 0 {
		t.Fatal("no signature")
	}
}
