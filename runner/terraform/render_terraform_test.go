package terraform

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

// TestTerraformReadsRenderedValuesBack applies a root module rendered from
// hostile contract values with each real engine: every value comes back
// out of `output` exactly as the contract gave it, so the engine itself
// read each one as a literal, never as an interpolation, a directive, a
// heredoc or more configuration. OpenTofu parses with its own fork of HCL,
// so each engine is asked.
func TestTerraformReadsRenderedValuesBack(t *testing.T) {
	for _, engine := range terraformtest.Engines {
		t.Run(engine, func(t *testing.T) {
			t.Parallel()
			readsRenderedValuesBack(t, terraformtest.Binary(t, engine))
		})
	}
}

func readsRenderedValuesBack(t *testing.T, bin string) {
	strs := append(slices.Clone(hostile),
		"%{ if true }x%{ endif }", "$${x}", "%%{x}", "${", "%{", "$", "%", "{}", "${{ github.token }}",
		"<<-EOT\nx\nEOT\n", "EOT\n}\noutput \"pwned\" {\n  value = 1\n}\n", "\\${x}", "\x00\x1b\u2028\ufeff")
	inputs := map[string]any{}
	tags := map[string]any{}
	for i, s := range strs {
		inputs[fmt.Sprintf("s%02d", i)] = s
		tags[s] = s
	}
	inputs["tags"] = tags
	list := make([]any, len(strs))
	for i, s := range strs {
		list[i] = s
	}
	inputs["list"] = list
	inputs["nested"] = map[string]any{"${a}": []any{map[string]any{"%{b}": strs[len(strs)-1]}, json.Number("1e3"), true, nil}}

	dir := t.TempDir()
	victim := runner.Instance{Name: "victim", Module: "echo", Version: "1.0.0", Inputs: map[string]runner.Value{}}
	var module strings.Builder
	for _, name := range slices.Sorted(maps.Keys(inputs)) {
		victim.Inputs[name] = runner.Value{Value: inputs[name]}
		victim.Outputs = append(victim.Outputs, name)
		fmt.Fprintf(&module, "variable %q {\n  type    = any\n  default = null\n}\n\noutput %q {\n  value = var.%s\n}\n\n", name, name, name)
	}
	neighbour := runner.Instance{Name: "neighbour", Module: "echo", Version: "1.0.0", Outputs: []string{"s00"},
		Wires: map[string]runner.Ref{"s00": {Instance: "victim", Output: "s05"}}}
	src, err := RenderRoot(&runner.TargetStack{Stack: "hostile", StackVersion: "1.0.0", Instances: []runner.Instance{victim, neighbour}}, "local", false)
	if err != nil {
		t.Fatal(err)
	}
	modDir := filepath.Join(dir, ModuleDir("echo", "1.0.0"))
	if err := os.MkdirAll(modDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(modDir, "main.tf"), []byte(module.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), src, 0o644); err != nil {
		t.Fatal(err)
	}

	tf := func(args ...string) []byte {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), bin, args...)
		cmd.Dir = dir
		// A CLI config file that is missing makes tofu print a warning
		// on stdout, where the JSON goes: an empty one, as Environment
		// gives the engine.
		cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1", "TF_DATA_DIR="+filepath.Join(dir, ".terraform"), "TF_CLI_CONFIG_FILE="+os.DevNull)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("%s %s: %v\n%s%s\n--- main.tf:\n%s", filepath.Base(bin), strings.Join(args, " "), err, stdout.String(), stderr.String(), src)
		}
		return stdout.Bytes()
	}
	tf("init", "-input=false", "-no-color")
	tf("validate", "-no-color")
	tf("apply", "-input=false", "-no-color", "-auto-approve")

	var outputs map[string]struct {
		Value any `json:"value"`
	}
	dec := json.NewDecoder(bytes.NewReader(tf("output", "-json")))
	dec.UseNumber()
	if err := dec.Decode(&outputs); err != nil {
		t.Fatal(err)
	}
	got := map[string]any{}
	for name, o := range outputs {
		got[name] = o.Value
	}
	want := map[string]any{"neighbour__s00": inputs["s05"]}
	for name, v := range inputs {
		want[OutputName("victim", name)] = v
	}
	// Terraform writes 1e3 as 1000.
	want["victim__nested"] = map[string]any{"${a}": []any{map[string]any{"%{b}": strs[len(strs)-1]}, json.Number("1000"), true, nil}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Terraform read the rendered values as other values (-contract +terraform):\n%s\n--- main.tf:\n%s", diff, src)
	}
}
