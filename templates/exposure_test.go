package templates

import (
	"os"
	"path/filepath"
	"testing"

	novaworkflows "github.com/nova-platform/nova/runner/workflows"
)

// TestScaffoldExposesNoSecrets: the Gitea workflow `nova init` writes
// gives Nova's keys only to runs of default-branch definitions (and of
// reviewed commits, which the documented protection keeps an admin's), so
// `nova validate` has nothing to warn about in it.
//
// The break-glass workflows hold the keys too (they record requests,
// approvals and grants): they run only on workflow_dispatch and
// issue_comment, both from the default branch's definition.
func TestScaffoldExposesNoSecrets(t *testing.T) {
	root := t.TempDir()
	for file, kind := range map[string]string{
		".gitea/workflows/nova-app.yml":             GiteaWorkflow,
		".gitea/workflows/nova-app-breakglass.yml":  GiteaBreakGlassWorkflow,
		".github/workflows/nova-app-breakglass.yml": GitHubBreakGlassWorkflow,
	} {
		out, err := RenderWorkflow(kind, sample())
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Join(root, filepath.Dir(file)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(root, file), out, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	found, err := novaworkflows.Exposures(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("the Gitea scaffold hands Nova's secrets to runs a branch pusher shapes: %+v", found)
	}
}
