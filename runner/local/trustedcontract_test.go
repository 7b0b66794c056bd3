package local

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/nova-platform/nova/runner"
)

// TestTrustedContractOfADeletedDirectory: a change that deletes a
// contract's whole directory still has its contract read from the base,
// and the approver config next to it; a contract the base never had is
// not found.
func TestTrustedContractOfADeletedDirectory(t *testing.T) {
	root := t.TempDir()
	repo, err := git.PlainInitWithOptions(root, &git.PlainInitOptions{InitOptions: git.InitOptions{DefaultBranch: plumbing.Main}})
	if err != nil {
		t.Fatal(err)
	}
	wt, _ := repo.Worktree()
	dir := filepath.Join(root, "svc", "gone")
	if err := os.MkdirAll(filepath.Join(dir, ".nova"), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string]string{"contract.yml": "id: gone\n", "approvers.yml": baseApprovers} {
		if err := os.WriteFile(filepath.Join(dir, ".nova", name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := wt.AddGlob("."); err != nil {
		t.Fatal(err)
	}
	sig := &object.Signature{Name: "t", Email: "t@example.com", When: time.Now()}
	base, err := wt.Commit("svc/gone", &git.CommitOptions{Author: sig})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Remove("svc/gone"); err != nil {
		t.Fatal(err)
	}
	if _, err := wt.Commit("retire svc/gone", &git.CommitOptions{Author: sig}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the directory is still there: %v", err)
	}
	data, err := TrustedContract{Dir: dir, Base: base.String(), Path: ".nova/contract.yml", Limit: 1 << 20}.Read(t.Context())
	if err != nil || string(data) != "id: gone\n" {
		t.Fatalf("contract at the base: %q %v", data, err)
	}
	if _, err := (TrustedApprovers{Dir: dir, Base: base.String()}).Approvers(t.Context()); err != nil {
		t.Errorf("approvers at the base: %v", err)
	}
	_, err = TrustedContract{Dir: dir, Path: ".nova/contract.yml", Limit: 1 << 20}.Read(t.Context())
	if runner.ReasonOf(err) != runner.ContractNotFound || !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a contract the default branch no longer has: %v", err)
	}
	if _, err := (TrustedContract{Dir: dir, Base: base.String(), Path: ".nova/contract.yml", Limit: 4}).Read(t.Context()); runner.ReasonOf(err) != runner.ContractTooLarge {
		t.Errorf("a contract over the limit: %v", err)
	}
}
