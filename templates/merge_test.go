package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	novaworkflows "github.com/nova-platform/nova/runner/workflows"
)

// TestApplyOnMergeWorkflows: with ApplyOn merge, the pull request's
// workflow passes until-merge to every plan and apply of the change (and
// not to destroys), on both forges; the merge workflow runs only on a
// merged pull request (pull_request_target: the default branch's copy),
// checks out the merged commit without credentials, runs `nova run
// --merged` environment by environment, each GitHub job in its
// environment, and hands Nova's keys to no run a branch pusher shapes.
// Without ApplyOn nothing of it is rendered.
func TestApplyOnMergeWorkflows(t *testing.T) {
	type workflow struct {
		On   map[string]struct{ Types []string } `yaml:"on"`
		Jobs map[string]workflowJob              `yaml:"jobs"`
	}
	render := func(t *testing.T, kind string, w Workflow) ([]byte, workflow) {
		t.Helper()
		out, err := RenderWorkflow(kind, w)
		if err != nil {
			t.Fatal(err)
		}
		var wf workflow
		if err := yaml.Unmarshal(out, &wf); err != nil {
			t.Fatal(err)
		}
		return out, wf
	}
	merge := sample()
	merge.ApplyOn = ApplyOnMerge
	inputs := novaInputs(t)

	t.Run("github pull request", func(t *testing.T) {
		_, before := render(t, GitHubWorkflow, sample())
		_, wf := render(t, GitHubWorkflow, merge)
		for name, j := range wf.Jobs {
			for _, s := range j.Steps {
				if !strings.HasPrefix(s.Uses, "nova-platform/nova@") || s.With["command"] == "policy" {
					continue
				}
				want := "until-merge"
				if strings.HasPrefix(name, "destroy-") {
					want = ""
				}
				if s.With["merge"] != want {
					t.Errorf("job %s runs nova %s with merge %q, want %q", name, s.With["command"], s.With["merge"], want)
				}
			}
			for _, s := range before.Jobs[name].Steps {
				if _, ok := s.With["merge"]; ok {
					t.Errorf("job %s of the default scaffold passes merge %q", name, s.With["merge"])
				}
			}
		}
	})
	t.Run("gitea pull request", func(t *testing.T) {
		before, _ := render(t, GiteaWorkflow, sample())
		out, _ := render(t, GiteaWorkflow, merge)
		if strings.Contains(string(before), "until-merge") || !strings.Contains(string(out), "merge=--until-merge") ||
			!strings.Contains(string(out), "platform/nova run $operation $merge --dir") {
			t.Errorf("the Gitea pull request workflow does not run guarded environments --until-merge:\n%s", out)
		}
		if errs := lint(t, "gitea.yml", out); len(errs) > 0 {
			t.Error(strings.Join(errs, "\n"))
		}
	})

	for _, tt := range []struct{ kind, dir string }{
		{GitHubMergeWorkflow, ".github/workflows"},
		{GiteaMergeWorkflow, ".gitea/workflows"},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			out, wf := render(t, tt.kind, merge)
			if on, ok := wf.On["pull_request_target"]; len(wf.On) != 1 || !ok || strings.Join(on.Types, ",") != "closed" {
				t.Errorf("runs on %v, want pull_request_target closed alone", wf.On)
			}
			if errs := append(lint(t, tt.kind+".yml", out), lintNovaSteps(t, out, inputs)...); len(errs) > 0 {
				t.Errorf("%s\n--- rendered:\n%s", strings.Join(errs, "\n"), out)
			}
			root := t.TempDir()
			if err := os.MkdirAll(filepath.Join(root, tt.dir), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(root, tt.dir, "nova-app-merge.yml"), out, 0o644); err != nil {
				t.Fatal(err)
			}
			found, err := novaworkflows.Exposures(root)
			if err != nil {
				t.Fatal(err)
			}
			for _, e := range found {
				t.Errorf("exposure: %+v", e)
			}
			if tt.kind == GiteaMergeWorkflow {
				j := wf.Jobs["merged"]
				if len(wf.Jobs) != 1 || j.If != "github.event.pull_request.merged" || len(j.Steps) < 2 {
					t.Fatalf("jobs %+v, want merged alone, on a merged pull request", wf.Jobs)
				}
				if checkout := j.Steps[0]; checkout.Env["MERGED"] != "${{ github.event.pull_request.merge_commit_sha }}" || !strings.Contains(checkout.Run, `git checkout -q --detach "$MERGED"`) {
					t.Errorf("the Gitea merge job checks out %+v", checkout)
				}
				if run := j.Steps[len(j.Steps)-1].Run; !strings.Contains(run, "for env in dev qa prod dr;") || !strings.Contains(run, "platform/nova run --merged --dir") {
					t.Errorf("the Gitea merge job runs:\n%s", run)
				}
				return
			}
			for i, env := range merge.Environments {
				j, ok := wf.Jobs["apply-"+env]
				if !ok {
					t.Fatalf("no job apply-%s", env)
				}
				wantEnv := env
				if !Guarded(env) {
					wantEnv = "nova"
				}
				if j.Environment != wantEnv {
					t.Errorf("apply-%s runs in environment %q, want %q", env, j.Environment, wantEnv)
				}
				if i == 0 && j.If != "github.event.pull_request.merged == true" {
					t.Errorf("apply-%s runs if %q, want only on a merged pull request", env, j.If)
				}
				if i > 0 && (len(j.Needs) != 1 || j.Needs[0] != "apply-"+merge.Environments[i-1] || !strings.Contains(j.If, "needs.apply-"+merge.Environments[i-1]+".outputs.verdict == 'pass'")) {
					t.Errorf("apply-%s needs %v if %q, want the environment before it applied", env, j.Needs, j.If)
				}
				var nova, checkout *workflowStep
				for k := range j.Steps {
					switch s := &j.Steps[k]; {
					case strings.HasPrefix(s.Uses, "actions/checkout@"):
						checkout = s
					case strings.HasPrefix(s.Uses, "nova-platform/nova@"):
						nova = s
					}
				}
				if checkout == nil || checkout.With["ref"] != "${{ github.event.pull_request.merge_commit_sha }}" || checkout.With["persist-credentials"] != "false" {
					t.Errorf("apply-%s checks out %+v, want the merged commit without credentials", env, checkout)
				}
				if nova == nil || nova.With["command"] != "run" || nova.With["merge"] != "merged" || nova.With["environment"] != env {
					t.Errorf("apply-%s runs nova %+v, want run --merged in %s", env, nova, env)
				}
			}
		})
	}
}
