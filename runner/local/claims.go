package local

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// ClaimKeys verifies local approval claims with the approver's own key:
// the one registered under `keys:` in the trusted approver config, else —
// only when Dir is set, in local mode — the key made on first use under
// Dir/<name>. A forge's runner sets no Dir: there only registered keys
// count.
type ClaimKeys struct {
	Approvers runner.ApproversReader
	Dir       string
}

var _ runner.ClaimVerifier = ClaimKeys{}

// VerifyClaim implements runner.ClaimVerifier.
func (k ClaimKeys) VerifyClaim(ctx context.Context, c runner.SignedClaim) error {
	return k.verify(ctx, c.Claim.Approver, c.Claim, c.Signature)
}

// verify checks sig over the canonical form of claim with the key of
// signer.
func (k ClaimKeys) verify(ctx context.Context, signer string, claim any, sig string) error {
	name, err := runner.ParseLogin(signer)
	if err != nil {
		return err
	}
	// Claims are signed under the canonical name, so SRE-ONCALL's claim
	// is sre-oncall's, and only sre-oncall's key verifies it.
	if string(name) != signer {
		return fmt.Errorf("approver %q is not written as %q", signer, name)
	}
	cfg, err := k.Approvers.Approvers(ctx)
	if err != nil {
		return err
	}
	pem := cfg.Keys[name]
	if pem == "" && k.Dir != "" {
		b, err := os.ReadFile(signing.LocalSigningPublicKey(filepath.Join(k.Dir, string(name))))
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("reading %s's key: %w", name, err)
		}
		pem = string(b)
	}
	if pem == "" {
		return runner.Errorf(runner.ApproverKeyNotRegistered, "%s has no key registered under keys: in %s", name, runner.ApproversFile)
	}
	ks, err := approverKey(pem)
	if err != nil {
		return fmt.Errorf("%s's key: %w", name, err)
	}
	msg, err := runner.Canonical(claim)
	if err != nil {
		return err
	}
	return ks.Verify(msg, []byte(sig))
}

var _ runner.ApproverKeyChecker = ClaimKeys{}

// CheckApproverKey implements runner.ApproverKeyChecker: the key must be
// what VerifyClaim can verify with.
func (ClaimKeys) CheckApproverKey(pem string) error {
	_, err := approverKey(pem)
	return err
}

// approverKey reads a key registered under keys: one or more PEM public
// keys (rotated keys may be listed together), each ECDSA P-256.
func approverKey(pem string) (*signing.KeySet, error) {
	pub, err := signing.LoadPublicKeys([]byte(pem))
	if err != nil {
		return nil, fmt.Errorf("want ECDSA P-256 public keys in PEM: %w", err)
	}
	ks, err := signing.NewKeySet(pub...)
	if err != nil {
		return nil, fmt.Errorf("want ECDSA P-256 public keys in PEM: %w", err)
	}
	return ks, nil
}

// SignClaim signs claim with its approver's local key under dir, making
// the key on first use: what `nova approve` does on the approver's
// machine.
func SignClaim(dir string, claim runner.LocalClaim) (runner.SignedClaim, error) {
	name, err := runner.ParseLogin(claim.Approver)
	if err != nil {
		return runner.SignedClaim{}, runner.Errorf(runner.ConfigInvalid, "--as: %w", err)
	}
	claim.Approver = string(name)
	sig, err := sign(dir, claim.Approver, claim)
	if err != nil {
		return runner.SignedClaim{}, err
	}
	return runner.SignedClaim{Claim: claim, Signature: sig}, nil
}

// sign signs the canonical form of claim with signer's local key under
// dir, made on first use.
func sign(dir, signer string, claim any) (string, error) {
	s, err := signing.LocalSigner(filepath.Join(dir, signer))
	if err != nil {
		return "", runner.Errorf(runner.EvidenceKeyInvalid, "%s's key: %w", signer, err)
	}
	msg, err := runner.Canonical(claim)
	if err != nil {
		return "", runner.Errorf(runner.InternalError, "encoding the claim: %w", err)
	}
	sig, err := s.Sign(msg)
	if err != nil {
		return "", runner.Errorf(runner.EvidenceKeyInvalid, "signing the claim: %w", err)
	}
	return string(sig), nil
}
