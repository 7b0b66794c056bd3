package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/signing"
)

// TestApproveOnAForgeNeedsARegisteredKey: inside a forge's job, `nova
// approve --as anyone` made a key on first use, and the run's gate took the
// claim it signed as that person's approval. On a forge a local claim now
// counts only when signed with the approver's key registered in the trusted
// approver config.
func TestApproveOnAForgeNeedsARegisteredKey(t *testing.T) {
	ctx := t.Context()
	fakeInfracost(t, `{"version":"0.2","currency":"USD","projects":[],"totalMonthlyCost":"12.50","diffTotalMonthlyCost":"12.50"}`)
	c := newConsumer(t, helloContract("world", "dev")+"nfr:\n  monthlyCostCeiling: 50\n")
	c.env["INFRACOST_API_KEY"] = "fake-key"
	for _, r := range []string{"e2e", "load", "unit"} {
		writeFile(t, filepath.Join(c.dir, "reports", r+".xml"), `<testsuite><testcase name="a"/></testsuite>`)
	}
	if code, _, stderr := c.nova(ctx, "run"); code != ExitPass {
		t.Fatalf("dev: exit %d\n%s", code, stderr)
	}
	if code, v, stderr := c.nova(ctx, "run", "--env", "qa"); code != ExitAwaitingApproval {
		t.Fatalf("qa: exit %d %s\n%s", code, v.Reason, stderr)
	}
	approve := func(env map[string]string, as string) (int, string) {
		t.Helper()
		var out bytes.Buffer
		getenv := func(k string) string {
			if v, ok := env[k]; ok {
				return v
			}
			return c.env[k]
		}
		code := exitCode(run(ctx, Env{Args: []string{"approve", "--dir", c.dir, "--env", "qa", "--as", as}, Getenv: getenv, Environ: os.Environ(), Stdout: &out, Stderr: &out}))
		return code, out.String()
	}
	forge := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/app", "GITHUB_RUN_ID": "7"}
	for _, as := range []string{"qa-lead", "QA-LEAD", "anyone"} {
		code, out := approve(forge, as)
		if code != ExitFail || !strings.Contains(out, string(runner.ApproverKeyNotRegistered)) {
			t.Errorf("on a forge, approve --as %s without a registered key: exit %d\n%s", as, code, out)
		}
	}
	// Registered, but the job signs with another key: refused too.
	home := c.env["HOME"]
	other := t.TempDir()
	if _, err := signing.LocalSigner(other); err != nil {
		t.Fatal(err)
	}
	pub, err := os.ReadFile(signing.LocalSigningPublicKey(other))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(c.dir, runner.ApproversFile), testApprovers+"keys:\n  qa-lead: |\n"+indentBy(string(pub), "    "))
	if code, out := approve(forge, "qa-lead"); code != ExitFail || !strings.Contains(out, string(runner.ApprovalClaimInvalid)) {
		t.Errorf("on a forge, approve with a key other than the registered one: exit %d\n%s", code, out)
	}
	// With the registered key, the approval is recorded.
	keyDir := filepath.Join(home, ".config", "nova", "approvers", "qa-lead")
	if err := os.RemoveAll(keyDir); err != nil {
		t.Fatal(err)
	}
	if err := os.CopyFS(keyDir, os.DirFS(other)); err != nil {
		t.Fatal(err)
	}
	if code, out := approve(forge, "qa-lead"); code != ExitPass {
		t.Errorf("on a forge, approve with the registered key: exit %d\n%s", code, out)
	}
}

func indentBy(s, prefix string) string {
	var b strings.Builder
	for _, line := range strings.SplitAfter(strings.TrimRight(s, "\n"), "\n") {
		b.WriteString(prefix + line)
	}
	return b.String() + "\n"
}
