package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/rhysd/actionlint"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/templates"
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
	for _, want := range []string{"Next:", "1. nova run", "2. list who approves", "3. set the variable NOVA_EVIDENCE_REPO",
		"nova in the workflow: the Gitea workflow fetches nova from https://nova.example.com/nova-linux-amd64", "to build nova from source instead"} {
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
	rollback, err := os.ReadFile(filepath.Join(repo, ".gitea", "workflows", "nova-app-rollback.yml"))
	if err != nil || !strings.Contains(string(rollback), "platform/nova rollback") || !strings.Contains(string(rollback), `NOVA_DIR: "infra/app"`) {
		t.Errorf("no rollback workflow beside it (%v):\n%s", err, rollback)
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
	for _, name := range []string{"nova-svc.yml", "nova-svc-review.yml", "nova-svc-rollback.yml"} {
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
	if rollback := files["nova-svc-rollback.yml"]; !strings.Contains(rollback, "workflow_dispatch:") || !strings.Contains(rollback, "command: rollback") {
		t.Errorf("nova-svc-rollback.yml does not offer the rollback as a dispatch:\n%s", rollback)
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

// TestGiteaBinaryDefaultsToTheRelease: a release of nova scaffolds a Gitea
// workflow that fetches that release's binary, pinned by the sha256 its
// SHA256SUMS lists, so the runner needs no Go; building from source stays
// a flag away, and a nova that has no release says so and builds.
func TestGiteaBinaryDefaultsToTheRelease(t *testing.T) {
	const (
		sum    = "9b74c9897bac770ffc029102a200c5de2bd1a0c1e3e47b5b2e7d4b2a1c2f7a11"
		commit = "0123456789abcdef0123456789abcdef01234567"
	)
	releases := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1.4.0/SHA256SUMS" {
			http.NotFound(w, r)
			return
		}
		fmt.Fprintf(w, "%s  nova_v1.4.0_darwin_arm64\n%s *nova_v1.4.0_linux_amd64\n", strings.Repeat("a", 64), sum)
	}))
	t.Cleanup(releases.Close)

	tests := []struct {
		name    string
		flags   InitFlags
		version string
		// builtFrom is the commit the nova running init was built from.
		builtFrom string
		want      templates.Binary
		says      []string
		reason    runner.Reason
	}{
		{
			name: "a release", version: "v1.4.0", builtFrom: commit, flags: InitFlags{NovaReleases: releases.URL},
			want: templates.Binary{Version: "v1.4.0", ReleaseURL: releases.URL + "/v1.4.0/nova_v1.4.0_linux_amd64", SHA256: sum, Source: novaSource, Commit: commit},
			says: []string{"fetches nova v1.4.0's release binary", sum, "to build nova from source instead", "--nova-commit " + commit},
		},
		{
			name: "a release asked to build from source", version: "v1.4.0", builtFrom: commit, flags: InitFlags{NovaReleases: releases.URL, NovaSource: "https://gitea.example/mirrors/nova.git"},
			want: templates.Binary{Version: "v1.4.0", Source: "https://gitea.example/mirrors/nova.git", Commit: commit},
			says: []string{"builds nova from source", commit, "needs Go"},
		},
		{
			name: "a release never published", version: "v1.5.0", builtFrom: commit, flags: InitFlags{NovaReleases: releases.URL},
			want: templates.Binary{Version: "v1.5.0", Source: novaSource, Commit: commit},
			says: []string{"no release binary of nova v1.5.0 could be read", "404", "builds nova from source", "needs Go", "--nova-url and --nova-sha256"},
		},
		{
			name: "a development build", version: "dev", builtFrom: commit, flags: InitFlags{NovaReleases: releases.URL},
			want: templates.Binary{Version: "dev", Source: novaSource, Commit: commit},
			says: []string{"development build (dev), not a release", "builds nova from source", "--nova-url and --nova-sha256"},
		},
		{
			name: "a development build that does not know its commit", version: "dev", flags: InitFlags{NovaReleases: releases.URL},
			reason: runner.ConfigInvalid,
			says:   []string{"development build (dev), not a release", "--nova-commit", "--nova-url and --nova-sha256"},
		},
		{
			name: "a binary given", version: "dev", flags: InitFlags{NovaURL: "https://mirror.example/nova", NovaSHA256: sum},
			want: templates.Binary{Version: "dev", ReleaseURL: "https://mirror.example/nova", SHA256: sum, Source: novaSource},
			says: []string{"fetches nova from https://mirror.example/nova"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, note, err := giteaBinary(t.Context(), tt.flags, tt.version, tt.builtFrom)
			text := note
			if err != nil {
				text = err.Error()
			}
			if runner.ReasonOf(err) != tt.reason && (err != nil || tt.reason != "") {
				t.Fatalf("error %v, want reason %q", err, tt.reason)
			}
			if err == nil {
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("binary (-want +got):\n%s", diff)
				}
				out, err := templates.RenderWorkflow(templates.GiteaWorkflow, templates.Workflow{Name: "app", Key: "app-1", Dir: ".", Contract: ".nova/contract.yml",
					Environments: []string{"dev"}, EvidenceRepo: "x", Nova: got, DefaultBranch: "main"})
				if err != nil {
					t.Fatal(err)
				}
				// A runner without Go runs the binary's workflow.
				if binary := got.ReleaseURL != ""; binary == strings.Contains(string(out), "go build") {
					t.Errorf("binary %v, and the workflow builds with go: %v", binary, !binary)
				}
			}
			for _, s := range tt.says {
				if !strings.Contains(text, s) {
					t.Errorf("%q does not say %q", text, s)
				}
			}
		})
	}
}

