package keyless_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/keyless"
	"github.com/nova-platform/nova/runner/evidence/keyless/keylesstest"
)

// cosignVerifyBlob runs stock cosign's verify-blob on a bundle with the
// transparency log checked (no --insecure-ignore-tlog): the Rekor key
// from SIGSTORE_REKOR_PUBLIC_KEY, no TUF (its mirror is unreachable).
func cosignVerifyBlob(t *testing.T, iss *keylesstest.Issuer, f *keylesstest.Fulcio, r *keylesstest.Rekor, sig []byte, msg []byte) (string, error) {
	t.Helper()
	cosign, err := exec.LookPath("cosign")
	if err != nil {
		t.Fatal("cosign is not on PATH: run `make tools` and put its bin dir (~/.cache/nova-tools/bin) on PATH")
	}
	dir := t.TempDir()
	sigPath, blob := filepath.Join(dir, "event.sig"), filepath.Join(dir, "event.json")
	if err := os.WriteFile(sigPath, sig, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(blob, msg, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(cosign, "verify-blob", "--bundle", sigPath,
		"--certificate-identity", keylesstest.WorkflowIdentity(trusted), "--certificate-oidc-issuer", iss.URL,
		"--certificate-chain", f.RootFile, "--insecure-ignore-sct", "--rekor-url", r.URL, blob)
	cmd.Env = append(os.Environ(), "SIGSTORE_REKOR_PUBLIC_KEY="+r.PublicKeyFile,
		"TUF_ROOT="+filepath.Join(dir, "tuf"), "TUF_MIRROR=http://127.0.0.1:1")
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestRekorUploadVerifiesWithTheLog: a signer with a Rekor URL uploads
// each signature to a real Rekor (over Trillian and PostgreSQL) and keeps
// the entry in the bundle; Nova's policy with the log's key and stock
// cosign with the transparency log both accept it; a bundle without an
// entry is refused where one is required, and by cosign checking the log.
func TestRekorUploadVerifiesWithTheLog(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	r := keylesstest.StartRekor(t)
	s, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(t, trusted), RekorURL: r.URL, RekorPublicKey: r.PublicKeyPEM})
	if err != nil {
		t.Fatal(err)
	}
	msg := []byte(`{"type":"nova.apply.authorized","seq":1}`)
	sig, err := s.SigFile(msg)
	if err != nil {
		t.Fatalf("signing with the upload: %v", err)
	}
	var b keyless.Bundle
	if err := json.Unmarshal(sig, &b); err != nil {
		t.Fatal(err)
	}
	if b.RekorBundle == nil || b.RekorInclusionProof == nil || b.RekorInclusionProof.Checkpoint == "" {
		t.Fatalf("the bundle holds no log entry with its inclusion proof: %s", sig)
	}

	p, err := policy(t, iss, f).WithRekor(r.PublicKeyPEM, true)
	if err != nil {
		t.Fatal(err)
	}
	who, err := p.VerifyKeyless(msg, sig)
	if err != nil {
		t.Fatalf("verifying with the log: %v", err)
	}
	if !strings.Contains(who, keylesstest.WorkflowIdentity(trusted)) || !strings.Contains(who, "logged in Rekor") {
		t.Errorf("verified as %q, want the workflow's identity, logged", who)
	}
	if out, err := cosignVerifyBlob(t, iss, f, r, sig, msg); err != nil {
		t.Fatalf("stock cosign refused the logged signature: %v\n%s", err, out)
	}

	// The same signer's signature without an upload: no entry.
	local, err := s.LocalSigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.VerifyKeyless(msg, local)
	wantReason(t, err, runner.RekorEntryInvalid)
	if out, err := cosignVerifyBlob(t, iss, f, r, local, msg); err == nil {
		t.Errorf("stock cosign accepted a signature the log never saw\n%s", out)
	}
	// Not required, an unlogged signature counts as it did before.
	optional, err := policy(t, iss, f).WithRekor(r.PublicKeyPEM, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := optional.VerifyKeyless(msg, local); err != nil {
		t.Errorf("an unlogged signature where no entry is required: %v", err)
	}
}

// TestTamperedRekorEntryRefused: each part of the logged entry is bound
// by the log's signatures, and to the signature it accompanies: a changed
// index, time, proof or body, an entry for another event, or a key that
// is not the log's are refused by Nova (and the changed bundle by cosign).
func TestTamperedRekorEntryRefused(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	r := keylesstest.StartRekor(t)
	s, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(t, trusted), RekorURL: r.URL})
	if err != nil {
		t.Fatal(err)
	}
	msg, other := []byte(`{"seq":1}`), []byte(`{"seq":2}`)
	sig, err := s.SigFile(msg)
	if err != nil {
		t.Fatal(err)
	}
	otherSig, err := s.SigFile(other)
	if err != nil {
		t.Fatal(err)
	}
	p, err := policy(t, iss, f).WithRekor(r.PublicKeyPEM, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.VerifyKeyless(msg, sig); err != nil {
		t.Fatalf("the untampered entry: %v", err)
	}
	if _, err := p.VerifyKeyless(other, otherSig); err != nil {
		t.Fatalf("the second entry: %v", err)
	}
	parse := func(raw []byte) keyless.Bundle {
		var b keyless.Bundle
		if err := json.Unmarshal(raw, &b); err != nil {
			t.Fatal(err)
		}
		return b
	}
	otherEntry := parse(otherSig)
	for name, tamper := range map[string]func(*keyless.Bundle){
		"log index":       func(b *keyless.Bundle) { b.RekorBundle.Payload.LogIndex++ },
		"integrated time": func(b *keyless.Bundle) { b.RekorBundle.Payload.IntegratedTime -= 3600 },
		"proof hash":      func(b *keyless.Bundle) { b.RekorInclusionProof.RootHash = strings.Repeat("0", 64) },
		"proof tree size": func(b *keyless.Bundle) { b.RekorInclusionProof.TreeSize += 5 },
		"checkpoint":      func(b *keyless.Bundle) { b.RekorInclusionProof.Checkpoint = "" },
		"another event's entry": func(b *keyless.Bundle) {
			b.RekorBundle, b.RekorInclusionProof = otherEntry.RekorBundle, otherEntry.RekorInclusionProof
		},
	} {
		b := parse(sig)
		tamper(&b)
		raw, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		_, err = p.VerifyKeyless(msg, raw)
		var re *runner.Error
		if err == nil || !errors.As(err, &re) || re.Reason != runner.RekorEntryInvalid {
			t.Errorf("%s: got %v, want %s", name, err, runner.RekorEntryInvalid)
		}
	}
	// The right entry under another log's key is not this log's entry.
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rogue, err := cryptoutils.MarshalPublicKeyToPEM(&priv.PublicKey)
	if err != nil {
		t.Fatal(err)
	}
	q, err := policy(t, iss, f).WithRekor(rogue, false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = q.VerifyKeyless(msg, sig)
	wantReason(t, err, runner.RekorEntryInvalid)
}

// TestRekorUnreachableRecordsNothing: a log that cannot be reached when
// the signer starts, or that goes away before an event is signed, is a
// REKOR_UPLOAD_FAILED error and no .sig: nothing is recorded unlogged.
func TestRekorUnreachableRecordsNothing(t *testing.T) {
	iss := keylesstest.NewIssuer(t)
	f := keylesstest.StartFulcio(t, iss)
	_, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(t, trusted), RekorURL: "http://127.0.0.1:1"})
	wantReason(t, err, runner.RekorUploadFailed)

	r := keylesstest.StartRekor(t)
	s, err := keyless.New(context.Background(), keyless.Options{FulcioURL: f.URL, Token: iss.Token(t, trusted), RekorURL: r.URL})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.SigFile([]byte(`{"seq":1}`)); err != nil {
		t.Fatalf("while the log runs: %v", err)
	}
	r.Stop()
	sig, err := s.SigFile([]byte(`{"seq":2}`))
	wantReason(t, err, runner.RekorUploadFailed)
	if sig != nil {
		t.Errorf("a .sig was returned for a signature the log did not take: %s", sig)
	}
}
