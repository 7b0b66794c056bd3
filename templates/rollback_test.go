package templates

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	novaworkflows "github.com/nova-platform/nova/runner/workflows"
)

// TestRollbackWorkflows: each forge's rollback workflow is a dispatch
// with the environment and the change as inputs, hands Nova's keys to no
// run a branch pusher shapes, never puts an input into a shell script,
// and on GitHub plans in environment nova and applies only in the rolled
// back environment, after its plan waited for approval.
func TestRollbackWorkflows(t *testing.T) {
	type inputs map[string]struct {
		Type    string   `yaml:"type"`
		Options []string `yaml:"options"`
	}
	type workflow struct {
		On   map[string]struct{ Inputs inputs } `yaml:"on"`
		Jobs map[string]workflowJob             `yaml:"jobs"`
	}
	for _, tt := range []struct {
		kind, dir, event string
		w                Workflow
	}{
		{GitHubRollbackWorkflow, ".github/workflows", "workflow_dispatch", sample()},
		{GiteaRollbackWorkflow, ".gitea/workflows", "workflow_dispatch", sample()},
		{RollbackWorkflow, ".github/workflows", "workflow_call", Deploy},
	} {
		t.Run(tt.kind, func(t *testing.T) {
			out, err := RenderWorkflow(tt.kind, tt.w)
			if err != nil {
				t.Fatal(err)
			}
			var wf workflow
			if err := yaml.Unmarshal(out, &wf); err != nil {
				t.Fatal(err)
			}
			in := wf.On[tt.event].Inputs
			if len(wf.On) != 1 || in["change"].Type != "string" || in["environment"].Type == "" {
				t.Errorf("runs on %v, want %s alone with inputs environment and change", wf.On, tt.event)
			}
			if tt.event == "workflow_dispatch" && !slices.Equal(in["environment"].Options, tt.w.Environments) {
				t.Errorf("environments offered: %v", in["environment"].Options)
			}
			for name, j := range wf.Jobs {
				for _, s := range j.Steps {
					if strings.Contains(s.Run, "inputs.") {
						t.Errorf("job %s puts an input into a script:\n%s", name, s.Run)
					}
					if s.With["command"] == "rollback" && (s.With["to"] != "${{ inputs.change }}" || s.With["environment"] != "${{ inputs.environment }}") {
						t.Errorf("job %s rolls back with %v", name, s.With)
					}
					if strings.HasPrefix(s.Uses, "actions/checkout@") && (s.With["fetch-depth"] != "0" || s.With["persist-credentials"] != "false") {
						t.Errorf("job %s checks out %v: want the whole history, without credentials", name, s.With)
					}
				}
			}
			if tt.kind != GiteaRollbackWorkflow {
				plan, apply := wf.Jobs["plan"], wf.Jobs["apply"]
				if len(wf.Jobs) != 2 || plan.Environment != "nova" || apply.Environment != "${{ inputs.environment }}" ||
					!slices.Equal(apply.Needs, []string{"plan"}) || apply.If != "needs.plan.outputs.verdict == 'awaiting_approval'" {
					t.Errorf("jobs %+v", wf.Jobs)
				}
			} else if s := wf.Jobs["rollback"].Steps; len(s) == 0 || !strings.Contains(s[len(s)-1].Run, `--to "$ROLLBACK_TO"`) || s[len(s)-1].Env["ROLLBACK_TO"] != "${{ github.event.inputs.change }}" {
				t.Errorf("the Gitea rollback step: %+v", s)
			}
			root := t.TempDir()
			dir := filepath.Join(root, filepath.FromSlash(tt.dir))
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "nova-app-rollback.yml"), out, 0o644); err != nil {
				t.Fatal(err)
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
