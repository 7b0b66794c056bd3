package local

import (
	"context"

	"github.com/nova-platform/nova/runner"
)

// SignBreakGlass signs a break-glass claim with its actor's local key
// under dir, the key `nova approve` signs with (made on first use).
func SignBreakGlass(dir string, claim runner.BreakGlassClaim) (runner.SignedBreakGlass, error) {
	name, err := runner.ParseLogin(claim.Actor)
	if err != nil {
		return runner.SignedBreakGlass{}, runner.Errorf(runner.ConfigInvalid, "--as: %w", err)
	}
	claim.Actor = string(name)
	sig, err := sign(dir, claim.Actor, claim)
	if err != nil {
		return runner.SignedBreakGlass{}, err
	}
	return runner.SignedBreakGlass{Claim: claim, Signature: sig}, nil
}

var _ runner.BreakGlassVerifier = ClaimKeys{}

// VerifyBreakGlass implements runner.BreakGlassVerifier with the keys an
// approval claim is verified with.
func (k ClaimKeys) VerifyBreakGlass(ctx context.Context, c runner.SignedBreakGlass) error {
	return k.verify(ctx, c.Claim.Actor, c.Claim, c.Signature)
}
