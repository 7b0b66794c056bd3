package local

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

const baseApprovers = "groups:\n  qa:\n    members: [qa-lead]\n  sre:\n    members: [sre-oncall]\n"

// TestApproversComeFromTheTrustedBase: a pull request that adds its author
// to qa in its own approvers.yml does not change who may approve it.
func TestApproversComeFromTheTrustedBase(t *testing.T) {
	root := t.TempDir()
	repo, err := git.PlainInitWithOptions(root, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	dir := filepath.Join(root, "infra", "app")
	commit := func(content, msg string) plumbing.Hash {
		t.Helper()
		if err := os.MkdirAll(filepath.Join(dir, ".nova"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, runner.ApproversFile), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := wt.Add("infra/app/.nova/approvers.yml"); err != nil {
			t.Fatal(err)
		}
		h, err := wt.Commit(msg, &git.CommitOptions{Author: &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	base := commit(baseApprovers, "approvers")
	if err := wt.Checkout(&git.CheckoutOptions{Branch: plumbing.NewBranchReferenceName("pr"), Create: true}); err != nil {
		t.Fatal(err)
	}
	commit("groups:\n  qa:\n    members: [qa-lead, mallory]\n  sre:\n    members: [sre-oncall, mallory]\n", "let me approve")
	// And the working tree goes further still.
	if err := os.WriteFile(filepath.Join(dir, runner.ApproversFile), []byte("groups:\n  qa:\n    members: [mallory]\n  sre:\n    members: [mallory]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, b := range []string{"", base.String(), "main"} {
		cfg, err := TrustedApprovers{Dir: dir, Base: b}.Approvers(t.Context())
		if err != nil {
			t.Fatalf("base %q: %v", b, err)
		}
		if got := cfg.Members("qa"); !slices.Equal(got, []runner.Login{"qa-lead"}) {
			t.Errorf("base %q: qa members %v, want the base's [qa-lead]", b, got)
		}
	}
	if _, err := (TrustedApprovers{Dir: dir, Base: "0123456789012345678901234567890123456789"}).Approvers(t.Context()); runner.ReasonOf(err) != runner.ApproversInvalid {
		t.Errorf("unknown base: %v", err)
	}
	// origin/HEAD, when the clone has one, is the default branch.
	if err := repo.Storer.SetReference(plumbing.NewSymbolicReference("refs/remotes/origin/HEAD", "refs/heads/pr")); err != nil {
		t.Fatal(err)
	}
	_, _ = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{"https://example.com/x.git"}})
	if cfg, err := (TrustedApprovers{Dir: dir}).Approvers(t.Context()); err != nil || !slices.Contains(cfg.Members("qa"), "mallory") {
		t.Errorf("with origin/HEAD → pr, the default branch is pr: %v %v", cfg, err)
	}
}

func TestApproversOutsideGitAndMissing(t *testing.T) {
	dir := t.TempDir()
	if _, err := (TrustedApprovers{Dir: dir}).Approvers(t.Context()); runner.ReasonOf(err) != runner.ApproversInvalid {
		t.Errorf("missing file: %v", err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".nova"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, runner.ApproversFile), []byte(baseApprovers), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := TrustedApprovers{Dir: dir}.Approvers(t.Context())
	if err != nil || cfg.GroupFor(runner.Prod) != "sre" {
		t.Errorf("plain directory: %+v %v", cfg, err)
	}
	if err := os.WriteFile(filepath.Join(dir, runner.ApproversFile), []byte("groups:\n  qa: {members: [a]}\nsre: oops\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := (TrustedApprovers{Dir: dir}).Approvers(t.Context()); runner.ReasonOf(err) != runner.ApproversInvalid {
		t.Errorf("invalid file: %v", err)
	}
}
