package templates

import (
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// TestKeylessWorkflowsGrantIDTokenOnlyToSigningJobs: with Keyless, every
// job that runs Nova's action with keyless: true may request an id-token,
// and no other job may: a job that holds no signing role has no identity
// to lend. No rendered workflow then asks for the signing-key secret. A
// signing job names no signers file or default branch (Nova refuses both
// in a forge's job: it reads .nova/signers.yml from the default branch
// through the API, which its token may read: contents: read).
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
		"github-breakglass": {GitHubBreakGlassWorkflow, w},
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
			signs := false
			for _, s := range j.Steps {
				if s.With["keyless"] == "true" {
					signs = true
					if _, ok := s.With["signers"]; ok {
						t.Errorf("%s: job %s passes a signers file, which Nova refuses in a forge's job", name, job)
					}
					if _, ok := s.With["default-branch"]; ok {
						t.Errorf("%s: job %s passes default-branch, which Nova refuses in a forge's job", name, job)
					}
				}
			}
			if signs {
				signers++
				if j.Permissions["contents"] != "read" {
					t.Errorf("%s: job %s signs keylessly, and its token may not read the default branch's signers.yml (contents: %q)", name, job, j.Permissions["contents"])
				}
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
