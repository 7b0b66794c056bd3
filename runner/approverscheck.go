package runner

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"
)

// ApproverKeyChecker tells whether a key registered under `keys:` can
// verify an approver's signed claims (an ECDSA P-256 public key in PEM).
type ApproverKeyChecker interface {
	CheckApproverKey(pem string) error
}

// CheckApprovers checks the approver config before anything depends on
// it, so a broken one fails `nova validate` (and the start of every plan
// and run), not first the approval of the qa job: the copy in the trusted
// base, which guarded environments decide with, and the checkout's own,
// which the change may be about to merge there. It runs only when the
// checkout has one. A config that is not there to read wraps
// fs.ErrNotExist (the checkout holds none, or the trusted base does not
// yet), which readers keep so a missing file is told from a broken one. Both must parse strictly (ParseApprovers: groups,
// `org/team` teams, a group for every guarded environment), and every
// registered key must be an ECDSA P-256 public key.
type CheckApprovers struct {
	// Proposed reads the checkout's copy; Trusted the trusted base's.
	Proposed, Trusted ApproversReader
	Keys              ApproverKeyChecker
}

var _ Stage = CheckApprovers{}

// Name implements Stage.
func (CheckApprovers) Name() string { return "approvers" }

// Run implements Stage.
func (c CheckApprovers) Run(ctx context.Context, _ *State) (Result, error) {
	summary, err := c.Check(ctx)
	if err != nil {
		return Result{}, err
	}
	return Result{Verdict: Pass, Summary: summary}, nil
}

// Check checks both copies and says what it found.
func (c CheckApprovers) Check(ctx context.Context) (string, error) {
	if c.Proposed == nil {
		return "no approver config to check", nil
	}
	proposed, err := c.Proposed.Approvers(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return fmt.Sprintf("the checkout has no %s: qa, prod and dr cannot be approved until one is merged", ApproversFile), nil
	}
	if err == nil {
		err = c.checkKeys(proposed)
	}
	if err != nil {
		return "", Errorf(ReasonOf(err), "the checkout's approver config: %w", err)
	}
	if c.Trusted == nil {
		return "the checkout's approver config is valid: " + describeApprovers(proposed), nil
	}
	trusted, err := c.Trusted.Approvers(ctx)
	if errors.Is(err, fs.ErrNotExist) {
		return "the checkout's approver config is valid; it is not in the trusted base yet, and approvals count once it is merged: " + describeApprovers(proposed), nil
	}
	if err == nil {
		err = c.checkKeys(trusted)
	}
	if err != nil {
		// The checkout's copy is valid: the fix may be this very change.
		return "", Errorf(ReasonOf(err), "the trusted base's approver config, which qa, prod and dr decide with (the checkout's copy is valid; merging a valid one fixes this): %w", err)
	}
	return "valid in the trusted base and the checkout: " + describeApprovers(trusted), nil
}

// checkKeys checks every registered key, in name order.
func (c CheckApprovers) checkKeys(cfg *ApproverConfig) error {
	if c.Keys == nil {
		return nil
	}
	for _, name := range slices.Sorted(maps.Keys(cfg.Keys)) {
		if err := c.Keys.CheckApproverKey(cfg.Keys[name]); err != nil {
			return Errorf(ApproversInvalid, "%s: keys: %s: %w", ApproversFile, name, err)
		}
	}
	return nil
}

// describeApprovers names who approves each guarded environment.
func describeApprovers(cfg *ApproverConfig) string {
	var parts []string
	for _, env := range []Environment{QA, Prod, DR} {
		g := cfg.GroupFor(env)
		parts = append(parts, fmt.Sprintf("%s by %s (%d member(s), %d team(s))", env, g, len(cfg.Groups[g].Members), len(cfg.Groups[g].Teams)))
	}
	s := strings.Join(parts, ", ")
	s += fmt.Sprintf("; a destroy needs %d, %d and %d distinct approver(s) in qa, prod and dr", cfg.DestroyApprovalsFor(QA), cfg.DestroyApprovalsFor(Prod), cfg.DestroyApprovalsFor(DR))
	if n := len(cfg.Keys); n > 0 {
		s += fmt.Sprintf("; %d key(s)", n)
	}
	return s
}
