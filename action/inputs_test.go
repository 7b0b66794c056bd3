package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// actionEnv is what a runner hands the container action: the forge's
// variables and every input, defaults included.
func actionEnv(t *testing.T, inputs map[string]string) map[string]string {
	env := map[string]string{"GITHUB_ACTIONS": "true", "HOME": t.TempDir(), "NOVA_STATE_DIR": t.TempDir()}
	for _, in := range actionInputs {
		env[inputVariable(in.Name)] = in.Default
	}
	for k, v := range inputs {
		env[inputVariable(k)] = v
	}
	return env
}

func readActionConfig(t *testing.T, env map[string]string) (Config, error) {
	t.Helper()
	var environ []string
	for k, v := range env {
		environ = append(environ, k+"="+v)
	}
	return readConfig(Env{Getenv: func(k string) string { return env[k] }, Environ: environ, Stdout: &bytes.Buffer{}, Stderr: &bytes.Buffer{}})
}

func TestActionInputsBecomeFlagsAndVariables(t *testing.T) {
	dir := t.TempDir()
	env := actionEnv(t, map[string]string{
		"command":        "apply",
		"dir":            dir,
		"environment":    "prod",
		"digest":         "sha256:abc",
		"backend-config": "bucket=state\n\n  key=svc.tfstate  \n",
		"signing-key":    "-----BEGIN KEY-----\nc2VjcmV0LWtleS1saW5l\n-----END KEY-----",
		"github-token":   "ghs_runnertoken",
		"gitea-token":    "gitea_token_value",
		"evidence-token": "evidence_token_value",
	})
	env["NOVA_SIGNING_KEY"] = "the environment's key, which the input overrides"
	env["NOVA_STATE_PASSPHRASE"] = "state passphrase value"
	cfg, err := readActionConfig(t, env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Command != "apply" || cfg.Dir != dir || cfg.EnvOverride != runner.Prod || cfg.ExpectDigest != "sha256:abc" {
		t.Errorf("flags: command %q dir %q env %q digest %q", cfg.Command, cfg.Dir, cfg.EnvOverride, cfg.ExpectDigest)
	}
	if diff := cmp.Diff([]string{"bucket=state", "key=svc.tfstate"}, cfg.BackendConfig); diff != "" {
		t.Errorf("backend-config lines (-want +got):\n%s", diff)
	}
	if cfg.ContractPath != ".nova/contract.yml" || cfg.ApproversPath != runner.ApproversFile || cfg.Output != "text" {
		t.Errorf("defaults lost: contract %q approvers %q output %q", cfg.ContractPath, cfg.ApproversPath, cfg.Output)
	}
	if cfg.Evidence.Keys.SigningKeyPEM != env["INPUT_SIGNING-KEY"] {
		t.Errorf("signing-key input did not become the signing key: %q", cfg.Evidence.Keys.SigningKeyPEM)
	}
	if cfg.Evidence.Creds.Password != "evidence_token_value" {
		t.Errorf("evidence-token input did not become the evidence credentials")
	}
	if cfg.ForgeAPI.Token != "gitea_token_value" {
		t.Errorf("forge token = %q, want gitea-token's, which wins over github-token's default", cfg.ForgeAPI.Token)
	}
	if cfg.StatePassphrase != "state passphrase value" {
		t.Errorf("the state passphrase is %q", cfg.StatePassphrase)
	}
	for _, want := range []string{"c2VjcmV0LWtleS1saW5l", "ghs_runnertoken", "gitea_token_value", "evidence_token_value", "state passphrase value"} {
		if !slices.Contains(cfg.Secrets, want) {
			t.Errorf("secret %q is not masked", want)
		}
	}
	for k := range cfg.TerraformEnv {
		if strings.HasPrefix(k, "INPUT_") || k == "NOVA_STATE_PASSPHRASE" {
			t.Errorf("terraform would see %s", k)
		}
	}
}

func TestActionInputsTheCommandDoesNotTake(t *testing.T) {
	// Every input at its default: whatever a command has no flag for is
	// left out.
	for _, cmd := range actionCommands {
		inputs := map[string]string{"command": cmd, "dir": t.TempDir(), "environment": "qa"}
		switch cmd {
		case "verify":
			inputs = map[string]string{"command": cmd}
		case "summary":
			// It reads results files, no checkout.
			inputs = map[string]string{"command": cmd, "from": t.TempDir()}
		case "matrix":
			delete(inputs, "environment")
		}
		if _, err := readActionConfig(t, actionEnv(t, inputs)); err != nil && strings.Contains(err.Error(), "does not apply") {
			t.Errorf("command %s with default inputs: %v", cmd, err)
		}
	}
	for _, tc := range []struct{ command, input, value string }{
		{"plan", "bundle", "bundle-dir"},
		{"validate", "digest", "sha256:abc"},
		{"policy", "approvers", "other.yml"},
		{"validate", "report-file", "nova.sarif"},
	} {
		_, err := readActionConfig(t, actionEnv(t, map[string]string{"command": tc.command, "dir": t.TempDir(), tc.input: tc.value}))
		if runner.ReasonOf(err) != runner.ConfigInvalid || !strings.Contains(err.Error(), tc.input) {
			t.Errorf("command %s with input %s set: err = %v, want CONFIG_INVALID naming the input", tc.command, tc.input, err)
		}
	}
	cfg, err := readActionConfig(t, actionEnv(t, map[string]string{"command": "plan", "dir": t.TempDir(), "select": "changed", "parallel": "4", "head": "abc"}))
	if err != nil || !cfg.Select.Changed || cfg.Select.Parallel != 4 || cfg.Select.Head != "abc" {
		t.Errorf("select changed: %+v, %v", cfg.Select, err)
	}
	if _, err := readActionConfig(t, actionEnv(t, map[string]string{"command": "plan", "dir": t.TempDir(), "select": "everything"})); runner.ReasonOf(err) != runner.ConfigInvalid {
		t.Errorf("select everything: err = %v, want CONFIG_INVALID", err)
	}
	_, err = readActionConfig(t, actionEnv(t, map[string]string{"command": "destroy"}))
	if runner.ReasonOf(err) != runner.ConfigInvalid {
		t.Errorf("unknown command input: err = %v, want CONFIG_INVALID", err)
	}
}

// TestActionMetadataIsGenerated keeps action.yml's inputs and outputs and
// docs/action.md what the input table says.
func TestActionMetadataIsGenerated(t *testing.T) {
	path := filepath.Join("..", "action.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	head, rest, ok := strings.Cut(string(data), "\ninputs:\n")
	_, tail, ok2 := strings.Cut(rest, "\nruns:\n")
	if !ok || !ok2 {
		t.Fatalf("action.yml has no inputs: … runs: sections")
	}
	want := head + "\n" + actionYAMLInputs() + "\nruns:\n" + tail
	generated(t, path, want)
	generated(t, filepath.Join("..", "docs", "action.md"), actionMarkdown())
}

// generated compares a generated file with what is committed; -update
// rewrites it.
func generated(t *testing.T, path, want string) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v; create it with: go test ./action -run %s -update", err, t.Name())
	}
	if diff := cmp.Diff(want, string(got)); diff != "" {
		t.Errorf("%s is stale (-want +got):\n%s\nregenerate it with: make docs", path, diff)
	}
}

