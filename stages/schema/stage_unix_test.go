//go:build unix

package schema_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// TestStageRunReadsABoundedPrefix serves the contract from a pipe that
// never ends: if Run read a contract whole, the test would never finish.
func TestStageRunReadsABoundedPrefix(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, schema.DefaultContractPath)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		w, err := os.OpenFile(path, os.O_WRONLY, 0)
		if err != nil {
			return
		}
		defer w.Close()
		chunk := bytes.Repeat([]byte("# endless\n"), 6554)
		// Writing fails with EPIPE once Run has closed its end.
		for {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}()

	res, err := schema.New(embeddedRegistry(t)).Run(t.Context(), &runner.State{Dir: dir})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(res.Findings) != 1 || res.Findings[0].Reason != runner.ContractTooLarge {
		t.Errorf("findings = %+v, want one %s", res.Findings, runner.ContractTooLarge)
	}
	<-writerDone
}
