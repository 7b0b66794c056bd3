package templates

import (
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

// TestFanoutScaffolds: the fan-out `nova init --fanout` writes for each
// forge: on GitHub a caller of the reusable fan-out, pinned and bounded;
// on Gitea a fixed number of jobs (it cannot expand a matrix from a
// job's output), each running its own job of the selection, and a
// summary job that reads the statuses, holds no key and waits for every
// job whatever its verdict.
func TestFanoutScaffolds(t *testing.T) {
	w := sample()
	w.MaxJobs = 3
	w.Action.Commit = "0123456789abcdef0123456789abcdef01234567"
	out, err := RenderWorkflow(GitHubFanoutWorkflow, w)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), "uses: nova-platform/nova/.github/workflows/fanout.yml@"+w.Action.Commit) || !strings.Contains(string(out), "max-jobs: 3") {
		t.Errorf("the GitHub fan-out does not call the pinned reusable fan-out with max-jobs 3:\n%s", out)
	}
	out, err = RenderWorkflow(GiteaFanoutWorkflow, w)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]struct {
			Needs    any               `yaml:"needs"`
			If       string            `yaml:"if"`
			Env      map[string]string `yaml:"env"`
			Strategy struct {
				Matrix map[string][]int `yaml:"matrix"`
			} `yaml:"strategy"`
			Steps []struct {
				Uses string `yaml:"uses"`
				Run  string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(out, &wf); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if got := wf.Jobs["run"].Strategy.Matrix["job"]; len(got) != 3 || got[2] != 3 {
		t.Errorf("the run jobs %v, want 1 to 3", got)
	}
	runs := func(job string) string {
		var all []string
		for _, s := range wf.Jobs[job].Steps {
			if s.Uses != "" {
				t.Errorf("job %s uses %s: Gitea's runners here fetch no action", job, s.Uses)
			}
			all = append(all, s.Run)
		}
		return strings.Join(all, "\n")
	}
	if r := runs("run"); !strings.Contains(r, "--job \"$JOB\"") || !strings.Contains(r, "--max-jobs 3 --selection") {
		t.Errorf("the run job does not run its own job of the selection:\n%s", r)
	}
	s := wf.Jobs["summary"]
	if r := runs("summary"); !strings.Contains(r, "nova summary --statuses --selection") {
		t.Errorf("the summary job does not read the statuses of the selection:\n%s", r)
	}
	if !strings.HasPrefix(s.If, "always()") {
		t.Errorf("the summary job's if %q: want it after every job whatever its verdict", s.If)
	}
	for k := range s.Env {
		if strings.Contains(k, "KEY") || strings.Contains(k, "EVIDENCE_TOKEN") || strings.Contains(k, "PASSPHRASE") {
			t.Errorf("the summary job holds %s", k)
		}
	}
	if _, err := RenderWorkflow(GiteaFanoutWorkflow, sample()); err == nil {
		t.Error("a fan-out of 0 jobs rendered")
	}
}
