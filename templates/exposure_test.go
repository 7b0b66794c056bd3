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
func TestScaffoldExposesNoSecrets(t *testing.T) {
	out, err := RenderWorkflow(GiteaWorkflow, sample())
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, ".gitea", "workflows"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, ".gitea", "workflows", "nova-app.yml"), out, 0o644); err != nil {
		t.Fatal(err)
	}
	found, err := novaworkflows.Exposures(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(found) != 0 {
		t.Errorf("the Gitea scaffold hands Nova's secrets to runs a branch pusher shapes: %+v", found)
	}
}
