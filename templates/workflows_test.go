package templates

import (
	"bytes"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
)

// TestWorkflowsMatchTheirSource keeps the GitHub and Gitea copies of Nova's
// own workflows byte-identical to workflows-src/.
func TestWorkflowsMatchTheirSource(t *testing.T) {
	sources, err := filepath.Glob("../workflows-src/*.yml")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no workflow sources found: %v", err)
	}
	for _, src := range sources {
		want, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		for _, dir := range []string{"../.github/workflows", "../.gitea/workflows"} {
			got, err := os.ReadFile(filepath.Join(dir, filepath.Base(src)))
			if err != nil || !bytes.Equal(got, want) {
				t.Errorf("%s/%s differs from %s (err %v): run `make workflows`", dir, filepath.Base(src), src, err)
			}
		}
	}
}

// TestDeployWorkflowIsRendered keeps workflows-src/deploy.yml what the job
// templates render; `make workflows` regenerates it.
func TestDeployWorkflowIsRendered(t *testing.T) {
	want, err := RenderWorkflow(DeployWorkflow, Deploy)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join("..", "workflows-src", "deploy.yml")
	if *update {
		if err := os.WriteFile(path, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("%s is not what templates/workflows renders (err %v): run `make workflows`", path, err)
	}
}

// sample is a consumer workflow as `nova init` renders it.
func sample() Workflow {
	return Workflow{
		Name: "app", Key: "app-3b0c6f5e", Dir: "infra/app", Contract: ".nova/contract.yml",
		Environments: []string{"dev", "qa", "prod", "dr"},
		EvidenceRepo: "${{ vars.NOVA_EVIDENCE_REPO }}",
		Action:       ActionRef{Repo: "nova-platform/nova", Tag: "v1.4.0", Commit: "0123456789abcdef0123456789abcdef01234567"},
		Nova: Binary{Version: "v1.4.0", ReleaseURL: "https://github.com/nova-platform/nova/releases/download/v1.4.0/nova-linux-amd64",
			SHA256: "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		DefaultBranch: "main",
	}
}

// TestWorkflowsPassActionlint lints every rendered template and every
// workflow in workflows-src with actionlint, as a user's editor or CI
// would.
func TestWorkflowsPassActionlint(t *testing.T) {
	built := sample()
	built.Nova = Binary{Version: "v1.4.0", Source: "https://github.com/nova-platform/nova.git", Commit: "0123456789abcdef0123456789abcdef01234567"}
	oidc := sample()
	oidc.OIDC, oidc.Dir = true, "."
	files := map[string][]byte{}
	for name, r := range map[string]struct {
		kind string
		w    Workflow
	}{
		"github.yml": {GitHubWorkflow, sample()}, "github-oidc.yml": {GitHubWorkflow, oidc},
		"gitea.yml": {GiteaWorkflow, sample()}, "gitea-build.yml": {GiteaWorkflow, built},
		"deploy.yml": {DeployWorkflow, Deploy},
	} {
		out, err := RenderWorkflow(r.kind, r.w)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		files["rendered/"+name] = out
	}
	sources, _ := filepath.Glob("../workflows-src/*.yml")
	for _, src := range sources {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		files[src] = data
	}
	inputs := novaInputs(t)
	for name, data := range files {
		if errs := append(lint(t, name, data), lintNovaSteps(t, data, inputs)...); len(errs) > 0 {
			t.Errorf("%s:\n%s\n--- rendered:\n%s", name, strings.Join(errs, "\n"), data)
		}
	}
}

func TestActionIsPinnedByCommitForProdAndDR(t *testing.T) {
	out, err := RenderWorkflow(GitHubWorkflow, sample())
	if err != nil {
		t.Fatal(err)
	}
	text := string(out)
	for _, env := range []string{"dev", "qa", "prod", "dr"} {
		want := "uses: nova-platform/nova@v1.4.0\n"
		if env == "prod" || env == "dr" {
			want = "uses: nova-platform/nova@0123456789abcdef0123456789abcdef01234567 # v1.4.0\n"
		}
		_, job, _ := strings.Cut(text, "\n  apply-"+env+":\n")
		job, _, _ = strings.Cut(job, "\n  plan-")
		if !strings.Contains(job, want) {
			t.Errorf("apply-%s does not use %q:\n%s", env, strings.TrimSpace(want), job)
		}
	}
}

func TestRenderWorkflowRefusesUnknownEnvironments(t *testing.T) {
	w := sample()
	w.Environments = []string{"dev", "staging"}
	if _, err := RenderWorkflow(GitHubWorkflow, w); err == nil {
		t.Error("rendered a workflow for environment staging")
	}
}

// TestQuotedValuesStayScalars renders workflows whose directory, contract
// path and release URL hold YAML's and Markdown's active characters: each
// must come back from a YAML parser as the one string it was, and the
// workflows must keep their jobs.
func TestQuotedValuesStayScalars(t *testing.T) {
	hostile := "dir: x\n  evil: \"y\" # z\n- [a, {b: c}] & *ref !!str '%s' |\\"
	type step struct {
		Uses string            `yaml:"uses"`
		With map[string]string `yaml:"with"`
		Env  map[string]string `yaml:"env"`
	}
	type workflow struct {
		Jobs map[string]struct {
			Steps []step `yaml:"steps"`
		} `yaml:"jobs"`
	}
	for _, kind := range []string{GitHubWorkflow, GiteaWorkflow} {
		plain, err := RenderWorkflow(kind, sample())
		if err != nil {
			t.Fatal(err)
		}
		w := sample()
		w.Dir, w.Contract, w.Nova.ReleaseURL = hostile, hostile+".yml", "https://example.com/"+hostile
		out, err := RenderWorkflow(kind, w)
		if err != nil {
			t.Fatal(err)
		}
		var want, got workflow
		if err := yaml.Unmarshal(plain, &want); err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(out, &got); err != nil {
			t.Fatalf("%s: %v\n%s", kind, err, out)
		}
		if diff := cmp.Diff(slices.Sorted(maps.Keys(want.Jobs)), slices.Sorted(maps.Keys(got.Jobs))); diff != "" {
			t.Errorf("%s: jobs (-want +got):\n%s", kind, diff)
		}
		checked := 0
		for name, j := range got.Jobs {
			if len(j.Steps) != len(want.Jobs[name].Steps) {
				t.Errorf("%s job %s: %d steps, want %d", kind, name, len(j.Steps), len(want.Jobs[name].Steps))
			}
			for _, s := range j.Steps {
				for _, v := range []struct{ name, got, want string }{
					{"with.dir", s.With["dir"], w.Dir}, {"with.contract", s.With["contract"], w.Contract},
					{"env.NOVA_DIR", s.Env["NOVA_DIR"], w.Dir}, {"env.NOVA_CONTRACT", s.Env["NOVA_CONTRACT"], w.Contract},
					{"env.NOVA_URL", s.Env["NOVA_URL"], w.Nova.ReleaseURL},
				} {
					if v.got == "" {
						continue
					}
					checked++
					if v.got != v.want {
						t.Errorf("%s job %s: %s is %q, want %q", kind, name, v.name, v.got, v.want)
					}
				}
			}
		}
		if checked == 0 {
			t.Errorf("%s: no quoted value found", kind)
		}
	}
}

// TestNovasCommentsStartNoRun: every job an event starts directly (one
// without needs) skips an issue_comment whose body starts with Nova's
// comment prefix, so the comments Nova posts and edits start nothing.
func TestNovasCommentsStartNoRun(t *testing.T) {
	skip := "!startsWith(github.event.comment.body, '" + runner.CommentPrefix + "')"
	for name, r := range map[string]struct {
		kind string
		w    Workflow
	}{"github": {GitHubWorkflow, sample()}, "gitea": {GiteaWorkflow, sample()}, "deploy": {DeployWorkflow, Deploy}} {
		out, err := RenderWorkflow(r.kind, r.w)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var wf struct {
			Jobs map[string]struct {
				If    string `yaml:"if"`
				Needs any    `yaml:"needs"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(out, &wf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		started := 0
		for id, job := range wf.Jobs {
			if job.Needs != nil {
				continue
			}
			started++
			if !strings.Contains(job.If, skip) {
				t.Errorf("%s: job %s runs for Nova's own comments: if: %s", name, id, job.If)
			}
		}
		if started == 0 {
			t.Errorf("%s: no job without needs", name)
		}
	}
}
