package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
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

// TestRunURL: a status's and a comment's link to the run is the address
// the forge's web UI serves: GitHub's run id; on Gitea the run's index in
// its repository (GITHUB_RUN_NUMBER), never the instance-wide id
// GITHUB_RUN_ID carries there (runner/gitea's TestRunLinksOnGitea shows
// both on the real server).
func TestRunURL(t *testing.T) {
	tests := []struct {
		name  string
		forge Forge
		vars  map[string]string
		want  string
	}{
		{"GitHub", GitHub, map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo-org/infra", "GITHUB_RUN_ID": "9876543210", "GITHUB_RUN_NUMBER": "17"},
			"https://github.com/octo-org/infra/actions/runs/9876543210"},
		{"Gitea", Gitea, map[string]string{"GITHUB_SERVER_URL": "https://gitea.example/", "GITHUB_REPOSITORY": "platform/infra", "GITHUB_RUN_ID": "57", "GITHUB_RUN_NUMBER": "3"},
			"https://gitea.example/platform/infra/actions/runs/3"},
		{"Gitea without a run number", Gitea, map[string]string{"GITHUB_SERVER_URL": "https://gitea.example", "GITHUB_REPOSITORY": "platform/infra", "GITHUB_RUN_ID": "57"}, ""},
		{"no run", GitHub, map[string]string{"GITHUB_SERVER_URL": "https://github.com", "GITHUB_REPOSITORY": "octo-org/infra"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc, err := readForgeConfig(tt.forge, func(k string) string { return tt.vars[k] })
			if err != nil {
				t.Fatal(err)
			}
			if got := runURL(tt.forge, fc); got != tt.want {
				t.Errorf("runURL = %q, want %q", got, tt.want)
			}
		})
	}
	if _, err := readForgeConfig(Gitea, func(k string) string { return map[string]string{"GITHUB_RUN_NUMBER": "three"}[k] }); runner.ReasonOf(err) != runner.ConfigInvalid {
		t.Errorf("a run number that is not one: %v, want %s", err, runner.ConfigInvalid)
	}
}
