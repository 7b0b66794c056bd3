package main

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rhysd/actionlint"

	"github.com/nova-platform/nova/runner"
)

const testRelease = "--nova-url=https://nova.example.com/nova-linux-amd64"
const testSHA = "--nova-sha256=e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// TestInitGiteaThenRun: the scaffold of `nova init` is a contract nova
// runs in dev as it is, and a Gitea workflow for it at the repository's
// root.
func TestInitGiteaThenRun(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	app := filepath.Join(repo, "infra", "app")
	code, stdout, stderr := runCLI(t, "init", "--forge", "gitea", "--dir", app, testRelease, testSHA)
	if code != ExitPass {
		t.Fatalf("init: exit %d\n%s%s", code, stdout, stderr)
	}
	for _, want := range []string{"Next:", "1. nova run", "2. list who approves", "3. set the variable NOVA_EVIDENCE_REPO"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init's output lacks %q:\n%s", want, stdout)
		}
	}
	wf, err := os.ReadFile(filepath.Join(repo, ".gitea", "workflows", "nova-app.yml"))
	if err != nil {
		t.Fatalf("no workflow at the repository root: %v", err)
	}
	for _, want := range []string{`NOVA_DIR: "infra/app"`, `sha256sum -c -`, `e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855`} {
		if !strings.Contains(string(wf), want) {
			t.Errorf("the workflow lacks %q", want)
		}
	}
	ignore, _ := os.ReadFile(filepath.Join(app, ".gitignore"))
	if !strings.Contains(string(ignore), ".nova/runs/\n") {
		t.Errorf(".gitignore lacks .nova/runs/:\n%s", ignore)
	}

	mustLookPath(t)
	code, stdout, stderr = runCLI(t, "run", "--dir", app, "--state-dir", t.TempDir())
	if code != ExitPass {
		t.Fatalf("nova run on the scaffold: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "validate", "--dir", app, "--env", "qa")
	if code != ExitFail || !strings.Contains(stdout, "validation") {
		t.Errorf("the scaffold should need qa's fields filled in before qa: exit %d\n%s%s", code, stdout, stderr)
	}
}

func TestInitNeverOverwritesWithoutForce(t *testing.T) {
	dir := t.TempDir()
	contract := filepath.Join(dir, ".nova", "contract.yml")
	writeFile(t, contract, "mine\n")
	writeFile(t, filepath.Join(dir, ".gitignore"), "/bin")
	code, _, stderr := runCLI(t, "init", "--forge", "github", "--dir", dir)
	if code != ExitError || !strings.Contains(stderr, "--force") {
		t.Errorf("init over an existing contract: exit %d, %s", code, stderr)
	}
	if data, _ := os.ReadFile(contract); string(data) != "mine\n" {
		t.Errorf("the contract was overwritten: %q", data)
	}
	for _, p := range []string{filepath.Join(dir, ".nova", "approvers.yml"), filepath.Join(dir, ".github")} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("a refused init wrote %s", p)
		}
	}
	for range 2 {
		if code, _, stderr := runCLI(t, "init", "--forge", "github", "--dir", dir, "--force"); code != ExitPass {
			t.Fatalf("init --force: exit %d, %s", code, stderr)
		}
	}
	if data, _ := os.ReadFile(contract); !strings.Contains(string(data), "stack: hello") {
		t.Errorf("--force did not write the contract:\n%s", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, ".gitignore")); string(data) != "/bin\n.nova/runs/\n" {
		t.Errorf(".gitignore = %q, want the old line and one new one", data)
	}
}

// TestInitGitHubWorkflows: `nova init --forge github` writes the
// workflow and the relay of reviews it runs on, both actionlint-clean,
// and `nova validate` finds no job in them that hands Nova's secrets to a
// run a branch pusher shapes. The same check on a workflow that runs on
// pull_request shows it would.
func TestInitGitHubWorkflows(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(repo, "svc")
	code, stdout, stderr := runCLI(t, "init", "--forge", "github", "--dir", dir, "--name", "svc")
	if code != ExitPass {
		t.Fatalf("init: exit %d, %s", code, stderr)
	}
	for _, want := range []string{"Environments nova, qa, prod and dr", "merge the workflows to the default branch"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("init's output lacks %q:\n%s", want, stdout)
		}
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, name := range []string{"nova-svc.yml", "nova-svc-review.yml"} {
		path := filepath.Join(repo, ".github", "workflows", name)
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("init wrote no %s: %v", name, err)
		}
		files[name] = string(data)
		errs, err := l.Lint(path, data, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range errs {
			t.Error(e)
		}
	}
	for _, want := range []string{"pull_request_target:", "issue_comment:", "workflow_run:", `- "nova svc review"`, "environment: prod", "environment: nova", "uses: nova-platform/nova@"} {
		if !strings.Contains(files["nova-svc.yml"], want) {
			t.Errorf("nova-svc.yml lacks %q", want)
		}
	}
	relay := files["nova-svc-review.yml"]
	if !strings.Contains(relay, `name: "nova svc review"`) || !strings.Contains(relay, "pull_request_review:") || strings.Contains(relay, "secrets.") {
		t.Errorf("nova-svc-review.yml is not a secretless relay of reviews named as nova-svc.yml expects:\n%s", relay)
	}

	validate := func() string {
		code, stdout, stderr := runCLI(t, "validate", "--dir", dir)
		if code != ExitPass {
			t.Fatalf("validate: exit %d\n%s%s", code, stdout, stderr)
		}
		return stdout + stderr
	}
	if out := validate(); strings.Contains(out, string(runner.WorkflowSecretsExposed)) {
		t.Errorf("validate warns about the scaffold's own workflows:\n%s", out)
	}
	exposed := strings.Replace(files["nova-svc.yml"], "  pull_request_target:\n", "  pull_request:\n", 1)
	writeFile(t, filepath.Join(repo, ".github", "workflows", "nova-svc.yml"), exposed)
	if out := validate(); !strings.Contains(out, string(runner.WorkflowSecretsExposed)+" .github/workflows/nova-svc.yml") {
		t.Errorf("validate does not warn once the workflow runs on pull_request:\n%s", out)
	}
}

func TestInitRefusesBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"init"},
		{"init", "--forge", "gitlab"},
		{"init", "--forge", "github", "--stack", "nope"},
		{"init", "--forge", "github", "--name", "Has Spaces"},
		{"init", "--forge", "gitea", "--nova-url", "https://x/nova"},
	} {
		dir := t.TempDir()
		code, _, stderr := runCLI(t, append(args, "--dir", dir)...)
		if code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
			t.Errorf("%v: exit %d, %s", args, code, stderr)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("%v wrote %d entries", args, len(entries))
		}
	}
}
