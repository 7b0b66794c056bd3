package templates

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	novaworkflows "github.com/nova-platform/nova/runner/workflows"
)

// TestReleaseWorkflowSignsOnlyWhereItMayMintTokens: Nova's release asks
// for an OIDC token (id-token: write) in the one job that signs, through
// .ci/release-sign.sh (the script the signed-release test runs), and
// nowhere else; the workflow grants nothing above its jobs and hands no
// Nova secret to a run a branch pusher shapes.
func TestReleaseWorkflowSignsOnlyWhereItMayMintTokens(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "workflows-src", "release.yml"))
	if err != nil {
		t.Fatal(err)
	}
	var wf struct {
		Permissions map[string]string `yaml:"permissions"`
		Jobs        map[string]struct {
			Permissions map[string]string `yaml:"permissions"`
			Steps       []struct {
				Run string `yaml:"run"`
			} `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(data, &wf); err != nil {
		t.Fatal(err)
	}
	if len(wf.Permissions) != 0 {
		t.Errorf("workflow permissions %v, want none above the jobs'", wf.Permissions)
	}
	signing := 0
	for name, job := range wf.Jobs {
		signs := false
		for _, s := range job.Steps {
			if strings.Contains(s.Run, ".ci/release-sign.sh") {
				signs = true
			}
			if strings.Contains(s.Run, "cosign ") {
				t.Errorf("job %s runs cosign outside .ci/release-sign.sh, which the signed-release test does not run: %q", name, s.Run)
			}
		}
		if signs {
			signing++
		}
		if got := job.Permissions["id-token"]; signs != (got == "write") {
			t.Errorf("job %s: signs %v, id-token %q; want write exactly in the jobs that sign", name, signs, got)
		}
	}
	if signing == 0 {
		t.Error("no job of the release signs with .ci/release-sign.sh")
	}

	root := t.TempDir()
	dir := filepath.Join(root, ".github", "workflows")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "release.yml"), data, 0o644); err != nil {
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
