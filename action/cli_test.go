package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/nova-platform/nova/runner"
)

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	home := t.TempDir()
	code := exitCode(run(t.Context(), Env{Args: args, Getenv: func(k string) string {
		if k == "HOME" {
			return home
		}
		return ""
	}, Stdout: &stdout, Stderr: &stderr}))
	return code, stdout.String(), stderr.String()
}

func TestCommandLine(t *testing.T) {
	valid := t.TempDir()
	writeFile(t, filepath.Join(valid, ".nova", "contract.yml"), helloContract("world", "dev"))
	invalid := t.TempDir()
	writeFile(t, filepath.Join(invalid, ".nova", "contract.yml"), "apiVersion: nova/v1\nid: 0c0ffee0-1111-4222-8333-444455556666\nstack: hello\nenviroment: dev\n")

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantStdout []string
		wantStderr []string
	}{
		{"version", []string{"version"}, ExitPass, []string{"nova dev"}, nil},
		{"help", []string{"help"}, ExitPass, []string{"nova validate", "Exit codes"}, nil},
		{"no command", nil, ExitError, nil, []string{"Usage:"}},
		{"unknown command", []string{"deploy"}, ExitError, nil, []string{`unknown command "deploy"`}},
		{"unknown flag", []string{"validate", "--frobnicate"}, ExitError, nil, []string{"flag provided but not defined"}},
		{"stray argument", []string{"validate", "extra"}, ExitError, nil, []string{`unexpected argument "extra"`}},
		{"bad env", []string{"validate", "--env", "staging"}, ExitError, nil, []string{string(runner.ConfigInvalid), "--env"}},
		{"bad output", []string{"validate", "--output", "xml"}, ExitError, nil, []string{string(runner.ConfigInvalid)}},
		{"bad state dir", []string{"plan", "--dir", valid, "--state-dir", "/dev/null/state"}, ExitError, nil, []string{string(runner.ConfigInvalid), "--state-dir"}},
		{"valid contract", []string{"validate", "--dir", valid}, ExitPass, []string{"schema pass", "result: pass (exit 0)"}, nil},
		{"invalid contract", []string{"validate", "--dir", invalid}, ExitFail,
			[]string{"schema fail", string(runner.ContractUnknownField), `.nova/contract.yml:4:1`, `did you mean "environment"`, "result: fail (exit 1)"}, nil},
		{"env override adds requirements", []string{"validate", "--dir", invalid, "--env", "prod"}, ExitFail, []string{string(runner.ContractUnknownField)}, nil},
		{"explain", []string{"explain", "--dir", valid}, ExitPass, []string{"confidence pass", "confidence (pre-plan):", "provenance", "pass (≥ 0.500)"}, nil},
		{"explain below the prod threshold", []string{"explain", "--dir", valid, "--env", "prod"}, ExitFail, []string{string(runner.ConfidenceInputMissing)}, nil},
		{"policy is dispatched", []string{"policy", "--dir", valid}, ExitPass, []string{"nova.secrets.plaintext"}, nil},
		{"missing contract", []string{"validate", "--dir", t.TempDir()}, ExitError, []string{string(runner.ContractNotFound), "result: error (exit 2)"}, nil},
		{"missing registry", []string{"validate", "--dir", valid, "--registry", filepath.Join(t.TempDir(), "nope")}, ExitError, []string{string(runner.ConfigInvalid)}, nil},
		{"missing terraform", []string{"plan", "--dir", valid, "--terraform", filepath.Join(t.TempDir(), "terraform")}, ExitError, []string{"setup error", string(runner.TerraformNotFound), "events:"}, nil},
		{"missing tofu", []string{"plan", "--dir", valid, "--tofu", filepath.Join(t.TempDir(), "tofu")}, ExitError, []string{"setup error", string(runner.TerraformNotFound), "--tofu"}, nil},
		{"bad engine", []string{"validate", "--dir", valid, "--engine", "pulumi"}, ExitError, nil, []string{string(runner.ConfigInvalid), "--engine"}},
		{"engine override", []string{"validate", "--dir", valid, "--engine", "opentofu"}, ExitPass, []string{"schema pass"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := runCLI(t, tt.args...)
			if code != tt.wantCode {
				t.Errorf("exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, stdout, stderr)
			}
			// Column widths are presentation; compare words.
			words := strings.Join(strings.Fields(stdout), " ")
			for _, w := range tt.wantStdout {
				if !strings.Contains(words, w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout)
				}
			}
			for _, w := range tt.wantStderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
		})
	}
}

