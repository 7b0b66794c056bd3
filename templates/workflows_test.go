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
	novaworkflows "github.com/nova-platform/nova/runner/workflows"
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

// TestDeployWorkflowIsRendered keeps workflows-src/deploy.yml,
// rollback.yml and fanout.yml what the job templates render; `make workflows`
// regenerates them.
func TestDeployWorkflowIsRendered(t *testing.T) {
	for kind, w := range map[string]Workflow{DeployWorkflow: Deploy, RollbackWorkflow: Deploy, FanoutWorkflow: Fanout} {
		want, err := RenderWorkflow(kind, w)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join("..", "workflows-src", kind+".yml")
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
	merge := sample()
	merge.ApplyOn = ApplyOnMerge
	keyless := sample()
	keyless.Keyless = true
	fanout := sample()
	fanout.MaxJobs = 3
	files := map[string][]byte{}
	for name, r := range map[string]struct {
		kind string
		w    Workflow
	}{
		"github.yml": {GitHubWorkflow, sample()}, "github-oidc.yml": {GitHubWorkflow, oidc}, "github-review.yml": {GitHubReviewWorkflow, sample()},
		"gitea.yml": {GiteaWorkflow, sample()}, "gitea-build.yml": {GiteaWorkflow, built},
		"github-rollback.yml": {GitHubRollbackWorkflow, sample()}, "github-rollback-oidc.yml": {GitHubRollbackWorkflow, oidc},
		"gitea-rollback.yml": {GiteaRollbackWorkflow, sample()}, "gitea-rollback-build.yml": {GiteaRollbackWorkflow, built},
		"deploy.yml": {DeployWorkflow, Deploy}, "fanout.yml": {FanoutWorkflow, Fanout},
		"github-keyless.yml": {GitHubWorkflow, keyless}, "github-rollback-keyless.yml": {GitHubRollbackWorkflow, keyless},
		"github-apply-on-merge.yml": {GitHubWorkflow, merge}, "github-merge.yml": {GitHubMergeWorkflow, merge}, "github-merge-oidc.yml": {GitHubMergeWorkflow, oidc},
		"gitea-apply-on-merge.yml": {GiteaWorkflow, merge}, "gitea-merge.yml": {GiteaMergeWorkflow, merge}, "gitea-merge-build.yml": {GiteaMergeWorkflow, built},
		"github-queue.yml":      {GitHubQueueWorkflow, merge},
		"github-breakglass.yml": {GitHubBreakGlassWorkflow, sample()}, "github-breakglass-keyless.yml": {GitHubBreakGlassWorkflow, keyless},
		"gitea-breakglass.yml": {GiteaBreakGlassWorkflow, sample()}, "gitea-breakglass-build.yml": {GiteaBreakGlassWorkflow, built},
		"github-fanout.yml": {GitHubFanoutWorkflow, fanout}, "gitea-fanout.yml": {GiteaFanoutWorkflow, fanout},
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

// TestGitHubWorkflowsKeepKeysFromPullRequests checks the design of the
// GitHub workflows (docs/security.md) on what they render: they run on
// events GitHub starts from the default branch's copy; every job that
// reads Nova's secrets has an environment; the pull request's head is
// checked out as data, without credentials, at the head the pull-request
// job found; no local action runs; an apply is skipped on its plan's
// receipt and the next environment takes the receipt as done; only the
// pull-request job looks at the event; the relay of reviews holds
// nothing; and `nova validate`'s exposure check finds nothing.
func TestGitHubWorkflowsKeepKeysFromPullRequests(t *testing.T) {
	type workflow struct {
		On          map[string]any         `yaml:"on"`
		Permissions map[string]any         `yaml:"permissions"`
		Jobs        map[string]workflowJob `yaml:"jobs"`
	}
	trusted := []string{"pull_request_target", "issue_comment", "workflow_run", "workflow_call"}
	for _, tt := range []struct {
		name, kind string
		w          Workflow
	}{
		{"github", GitHubWorkflow, sample()},
		{"deploy", DeployWorkflow, Deploy},
	} {
		t.Run(tt.name, func(t *testing.T) {
			out, err := RenderWorkflow(tt.kind, tt.w)
			if err != nil {
				t.Fatal(err)
			}
			var wf workflow
			if err := yaml.Unmarshal(out, &wf); err != nil {
				t.Fatal(err)
			}
			for ev := range wf.On {
				if !slices.Contains(trusted, ev) {
					t.Errorf("runs on %s, which is not started from the default branch's copy", ev)
				}
			}
			if len(wf.Permissions) != 0 {
				t.Errorf("workflow permissions %v, want none above the jobs'", wf.Permissions)
			}
			for name, j := range wf.Jobs {
				raw, _ := yaml.Marshal(j)
				if strings.Contains(string(raw), "secrets.") && j.Environment == "" {
					t.Errorf("job %s reads secrets without an environment", name)
				}
				if name != "pull-request" && strings.Contains(j.If, "github.event") {
					t.Errorf("job %s decides on the event (%s); that is the pull-request job's alone", name, j.If)
				}
				if name != "pull-request" && !slices.Contains(j.Needs, "pull-request") {
					t.Errorf("job %s does not need the pull-request job", name)
				}
				for _, s := range j.Steps {
					if strings.HasPrefix(s.Uses, "./") {
						t.Errorf("job %s runs a local action %s, code of the pull request's checkout", name, s.Uses)
					}
					if strings.HasPrefix(s.Uses, "actions/checkout@") && (s.With["persist-credentials"] != "false" || s.With["ref"] != "${{ needs.pull-request.outputs.head }}") {
						t.Errorf("job %s checks out %q with persist-credentials %q; want the head the pull-request job found, without credentials", name, s.With["ref"], s.With["persist-credentials"])
					}
				}
				env, isApply := strings.CutPrefix(name, "apply-")
				if isApply && !strings.Contains(j.If, "needs.plan-"+env+".outputs.receipt == ''") {
					t.Errorf("job %s is not skipped on its plan's receipt: %s", name, j.If)
				}
				if isApply && Guarded(env) && j.Environment != env {
					t.Errorf("job %s runs in environment %q, want %q", name, j.Environment, env)
				}
			}
			for i, env := range tt.w.Environments[1:] {
				prev := tt.w.Environments[i]
				if j := wf.Jobs["plan-"+env]; !strings.Contains(j.If, "needs.plan-"+prev+".outputs.receipt != ''") || !strings.Contains(j.If, "!cancelled()") {
					t.Errorf("plan-%s does not take %s's receipt as done: %s", env, prev, j.If)
				}
			}

			root := t.TempDir()
			dir := filepath.Join(root, ".github", "workflows")
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			relay, err := RenderWorkflow(GitHubReviewWorkflow, tt.w)
			if err != nil {
				t.Fatal(err)
			}
			for name, data := range map[string][]byte{"nova.yml": out, "nova-review.yml": relay} {
				if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			found, err := novaworkflows.Exposures(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range found {
				t.Errorf("exposure: %+v", e)
			}
		})
	}
}

// TestGitHubReviewRelayHoldsNothing: the relay runs from the pull
// request's own copy, so it must hold no secret and ask for no permission.
func TestGitHubReviewRelayHoldsNothing(t *testing.T) {
	out, err := RenderWorkflow(GitHubReviewWorkflow, sample())
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Name        string         `yaml:"name"`
		On          map[string]any `yaml:"on"`
		Permissions map[string]any `yaml:"permissions"`
	}
	if err := yaml.Unmarshal(out, &wf); err != nil {
		t.Fatal(err)
	}
	main, err := RenderWorkflow(GitHubWorkflow, sample())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(main), "workflows:\n      - "+quote(wf.Name)+"\n") {
		t.Errorf("the workflow does not run on the completion of %q", wf.Name)
	}
	if diff := cmp.Diff([]string{"pull_request_review"}, slices.Sorted(maps.Keys(wf.On))); diff != "" {
		t.Errorf("relay events (-want +got):\n%s", diff)
	}
	if wf.Permissions == nil || len(wf.Permissions) != 0 || strings.Contains(string(out), "secrets.") || strings.Contains(string(out), "${{") {
		t.Errorf("the relay holds or passes something:\n%s", out)
	}
}