// TestActionAnnotationsAreRelativeToTheRepository: GitHub resolves an
// annotation's file from the repository root, so with dir: infra/app a
// path relative to dir would attach to nothing. Schema findings, which
// carry file:line:col, become annotations too.
func TestActionAnnotationsAreRelativeToTheRepository(t *testing.T) {
	ws := t.TempDir()
	app := filepath.Join(ws, "infra", "app")
	writeFile(t, filepath.Join(app, ".nova", "contract.yml"), strings.Replace(helloContract("world", "dev"), "stack: hello", "stack: hello\nflavour: extra", 1))
	env := actionEnv(t, map[string]string{"command": "validate", "dir": "infra/app"})
	env["GITHUB_WORKSPACE"] = ws
	env["GITHUB_OUTPUT"] = filepath.Join(t.TempDir(), "output")
	var stdout, stderr bytes.Buffer
	t.Chdir(ws)
	code := exitCode(run(t.Context(), Env{Getenv: func(k string) string { return env[k] }, Stdout: &stdout, Stderr: &stderr}))
	if code != ExitFail {
		t.Fatalf("exit %d, want 1\n%s%s", code, stdout.String(), stderr.String())
	}
	want := "::error file=infra/app/.nova/contract.yml,line=4,col=1,title=" + string(runner.ContractUnknownField) + " (schema)::"
	if !strings.Contains(stdout.String(), want) {
		t.Errorf("no annotation on the contract's unknown field; want a line starting %q in:\n%s", want, stdout.String())
	}
}

func TestOutputPathsAreWorkspaceRelative(t *testing.T) {
	r := &reporter{cfg: Config{Workspace: "/github/workspace", WorkDir: "/elsewhere"}}
	for in, want := range map[string]string{
		"/github/workspace/infra/.nova/runs/r1/bundle": "infra/.nova/runs/r1/bundle",
		"/github/workspace":                            ".",
		"/github/workspace-other/x":                    "/github/workspace-other/x",
		"/tmp/bundle":                                  "/tmp/bundle",
		"relative/already":                             "relative/already",
		"":                                             "",
	} {
		if got := r.workspacePath(in); got != want {
			t.Errorf("workspacePath(%q) = %q, want %q", in, got, want)
		}
	}
}
