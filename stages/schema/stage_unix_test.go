//go:build unix

package schema_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// TestStageRunRefusesAPipe serves the contract from a named pipe nobody
// writes to: opening it the ordinary way would block the run forever, so
// the test only finishes if the pipe is refused without being opened for a
// blocking read.
func TestStageRunRefusesAPipe(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, schema.DefaultContractPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := schema.New(embeddedRegistry(t)).Run(t.Context(), &runner.State{Dir: dir})
	if runner.ReasonOf(err) != runner.FileNotRegular {
		t.Errorf("Run: %v, want %s", err, runner.FileNotRegular)
	}
}

// TestStageRunRefusesPathsOutsideTheCheckout: --contract and links in the
// checkout cannot make Nova read (and echo into events) a file it does not
// own.
func TestStageRunRefusesPathsOutsideTheCheckout(t *testing.T) {
	dir, outside := t.TempDir(), t.TempDir()
	secret := filepath.Join(outside, "contract.yml")
	if err := os.WriteFile(secret, []byte("apiVersion: nova/v1\nid: 0c0ffee0-1111-4222-8333-444455556666\nstack: hello\nenvironment: dev\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".nova"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(secret, filepath.Join(dir, schema.DefaultContractPath)); err != nil {
		t.Fatal(err)
	}
	for _, contract := range []string{"", secret, "../../../../../../../etc/passwd", "/etc/passwd"} {
		st := &runner.State{Dir: dir, ContractPath: contract}
		if _, err := schema.New(embeddedRegistry(t)).Run(t.Context(), st); runner.ReasonOf(err) != runner.PathOutsideCheckout {
			t.Errorf("--contract %q: %v, want %s", contract, err, runner.PathOutsideCheckout)
		}
		if st.Contract != nil {
			t.Errorf("--contract %q: a contract was read from outside the checkout", contract)
		}
	}
}
