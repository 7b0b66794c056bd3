package terraform

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// TestOpenTofuEncryptsTheState plans and applies the hello stack with the
// real tofu and an encrypted backend: the state and the saved plan on disk
// are ciphertext, the passphrase is nowhere Nova writes (the rendered root,
// the engine's log), and a tofu without the key, or with another one,
// cannot read the state.
func TestOpenTofuEncryptsTheState(t *testing.T) {
	tofu := terraformtest.Binary(t, runner.EngineOpenTofu)
	reg, err := registry.LoadEmbedded()
	if err != nil {
		t.Fatal(err)
	}
	const audience = "a greeting only the key holder reads"
	c := &runner.Contract{APIVersion: runner.APIVersion, ID: "0c0ffee0-1111-4222-8333-444455556666", Stack: "hello", Environment: runner.Dev,
		Engine: runner.EngineOpenTofu, Inputs: map[string]any{"audience": audience}, Backend: encrypted()}
	target, findings := reg.Resolve(c)
	if len(findings) > 0 {
		t.Fatalf("resolve: %+v", findings)
	}
	stateDir := t.TempDir()
	engine := func(pass string) *Engine {
		return &Engine{Registry: reg, StateDir: stateDir, OpenTofu: tofu, StatePassphrase: pass,
			Terraform: Options{Env: map[string]string{"PATH": os.Getenv("PATH")}}}
	}
	ctx := t.Context()
	root, runDir := filepath.Join(t.TempDir(), "root"), t.TempDir()
	e := engine(passphrase)
	if err := e.Render(root, c, target); err != nil {
		t.Fatal(err)
	}
	ws, err := e.Open(ctx, root, runDir, c)
	if err != nil {
		t.Fatal(err)
	}
	planFile := filepath.Join(runDir, "tfplan")
	sp, err := ws.Plan(ctx, planFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := ws.Apply(ctx, planFile); err != nil {
		t.Fatal(err)
	}
	out, err := ws.Outputs(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ws.Close()
	if got, _ := out["message__text"].Value.(string); got != "Hello, "+audience+"!" {
		t.Errorf("output read back as %q", got)
	}
	if sp.Engine == "" || !sp.HasChanges {
		t.Errorf("plan by %q, changes %t", sp.Engine, sp.HasChanges)
	}

	statePath := filepath.Join(stateDir, c.ID, "dev", "terraform.tfstate")
	state, err := os.ReadFile(statePath)
	if err != nil {
		t.Fatal(err)
	}
	var envelope struct {
		EncryptedData string `json:"encrypted_data"`
	}
	if err := json.Unmarshal(state, &envelope); err != nil || envelope.EncryptedData == "" || bytes.Contains(state, []byte(audience)) {
		t.Errorf("the state is not encrypted (%v):\n%.400s", err, state)
	}
	plan, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.HasPrefix(plan, []byte("PK\x03\x04")) {
		t.Error("the saved plan is a plain zip archive, not encrypted")
	}
	for _, f := range []string{filepath.Join(root, "main.tf"), filepath.Join(runDir, "terraform.log")} {
		if b, err := os.ReadFile(f); err != nil || bytes.Contains(b, []byte(passphrase)) {
			t.Errorf("%s holds the passphrase (%v)", f, err)
		}
	}

	// Without Nova's key provider tofu refuses the root outright; with
	// another passphrase it cannot decrypt the state.
	bare, err := New(root, Options{ExecPath: tofu, Engine: runner.EngineOpenTofu, Env: map[string]string{"PATH": os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	if err := bare.Init(ctx, []string{"path=" + statePath}); err == nil || !strings.Contains(err.Error(), "undeclared key provider") {
		t.Errorf("tofu without the key provider: %v, want it refused", err)
	}
	other, err := engine("another passphrase, just as long").Open(ctx, root, t.TempDir(), c)
	if err == nil {
		_, err = other.Plan(ctx, filepath.Join(t.TempDir(), "tfplan"))
		other.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "decryption failed") {
		t.Errorf("tofu with another passphrase: %v, want the state refused", err)
	}
}
