package workflows

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

const workflow = `name: nova
on: pull_request
jobs:
  apply-qa:
    environment: qa
    runs-on: ubuntu-latest
    steps:
      - uses: actions/checkout@v4
      - uses: nova-platform/nova@v1
        with:
          command: apply
  apply-prod:
    environment:
      name: prod
    runs-on: ubuntu-latest
    steps:
      - uses: "nova-platform/nova@v1"   # the release
  plan-dr:
    runs-on: ubuntu-latest
    steps:
      - uses: nova-platform/nova@v1.2.0
        with:
          environment: dr
      - uses: nova-platform/nova@0123456789abcdef0123456789abcdef01234567 # v1.2.0
        with:
          environment: dr
  deploy:
    uses: nova-platform/nova/.github/workflows/deploy.yml@v1
    secrets: inherit
  deploy-qa:
    uses: nova-platform/nova/.github/workflows/deploy.yml@v1
    with:
      promote-to: qa
`

func TestScanFindsProdBoundUses(t *testing.T) {
	root := t.TempDir()
	write(t, filepath.Join(root, ".github", "workflows", "nova.yml"), workflow)
	write(t, filepath.Join(root, ".gitea", "workflows", "notes.txt"), "not a workflow")
	uses, err := Scan(root, "nova-platform/nova")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, u := range uses {
		got = append(got, u.Job+" "+u.Ref+" prod="+map[bool]string{true: "yes", false: "no"}[u.ProdBound])
	}
	want := []string{
		"apply-qa v1 prod=no",
		"apply-prod v1 prod=yes",
		"plan-dr v1.2.0 prod=yes",
		"plan-dr 0123456789abcdef0123456789abcdef01234567 prod=yes",
		"deploy v1 prod=yes",
		"deploy-qa v1 prod=no",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("uses:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	unpinned := Unpinned(uses)
	if len(unpinned) != 3 || unpinned[0].Line != 17 || unpinned[0].File != ".github/workflows/nova.yml" {
		t.Errorf("unpinned = %v", unpinned)
	}
}

func TestPinRewritesOnlyTheUnpinnedLines(t *testing.T) {
	uses, err := scanFile("nova.yml", []byte(workflow), "nova-platform/nova")
	if err != nil {
		t.Fatal(err)
	}
	commits := map[string]string{"v1": strings.Repeat("a", 40), "v1.2.0": strings.Repeat("b", 40)}
	out, err := Pin([]byte(workflow), Unpinned(uses), commits)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.NewReplacer(
		`      - uses: "nova-platform/nova@v1"   # the release`, `      - uses: "nova-platform/nova@`+commits["v1"]+`" # v1`,
		"      - uses: nova-platform/nova@v1.2.0\n", "      - uses: nova-platform/nova@"+commits["v1.2.0"]+" # v1.2.0\n",
		"  deploy:\n    uses: nova-platform/nova/.github/workflows/deploy.yml@v1\n", "  deploy:\n    uses: nova-platform/nova/.github/workflows/deploy.yml@"+commits["v1"]+" # v1\n",
	).Replace(workflow)
	if string(out) != want {
		t.Errorf("pinned:\n%s\nwant:\n%s", out, want)
	}
	again, err := scanFile("nova.yml", out, "nova-platform/nova")
	if err != nil {
		t.Fatal(err)
	}
	if left := Unpinned(again); len(left) != 0 {
		t.Errorf("still unpinned after Pin: %v", left)
	}
}

func TestResolveTagOfALocalRemote(t *testing.T) {
	dir := t.TempDir()
	git := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com", "GIT_CONFIG_GLOBAL=/dev/null")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q")
	git("commit", "-q", "--allow-empty", "-m", "one")
	first := git("rev-parse", "HEAD")
	git("tag", "v1.0.0")
	git("commit", "-q", "--allow-empty", "-m", "two")
	second := git("rev-parse", "HEAD")
	git("tag", "-a", "v1.1.0", "-m", "annotated")
	for tag, want := range map[string]string{"v1.0.0": first, "v1.1.0": second} {
		got, err := ResolveTag(t.Context(), dir, tag)
		if err != nil || got != want {
			t.Errorf("ResolveTag(%s) = %s, %v; want %s", tag, got, err, want)
		}
	}
	if _, err := ResolveTag(t.Context(), dir, "v9"); err == nil {
		t.Error("resolved a tag that does not exist")
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