func TestActionOutputs(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	outFile := filepath.Join(t.TempDir(), "output")
	summaryFile := filepath.Join(t.TempDir(), "summary")
	env := map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_OUTPUT": outFile, "GITHUB_STEP_SUMMARY": summaryFile, "HOME": t.TempDir()}
	var stdout, stderr bytes.Buffer
	code := exitCode(run(t.Context(), Env{Args: []string{"validate", "--dir", dir}, Getenv: func(k string) string { return env[k] }, Stdout: &stdout, Stderr: &stderr}))
	if code != ExitPass {
		t.Fatalf("exit %d: %s %s", code, stdout.String(), stderr.String())
	}
	out, _ := os.ReadFile(outFile)
	for _, w := range []string{"verdict<<", "pass", "exit-code<<", "run-id<<"} {
		if !strings.Contains(string(out), w) {
			t.Errorf("GITHUB_OUTPUT lacks %q:\n%s", w, out)
		}
	}
	summary, _ := os.ReadFile(summaryFile)
	if !strings.Contains(string(summary), "| schema | pass |") {
		t.Errorf("step summary lacks the stage table:\n%s", summary)
	}
}

func writeFile(t testing.TB, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestTerraformDoesNotSeeNovaSecrets(t *testing.T) {
	cfg, err := readConfig(Env{
		Args:    []string{"plan", "--dir", t.TempDir(), "--state-dir", t.TempDir(), "--commit", "c"},
		Getenv:  func(k string) string { return map[string]string{"HOME": t.TempDir()}[k] },
		Environ: []string{"NOVA_SIGNING_KEY=pem", "NOVA_EVIDENCE_TOKEN=tok", "COSIGN_PASSWORD=pw", "AWS_REGION=eu-west-1", "PATH=/bin"},
		Stderr:  &bytes.Buffer{},
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"NOVA_SIGNING_KEY", "NOVA_EVIDENCE_TOKEN", "COSIGN_PASSWORD"} {
		if _, ok := cfg.TerraformEnv[k]; ok {
			t.Errorf("terraform would see %s", k)
		}
	}
	if cfg.TerraformEnv["AWS_REGION"] != "eu-west-1" || cfg.TerraformEnv["PATH"] != "/bin" {
		t.Errorf("terraform lost the cloud's environment: %v", cfg.TerraformEnv)
	}
}

// TestTheCommitMustBeTheCheckedOutOne: a plan is bound to a commit, so the
// commit given must be what --dir holds — HEAD, or an ancestor the forge's
// event names (a pull request's head under its merge commit).
func TestTheCommitMustBeTheCheckedOutOne(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".nova", "contract.yml"), helloContract("world", "dev"))
	repo, err := git.PlainInit(dir, false)
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	commit := func(msg string) string {
		if err := wt.AddGlob("."); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(msg, &git.CommitOptions{AllowEmptyCommits: true, Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return h.String()
	}
	parent := commit("first")
	head := commit("second")
	event := filepath.Join(t.TempDir(), "event.json")
	writeFile(t, event, `{"pull_request":{"head":{"sha":"`+parent+`"}}}`)
	tests := []struct {
		name string
		args []string
		vars map[string]string
		want runner.Reason
	}{
		{"HEAD by default", nil, nil, ""},
		{"HEAD given", []string{"--commit", head}, nil, ""},
		{"an ancestor nobody named", []string{"--commit", parent}, nil, runner.CommitMismatch},
		{"an ancestor the pull request names", []string{"--commit", parent}, map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_EVENT_PATH": event}, ""},
		{"a commit from elsewhere", []string{"--commit", "0123456789012345678901234567890123456789"}, nil, runner.CommitMismatch},
		{"from the environment", nil, map[string]string{"NOVA_COMMIT": "0123456789012345678901234567890123456789"}, runner.CommitMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vars := map[string]string{"HOME": t.TempDir()}
			for k, v := range tt.vars {
				vars[k] = v
			}
			_, err := readConfig(Env{Args: append([]string{"plan", "--dir", dir}, tt.args...), Getenv: func(k string) string { return vars[k] }, Stderr: &bytes.Buffer{}})
			if runner.ReasonOf(err) != tt.want && !(tt.want == "" && err == nil) {
				t.Errorf("readConfig: %v, want %s", err, tt.want)
			}
		})
	}
}
