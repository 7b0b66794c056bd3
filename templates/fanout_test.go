package templates

import (
	"maps"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestFanoutSummaryJobHoldsNothing: the fan-out's summary job, which
// reads files the run jobs wrote on the pull request's checkout, gets
// the permission to comment and nothing else: no secret, no checkout, no
// Environment; it runs after every run job whatever their verdicts, and
// the run jobs upload their results only when the matrix says the change
// is summarized.
func TestFanoutSummaryJobHoldsNothing(t *testing.T) {
	out, err := RenderWorkflow(FanoutWorkflow, Fanout)
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Jobs map[string]yaml.Node `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(out, &wf); err != nil {
		t.Fatal(err)
	}
	node, ok := wf.Jobs["summary"]
	if !ok {
		t.Fatal("fanout.yml has no summary job")
	}
	var job struct {
		Needs       []string          `yaml:"needs"`
		If          string            `yaml:"if"`
		Environment any               `yaml:"environment"`
		Permissions map[string]string `yaml:"permissions"`
		Steps       []struct {
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	}
	if err := node.Decode(&job); err != nil {
		t.Fatal(err)
	}
	text, _ := yaml.Marshal(&node)
	if strings.Contains(string(text), "secrets.") {
		t.Errorf("the summary job names a secret:\n%s", text)
	}
	if want := map[string]string{"pull-requests": "write"}; !maps.Equal(job.Permissions, want) {
		t.Errorf("the summary job's permissions %v, want %v alone", job.Permissions, want)
	}
	if job.Environment != nil {
		t.Errorf("the summary job runs in the Environment %v, whose secrets it needs none of", job.Environment)
	}
	if !strings.HasPrefix(job.If, "always()") || !strings.Contains(strings.Join(job.Needs, " "), "run") {
		t.Errorf("the summary job needs %v if %q: want it after the run jobs, whatever their verdicts", job.Needs, job.If)
	}
	summary := false
	for _, s := range job.Steps {
		if strings.HasPrefix(s.Uses, "actions/checkout") {
			t.Errorf("the summary job checks out the repository")
		}
		if s.With["command"] == "summary" && s.With["from"] != "" {
			summary = true
			// Without the selection, a contract whose job died before
			// writing its results would be left out without a word.
			if !strings.HasPrefix(s.With["selection-file"], "nova-selection/") {
				t.Errorf("nova summary is not given the selection: selection-file %q", s.With["selection-file"])
			}
		}
	}
	if !summary {
		t.Error("the summary job does not run nova summary --from")
	}
	var sel struct {
		Steps []struct {
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	}
	selNode := wf.Jobs["select"]
	if err := selNode.Decode(&sel); err != nil {
		t.Fatal(err)
	}
	written, uploaded := false, false
	for _, s := range sel.Steps {
		written = written || (s.With["command"] == "matrix" && s.With["selection-file"] == "nova-selection.json")
		uploaded = uploaded || (strings.HasPrefix(s.Uses, "actions/upload-artifact") && s.With["name"] == "nova-selection" && s.With["path"] == "nova-selection.json")
	}
	if !written || !uploaded {
		t.Errorf("the select job writes the selection %v and uploads it as nova-selection %v: want both", written, uploaded)
	}
	var run struct {
		Steps []struct {
			If   string            `yaml:"if"`
			Uses string            `yaml:"uses"`
			With map[string]string `yaml:"with"`
		} `yaml:"steps"`
	}
	runNode := wf.Jobs["run"]
	if err := runNode.Decode(&run); err != nil {
		t.Fatal(err)
	}
	uploads := 0
	for _, s := range run.Steps {
		if strings.HasPrefix(s.Uses, "actions/upload-artifact") {
			uploads++
			if !strings.Contains(s.If, "matrix.summary") || !strings.HasPrefix(s.With["name"], "nova-results-") {
				t.Errorf("the run job uploads %q if %q: want nova-results-…, only when the matrix summarizes", s.With["name"], s.If)
			}
		}
		if s.With["command"] == "run" && !strings.Contains(s.With["results-file"], "matrix.summary") {
			t.Errorf("the run step's results-file %q does not follow the matrix's summary", s.With["results-file"])
		}
	}
	if uploads != 1 {
		t.Errorf("%d upload steps in the run job, want 1", uploads)
	}
}
