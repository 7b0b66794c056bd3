package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestDetectForge(t *testing.T) {
	tests := []struct {
		vars map[string]string
		want Forge
	}{
		{nil, NoForge},
		{map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_SERVER_URL": "https://github.com"}, GitHub},
		// Gitea's runner sets GITHUB_ACTIONS as well.
		{map[string]string{"GITHUB_ACTIONS": "true", "GITEA_ACTIONS": "true"}, Gitea},
		{map[string]string{"GITHUB_ACTIONS": "false"}, NoForge},
	}
	for _, tt := range tests {
		if got := detectForge(func(k string) string { return tt.vars[k] }); got != tt.want {
			t.Errorf("detectForge(%v) = %q, want %q", tt.vars, got, tt.want)
		}
	}
}

// TestSecretsAreMaskedBeforeAnythingElse runs nova as a forge's runner
// does, with secrets in the environment and in the evidence URL, and a
// configuration error that makes it stop early: the masks must be the
// first lines it writes, covering every secret line by line.
func TestSecretsAreMaskedBeforeAnythingElse(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	vars := map[string]string{
		"GITHUB_ACTIONS":      "true",
		"HOME":                t.TempDir(),
		"NOVA_EVIDENCE_TOKEN": "ghs_evidencetoken123",
		"INFRACOST_API_KEY":   "ico-abcdef",
		"NOVA_SIGNING_KEY":    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIAbc\nxyz0123\n-----END EC PRIVATE KEY-----\n",
		"NOVA_EVIDENCE_REPO":  "https://bot:hunter22@git.example.com/org/evidence.git",
		"INPUT_COMMAND":       "validate",
		"INPUT_DIR":           dir,
		"INPUT_OUTPUT":        "xml", // invalid: nova stops at the configuration
	}
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{Getenv: func(k string) string { return vars[k] }, Stdout: &stdout, Stderr: &stderr}))
	if code != ExitError {
		t.Fatalf("exit %d, want %d", code, ExitError)
	}
	var masks []string
	for _, line := range strings.Split(strings.TrimSpace(stdout.String()), "\n") {
		v, ok := strings.CutPrefix(line, "::add-mask::")
		if !ok {
			t.Errorf("stdout line %q comes before or among the masks", line)
			continue
		}
		masks = append(masks, v)
	}
	want := []string{"ghs_evidencetoken123", "MHcCAQEEIAbc", "xyz0123", "ico-abcdef", "hunter22"}
	if diff := cmp.Diff(want, masks); diff != "" {
		t.Errorf("masks (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr.String(), "CONFIG_INVALID") {
		t.Errorf("stderr does not explain the stop: %s", stderr.String())
	}

	// Outside a runner nothing is masked: there is no log to protect.
	delete(vars, "GITHUB_ACTIONS")
	stdout.Reset()
	_ = run(t.Context(), Env{Args: []string{"validate", "--dir", dir}, Getenv: func(k string) string { return vars[k] }, Stdout: &stdout, Stderr: &stderr})
	if strings.Contains(stdout.String(), "::add-mask::") {
		t.Errorf("masks printed outside a runner:\n%s", stdout.String())
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		err  error
		want int
	}{
		{nil, ExitPass},
		{verdict("pass", ""), ExitPass},
		{verdict("fail", "POLICY_CRITICAL_FAIL"), ExitFail},
		{verdict("awaiting_approval", "APPROVAL_REQUIRED"), ExitAwaitingApproval},
		{verdict("error", "TERRAFORM_INIT_FAILED"), ExitError},
		{verdict("no-such-verdict", ""), ExitError},
		{errUsage, ExitError},
		{errNoCommand, ExitError},
	}
	for _, tt := range tests {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
