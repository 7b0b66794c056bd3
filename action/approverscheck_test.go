package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// publicKeyPEM is key's public half as `cosign generate-key-pair` writes
// cosign.pub.
func publicKeyPEM(t *testing.T, key any) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}))
}

// indent puts a PEM block under a YAML key as a literal block.
func indent(s string) string {
	return "|\n      " + strings.ReplaceAll(strings.TrimSpace(s), "\n", "\n      ") + "\n"
}

// TestValidateChecksTheApproverConfig: a broken approver config fails
// `nova validate` and the start of a dev plan with APPROVERS_INVALID
// (exit 2), whether the trusted base's copy is broken or the change's;
// not first the qa job's approval.
func TestValidateChecksTheApproverConfig(t *testing.T) {
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		t.Fatal(err)
	}
	groups := "groups:\n  qa:\n    members: [qa-lead]\n    teams: [platform/qa]\n  sre:\n    members: [sre-oncall]\n"
	valid := groups + "keys:\n  qa-lead: " + indent(publicKeyPEM(t, &p256.PublicKey))

	tests := []struct {
		name string
		// base is the default branch's copy, checkout the working tree's
		// ("-" for none).
		base, checkout string
		wantCode       int
		want           []string
	}{
		{"valid, with a team and a key", valid, valid, ExitPass, []string{"approvers pass", "valid in the trusted base and the checkout", "qa by qa (1 member(s), 1 team(s))", "1 key(s)"}},
		{"destroy approvals set", groups + "destroyApprovals: {prod: 1}\n", "", ExitPass, []string{"approvers pass", "a destroy needs 1, 1 and 2 distinct approver(s) in qa, prod and dr"}},
		{"destroy approvals for dev", groups + "destroyApprovals: {dev: 1}\n", "", ExitError,
			[]string{string(runner.ApproversInvalid), `destroyApprovals: "dev" is not qa, prod or dr`}},
		{"more destroy approvers than the group has", groups + "destroyApprovals: {dr: 2}\n", "", ExitError,
			[]string{string(runner.ApproversInvalid), "a destroy in dr needs 2 distinct approvers, and group sre has 1 member(s)"}},
		{"no approver config at all", "-", "-", ExitPass, []string{"approvers pass", "the checkout has no .nova/approvers.yml"}},
		{"added by the change, not merged yet", "-", valid, ExitPass, []string{"approvers pass", "not in the trusted base yet"}},
		{"a key that is not PEM", groups + "keys:\n  qa-lead: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5\n", "", ExitError,
			[]string{string(runner.ApproversInvalid), "keys: qa-lead", "PEM"}},
		{"an RSA key", groups + "keys:\n  qa-lead: " + indent(publicKeyPEM(t, &rsaKey.PublicKey)), "", ExitError,
			[]string{string(runner.ApproversInvalid), "keys: qa-lead", "ECDSA P-256"}},
		{"a P-384 key", groups + "keys:\n  qa-lead: " + indent(publicKeyPEM(t, &p384.PublicKey)), "", ExitError,
			[]string{string(runner.ApproversInvalid), "keys: qa-lead", "P-256"}},
		{"a team that is not org/team", "groups:\n  qa:\n    teams: [platform-qa]\n  sre:\n    members: [sre-oncall]\n", "", ExitError,
			[]string{string(runner.ApproversInvalid), `team "platform-qa" is not org/team`}},
		{"a guarded environment without a group", "groups:\n  qa:\n    members: [qa-lead]\n", "", ExitError,
			[]string{string(runner.ApproversInvalid), `no group "sre" approves prod`}},
		{"the team key misspelt", "groups:\n  qa:\n    team: [platform/qa]\n  sre:\n    members: [sre-oncall]\n", "", ExitError,
			[]string{string(runner.ApproversInvalid), "field team not found"}},
		{"the change breaks a valid one", valid, "groups:\n  qa:\n    members: [qa-lead]\n", ExitError,
			[]string{string(runner.ApproversInvalid), "the checkout's approver config"}},
		{"the change fixes a broken one", "groups:\n  qa:\n    members: [qa-lead]\n", valid, ExitError,
			[]string{string(runner.ApproversInvalid), "the trusted base's approver config", "merging a valid one fixes this"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
			approvers := filepath.Join(dir, runner.ApproversFile)
			if tt.base != "-" {
				writeFile(t, approvers, tt.base)
			}
			repo, err := git.PlainInit(dir, false)
			if err != nil {
				t.Fatal(err)
			}
			wt, _ := repo.Worktree()
			if err := wt.AddGlob("."); err != nil {
				t.Fatal(err)
			}
			if _, err := wt.Commit("base", &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}}); err != nil {
				t.Fatal(err)
			}
			switch tt.checkout {
			case "":
			case "-":
				if err := os.Remove(approvers); err != nil && !os.IsNotExist(err) {
					t.Fatal(err)
				}
			default:
				writeFile(t, approvers, tt.checkout)
			}
			for _, args := range [][]string{
				{"validate", "--dir", dir, "--env", "qa"},
				// A dev plan needs no approver, and still stops at a
				// broken config before anything is evaluated.
				{"plan", "--dir", dir, "--state-dir", t.TempDir(), "--terraform", filepath.Join(t.TempDir(), "no-terraform")},
			} {
				code, stdout, stderr := runCLI(t, args...)
				words := strings.Join(strings.Fields(stdout), " ")
				if args[0] == "plan" {
					if tt.wantCode == ExitError {
						if code != ExitError || !strings.Contains(words, string(runner.ApproversInvalid)) {
							t.Errorf("plan: exit %d, want %d with %s\n%s\n%s", code, ExitError, runner.ApproversInvalid, stdout, stderr)
						}
					} else if strings.Contains(words, string(runner.ApproversInvalid)) {
						t.Errorf("plan stopped at a valid approver config:\n%s", stdout)
					}
					continue
				}
				if code != tt.wantCode {
					t.Errorf("validate: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
				}
				for _, w := range tt.want {
					if !strings.Contains(words, w) {
						t.Errorf("validate: stdout lacks %q:\n%s", w, stdout)
					}
				}
			}
		})
	}
}
