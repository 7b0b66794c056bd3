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
				if checkout != nil && checkout.With["fetch-depth"] != "0" {
					t.Errorf("apply-%s checks out without the history that orders merges: %+v", env, checkout)
				}
			}
			// Merged runs one at a time, none cancelled halfway.
			var top struct {
				Concurrency struct {
					Group            string `yaml:"group"`
					CancelInProgress *bool  `yaml:"cancel-in-progress"`
				} `yaml:"concurrency"`
			}
			if err := yaml.Unmarshal(out, &top); err != nil {
				t.Fatal(err)
			}
			if c := top.Concurrency; c.Group != "nova-"+merge.Key+"-merge" || c.CancelInProgress == nil || *c.CancelInProgress {
				t.Errorf("the merge workflow's concurrency %+v, want group nova-%s-merge, cancel-in-progress false", c, merge.Key)
			}
		})
	}
}

// TestMergeQueueWorkflow: with ApplyOn merge, GitHub's scaffold has a
// merge queue check that runs on merge_group (and passes on the pull
// request, where a required check must report too), holds no secret at
// all (GitHub runs the queue's own copy of it), checks out the queue's
// commit without credentials and runs `nova run --merge-queue` for every
// guarded environment, reading the evidence with the job's token and the
// public keys; actionlint and the exposure rules find nothing.
func TestMergeQueueWorkflow(t *testing.T) {
	merge := sample()
	merge.ApplyOn = ApplyOnMerge
	out, err := RenderWorkflow(GitHubQueueWorkflow, merge)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		On          map[string]struct{ Types []string } `yaml:"on"`
		Permissions map[string]string                   `yaml:"permissions"`
		Jobs        map[string]struct {
			workflowJob `yaml:",inline"`
			Permissions map[string]string `yaml:"permissions"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(out, &wf); err != nil {
		t.Fatal(err)
	}
	if _, ok := wf.On["pull_request"]; len(wf.On) != 2 || !ok || strings.Join(wf.On["merge_group"].Types, ",") != "checks_requested" {
		t.Errorf("runs on %v, want pull_request and merge_group checks_requested alone", wf.On)
	}
	if strings.Contains(string(out), "secrets.") || strings.Contains(string(out), "secrets:") {
		t.Errorf("the queue's workflow, which a pull request can rewrite, reads a secret:\n%s", out)
	}
	j, ok := wf.Jobs["queue"]
	if len(wf.Jobs) != 1 || !ok || j.Environment != "" || len(j.Permissions) != 1 || j.Permissions["contents"] != "read" || len(wf.Permissions) != 0 {
		t.Fatalf("jobs %+v permissions %v, want queue alone, in no environment, reading contents only", wf.Jobs, wf.Permissions)
	}
	var envs []string
	for _, s := range j.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/checkout@"):
			if s.With["ref"] != "${{ github.event.merge_group.head_sha }}" || s.With["persist-credentials"] != "false" {
				t.Errorf("checks out %+v, want the queue's commit without credentials", s)
			}
		case strings.HasPrefix(s.Uses, "nova-platform/nova@"):
			if s.With["command"] != "run" || s.With["merge"] != "merge-queue" || s.With["evidence-token"] != "${{ github.token }}" {
				t.Errorf("runs nova %+v, want run --merge-queue reading the evidence with the job's token", s.With)
			}
			envs = append(envs, s.With["environment"])
		}
	}
	if strings.Join(envs, " ") != "qa prod dr" {
		t.Errorf("checks the queue's commit in %v, want every guarded environment", envs)
	}
	if errs := append(lint(t, "queue.yml", out), lintNovaSteps(t, out, novaInputs(t))...); len(errs) > 0 {
		t.Errorf("%s\n--- rendered:\n%s", strings.Join(errs, "\n"), out)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".github", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".github", "workflows", "nova-app-queue.yml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := novaworkflows.Exposures(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range found {
		t.Errorf("exposure: %+v", e)
	}
}
