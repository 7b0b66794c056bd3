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

func TestInitGitHubWorkflowPassesActionlint(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "init", "--forge", "github", "--dir", dir, "--name", "svc"); code != ExitPass {
		t.Fatalf("init: exit %d, %s", code, stderr)
	}
	path := filepath.Join(dir, ".github", "workflows", "nova-svc.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := actionlint.NewLinter(io.Discard, &actionlint.LinterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	errs, err := l.Lint(path, data, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range errs {
		t.Error(e)
	}
	if !strings.Contains(string(data), "environment: prod") || !strings.Contains(string(data), "uses: nova-platform/nova@") {
		t.Errorf("not a Nova workflow:\n%s", data)
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

// TestScaffoldedApproversShowTeamsAndKeys: the approver config `nova init`
// writes parses, shows where teams and keys go, and its team example,
// uncommented, is what the parser accepts.
func TestScaffoldedApproversShowTeamsAndKeys(t *testing.T) {
	dir := t.TempDir()
	if code, _, stderr := runCLI(t, "init", "--forge", "github", "--dir", dir); code != ExitPass {
		t.Fatalf("init: exit %d, %s", code, stderr)
	}
	data, err := os.ReadFile(filepath.Join(dir, runner.ApproversFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"# teams: [my-org/qa]", "keys:", "BEGIN PUBLIC KEY"} {
		if !strings.Contains(string(data), want) {
			t.Errorf("the scaffold's approver config lacks %q:\n%s", want, data)
		}
	}
	if _, err := runner.ParseApprovers(data); err != nil {
		t.Errorf("the scaffold's approver config does not parse: %v", err)
	}
	uncommented := strings.ReplaceAll(string(data), "# teams:", "teams:")
	cfg, err := runner.ParseApprovers([]byte(uncommented))
	if err != nil {
		t.Fatalf("the team example does not parse: %v\n%s", err, uncommented)
	}
	if got := cfg.Groups["qa"].Teams; len(got) != 1 || got[0] != "my-org/qa" {
		t.Errorf("qa's teams = %v", got)
	}
	if code, stdout, stderr := runCLI(t, "validate", "--dir", dir); code != ExitPass || !strings.Contains(stdout, "approvers") {
		t.Errorf("validate of the scaffold: exit %d\n%s%s", code, stdout, stderr)
	}
}
