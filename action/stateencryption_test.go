package main

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/bundle"
)

const statePassphrase = "a passphrase only the operator knows"

// TestStateEncryptionRequired runs a contract that requires its state
// encrypted: on Terraform it stops at the NFR stage, saying why, before
// anything is planned; on OpenTofu with the backend's encryption and the
// operator's passphrase it plans and applies, the state on disk is
// ciphertext, and the passphrase appears in no event, log or bundle file.
func TestStateEncryptionRequired(t *testing.T) {
	encrypted := helloContract("world", "dev") + "nfr:\n  stateEncryption: required\n"
	withBackend := encrypted + "backend:\n  type: local\n  encryption:\n    keyProvider: pbkdf2\n"
	stateFile := func(c *consumer) string {
		return filepath.Join(c.stateDir, "0c0ffee0-1111-4222-8333-444455556666", "dev", "terraform.tfstate")
	}

	t.Run("terraform", func(t *testing.T) {
		c := newConsumer(t, encrypted)
		code, v, stderr := c.nova(t.Context(), "run")
		if code != ExitFail || v.Reason != string(runner.StateEncryptionUnsupported) || stage(v, "nfr").Verdict != runner.Fail {
			t.Fatalf("exit %d reason %s, stages %v\n%s", code, v.Reason, verdicts(v), stderr)
		}
		if _, err := os.Stat(stateFile(c)); err == nil {
			t.Error("a state was written")
		}
	})
	t.Run("opentofu without backend encryption", func(t *testing.T) {
		c := newEngineConsumer(t, runner.EngineOpenTofu, encrypted)
		code, v, stderr := c.nova(t.Context(), "run")
		if code != ExitFail || v.Reason != string(runner.StateEncryptionNotConfigured) {
			t.Fatalf("exit %d reason %s, stages %v\n%s", code, v.Reason, verdicts(v), stderr)
		}
	})
	t.Run("opentofu without the passphrase", func(t *testing.T) {
		c := newEngineConsumer(t, runner.EngineOpenTofu, withBackend)
		code, v, stderr := c.nova(t.Context(), "run")
		if code != ExitError || v.Reason != string(runner.StateEncryptionKeyMissing) {
			t.Fatalf("exit %d reason %s, stages %v\n%s", code, v.Reason, verdicts(v), stderr)
		}
	})
	t.Run("opentofu", func(t *testing.T) {
		c := newEngineConsumer(t, runner.EngineOpenTofu, withBackend)
		c.env["NOVA_STATE_PASSPHRASE"] = statePassphrase
		code, v, stderr := c.nova(t.Context(), "run")
		if code != ExitPass || stage(v, "apply").Verdict != runner.Pass {
			t.Fatalf("exit %d reason %s, stages %v\n%s", code, v.Reason, verdicts(v), stderr)
		}
		if !strings.Contains(stage(v, "nfr").Summary, "1 pass") {
			t.Errorf("nfr: %s", stage(v, "nfr").Summary)
		}
		state, err := os.ReadFile(stateFile(c))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Contains(state, []byte(`"encrypted_data"`)) || bytes.Contains(state, []byte("Hello, world!")) {
			t.Errorf("the state is not encrypted:\n%.300s", state)
		}
		// Nothing Nova writes holds the passphrase: the run's directory
		// (its events as recorded, the bundle with its rendered root, the
		// engine's log) and HOME (the outbox, the keys, the evidence
		// repo, whose objects are compressed: the events file above is
		// their plain form).
		for _, dir := range []string{filepath.Dir(v.EventsFile), c.env["HOME"]} {
			if f := fileHolding(t, dir, statePassphrase); f != "" {
				t.Errorf("%s holds the passphrase", f)
			}
		}
		root, err := os.ReadFile(filepath.Join(v.BundleDir, bundle.RootDir, "main.tf"))
		if err != nil || !bytes.Contains(root, []byte("key_provider.pbkdf2.nova")) {
			t.Errorf("the rendered root has no encryption block (%v)", err)
		}
		if got := eventTypes(readEvents(t, v.EventsFile)); !slices.Contains(got, runner.EventApplyCompleted) {
			t.Errorf("events %v", got)
		}
	})
}

// fileHolding names a file under dir that holds s, or "".
func fileHolding(t *testing.T, dir, s string) string {
	t.Helper()
	var found string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || found != "" {
			return err
		}
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte(s)) {
			found = p
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
