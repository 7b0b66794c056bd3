package templates

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKeylessWorkflowsGrantIDTokenOnlyToSigningJobs: with Keyless, every
// job that runs Nova's action with keyless: true may request an id-token,
// and no other job may: a job that holds no signing role has no identity
// to lend. No rendered workflow then asks for the signing-key secret.
func TestKeylessWorkflowsGrantIDTokenOnlyToSigningJobs(t *testing.T) {
	w := sample()
	w.Keyless = true
	merge := w
	merge.ApplyOn = ApplyOnMerge
	for name, r := range map[string]struct {
		kind string
		w    Workflow
	}{
		"github": {GitHubWorkflow, w}, "github-rollback": {GitHubRollbackWorkflow, w},
		"github-apply-on-merge": {GitHubWorkflow, merge}, "github-merge": {GitHubMergeWorkflow, merge},
	} {
		out, err := RenderWorkflow(r.kind, r.w)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if strings.Contains(string(out), "NOVA_SIGNING_KEY") {
			t.Errorf("%s: a keyless workflow passes the signing-key secret", name)
		}
		var wf struct {
			Jobs map[string]struct {
				Permissions map[string]string `yaml:"permissions"`
				Steps       []workflowStep    `yaml:"steps"`
			} `yaml:"jobs"`
		}
		if err := yaml.Unmarshal(out, &wf); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		signers := 0
		for job, j := range wf.Jobs {
			signs, trusted := false, false
			for _, s := range j.Steps {
				if s.With["keyless"] == "true" {
					signs = true
					if !trusted || s.With["signers"] != ".nova-trusted/.nova/signers.yml" {
						t.Errorf("%s: job %s signs keylessly without the default branch's signers.yml checked out before", name, job)
					}
				}
				if strings.HasPrefix(s.Uses, "actions/checkout@") && s.With["path"] == ".nova-trusted" {
					trusted = s.With["ref"] == "${{ github.event.repository.default_branch }}"
				}
			}
			if signs {
				signers++
			}
			if got := j.Permissions["id-token"] == "write"; got != signs {
				t.Errorf("%s: job %s signs keylessly: %t, has id-token: write: %t", name, job, signs, got)
			}
		}
		if signers == 0 {
			t.Errorf("%s: no job signs keylessly", name)
		}
	}
}