// TestInitApplyOnMerge: `nova init --apply-on merge` adds the merge
// workflow beside each forge's own, and the pull request's workflow holds
// guarded environments for it; another value is refused.
func TestInitApplyOnMerge(t *testing.T) {
	for _, tt := range []struct{ forge, dir, hold string }{
		{"github", ".github", "merge: until-merge"},
		{"gitea", ".gitea", "merge=--until-merge"},
	} {
		t.Run(tt.forge, func(t *testing.T) {
			repo := t.TempDir()
			if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
				t.Fatal(err)
			}
			args := []string{"init", "--forge", tt.forge, "--dir", repo, "--name", "svc", "--apply-on", "merge"}
			if tt.forge == "gitea" {
				args = append(args, "--nova-url", "https://example.com/nova", "--nova-sha256", strings.Repeat("ab", 32))
			}
			if code, _, stderr := runCLI(t, args...); code != ExitPass {
				t.Fatalf("init: exit %d, %s", code, stderr)
			}
			wf, err := os.ReadFile(filepath.Join(repo, tt.dir, "workflows", "nova-svc.yml"))
			if err != nil {
				t.Fatal(err)
			}
			merge, err := os.ReadFile(filepath.Join(repo, tt.dir, "workflows", "nova-svc-merge.yml"))
			if err != nil {
				t.Fatalf("init --apply-on merge wrote no merge workflow: %v", err)
			}
			if !strings.Contains(string(wf), tt.hold) || !strings.Contains(string(merge), "merge_commit_sha") {
				t.Errorf("the %s scaffold does not apply after merge:\n%s\n---\n%s", tt.forge, wf, merge)
			}
			// GitHub's merge queue has its check; Gitea has no merge queue.
			queue, err := os.ReadFile(filepath.Join(repo, tt.dir, "workflows", "nova-svc-queue.yml"))
			if tt.forge == "github" && (err != nil || !strings.Contains(string(queue), "merge: merge-queue")) {
				t.Errorf("init --apply-on merge wrote no merge queue check for GitHub (%v):\n%s", err, queue)
			}
			if tt.forge == "gitea" && !os.IsNotExist(err) {
				t.Errorf("init --apply-on merge wrote a merge queue check for Gitea (%v)", err)
			}
		})
	}
	repo := t.TempDir()
	if code, _, _ := runCLI(t, "init", "--forge", "github", "--dir", repo, "--apply-on", "push"); code != ExitError {
		t.Errorf("--apply-on push: exit %d, want %d", code, ExitError)
	}
	if _, err := os.Stat(filepath.Join(repo, ".github", "workflows")); !os.IsNotExist(err) {
		t.Errorf("a refused init wrote workflows (%v)", err)
	}
}

// TestInitFanout: `nova init --fanout` writes the one fan-out workflow of
// the repository's contracts and nothing else: on GitHub a caller of the
// reusable fan-out with the jobs' bound, actionlint-clean; on Gitea the
// fan-out inline in that many fixed jobs (8 unless told), nova fetched
// pinned. It refuses what only one contract's workflows have.
func TestInitFanout(t *testing.T) {
	repo := t.TempDir()
	if err := os.Mkdir(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	if code, _, stderr := runCLI(t, "init", "--forge", "github", "--fanout", "--max-jobs", "64", "--dir", repo); code != ExitPass {
		t.Fatalf("init --fanout: exit %d, %s", code, stderr)
	}
	path := filepath.Join(repo, ".github", "workflows", "nova-fanout.yml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), "/.github/workflows/fanout.yml@") || !strings.Contains(string(data), "max-jobs: 64") {
		t.Errorf("the GitHub fan-out does not call the reusable one with max-jobs 64:\n%s", data)
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
	if entries, _ := os.ReadDir(repo); len(entries) != 2 {
		t.Errorf("init --fanout wrote %d entries at the root, want .github alone (beside .git)", len(entries)-1)
	}

	sum := strings.Repeat("ab", 32)
	if code, _, stderr := runCLI(t, "init", "--forge", "gitea", "--fanout", "--dir", repo, "--nova-url", "https://releases.example/nova", "--nova-sha256", sum); code != ExitPass {
		t.Fatalf("init --forge gitea --fanout: exit %d, %s", code, stderr)
	}
	gitea, err := os.ReadFile(filepath.Join(repo, ".gitea", "workflows", "nova-fanout.yml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"job: [1,2,3,4,5,6,7,8]", "--max-jobs 8", sum, "nova summary --statuses"} {
		if !strings.Contains(string(gitea), want) {
			t.Errorf("the Gitea fan-out lacks %q:\n%s", want, gitea)
		}
	}

	for _, args := range [][]string{
		{"--forge", "github", "--max-jobs", "3"},
		{"--forge", "github", "--fanout", "--max-jobs", "257"},
		{"--forge", "github", "--fanout", "--keyless"},
		{"--forge", "github", "--fanout", "--apply-on", "merge"},
	} {
		dir := t.TempDir()
		code, _, stderr := runCLI(t, append(append([]string{"init"}, args...), "--dir", dir)...)
		if code != ExitError || !strings.Contains(stderr, string(runner.ConfigInvalid)) {
			t.Errorf("init %v: exit %d, %s", args, code, stderr)
		}
	}
}
