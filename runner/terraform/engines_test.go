package terraform

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/terraform/terraformtest"
)

const passphrase = "correct horse battery staple"

func encrypted() *runner.Backend {
	return &runner.Backend{Type: "local", Encryption: &runner.StateEncryption{KeyProvider: runner.KeyProviderPBKDF2}}
}

// TestOptionsRunTheContractsEngine: the contract's engine picks the binary;
// a contract whose engine has no binary, or asks Terraform to encrypt, or
// encrypts without a usable passphrase, is refused with its reason before
// anything runs.
func TestOptionsRunTheContractsEngine(t *testing.T) {
	both := Engine{Terraform: Options{ExecPath: "/bin/terraform"}, OpenTofu: "/bin/tofu", StatePassphrase: passphrase}
	noTofu := Engine{Terraform: Options{ExecPath: "/bin/terraform"}}
	short := both
	short.StatePassphrase = "short"
	noKey := both
	noKey.StatePassphrase = ""
	tests := []struct {
		name     string
		engine   Engine
		contract runner.Contract
		wantPath string
		want     runner.Reason
		mention  string
	}{
		{"no engine named is terraform", both, runner.Contract{}, "/bin/terraform", "", ""},
		{"terraform", both, runner.Contract{Engine: runner.EngineTerraform}, "/bin/terraform", "", ""},
		{"opentofu", both, runner.Contract{Engine: runner.EngineOpenTofu}, "/bin/tofu", "", ""},
		{"opentofu without a binary", noTofu, runner.Contract{Engine: runner.EngineOpenTofu}, "", runner.TerraformNotFound, "no tofu binary was found: put tofu on PATH or pass --tofu"},
		{"terraform without a binary", Engine{OpenTofu: "/bin/tofu"}, runner.Contract{}, "", runner.TerraformNotFound, "no terraform binary"},
		{"an engine Nova does not run", both, runner.Contract{Engine: "pulumi"}, "", runner.ConfigInvalid, "pulumi"},
		{"encrypted on opentofu", both, runner.Contract{Engine: runner.EngineOpenTofu, Backend: encrypted()}, "/bin/tofu", "", ""},
		{"encrypted on terraform", both, runner.Contract{Backend: encrypted()}, "", runner.StateEncryptionUnsupported, "use engine: opentofu"},
		{"encrypted with a short passphrase", short, runner.Contract{Engine: runner.EngineOpenTofu, Backend: encrypted()}, "", runner.StateEncryptionKeyMissing, "too short"},
		{"encrypted without a passphrase", noKey, runner.Contract{Engine: runner.EngineOpenTofu, Backend: encrypted()}, "", runner.StateEncryptionKeyMissing, "is empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := tt.engine.options(&tt.contract)
			if tt.want != "" {
				if runner.ReasonOf(err) != tt.want || !strings.Contains(err.Error(), tt.mention) {
					t.Fatalf("options: %v, want %s mentioning %q", err, tt.want, tt.mention)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if opts.ExecPath != tt.wantPath || opts.Engine != tt.contract.EngineName() {
				t.Errorf("runs %s as %s, want %s as %s", opts.ExecPath, opts.Engine, tt.wantPath, tt.contract.EngineName())
			}
			if (opts.keyProvider != "") != tt.contract.Encrypted() {
				t.Errorf("key provider %q for a contract encrypted: %t", opts.keyProvider, tt.contract.Encrypted())
			}
			if strings.Contains(opts.keyProvider, passphrase) && tt.contract.EngineName() != runner.EngineOpenTofu {
				t.Error("the passphrase goes to an engine that cannot use it")
			}
		})
	}
}

// TestKeyProviderIsALiteral: whatever the passphrase holds, the key
// provider block tofu is given parses to exactly one pbkdf2 block whose
// passphrase is that string, so no passphrase can add configuration or
// an interpolation.
func TestKeyProviderIsALiteral(t *testing.T) {
	for _, p := range []string{passphrase, `x" } key_provider "pbkdf2" "evil" { passphrase = "0123456789abcdef`, "${var.secret}-and-%{ if true }more%{ endif }", "line\nbreak\ttab\\\"quote\"0123456789", "\u2028\ufeff unicode 0123456789"} {
		block, err := keyProvider(p)
		if err != nil {
			t.Fatal(err)
		}
		f, diags := hclsyntax.ParseConfig([]byte(block), "TF_ENCRYPTION", hcl.InitialPos)
		if diags.HasErrors() {
			t.Fatalf("%q: the block does not parse: %s\n%s", p, diags, block)
		}
		body := f.Body.(*hclsyntax.Body)
		if len(body.Blocks) != 1 || len(body.Attributes) != 0 {
			t.Fatalf("%q: %d blocks, %d attributes:\n%s", p, len(body.Blocks), len(body.Attributes), block)
		}
		b := body.Blocks[0]
		if b.Type != "key_provider" || strings.Join(b.Labels, ".") != "pbkdf2.nova" || len(b.Body.Attributes) != 1 || len(b.Body.Blocks) != 0 {
			t.Fatalf("%q: block %s %v:\n%s", p, b.Type, b.Labels, block)
		}
		v, diags := b.Body.Attributes["passphrase"].Expr.Value(nil)
		if diags.HasErrors() || v.AsString() != p {
			t.Errorf("passphrase reads back as %#v (%s), want %q", v, diags, p)
		}
	}
}

// TestEnvironmentKeepsTheKeyProviderNovas: a TF_ENCRYPTION inherited from
// the runner never reaches the engine; the one Nova sets for an encrypted
// contract does.
func TestEnvironmentKeepsTheKeyProviderNovas(t *testing.T) {
	dir := t.TempDir()
	seen := filepath.Join(dir, "seen")
	tofu := filepath.Join(dir, "tofu")
	script := "#!/bin/sh\nif [ \"$1\" = version ]; then echo '{\"terraform_version\":\"1.12.6\"}'; exit 0; fi\nprintf '%s' \"${TF_ENCRYPTION-unset}\" > " + seen + "\n"
	if err := os.WriteFile(tofu, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	inherited := map[string]string{"PATH": os.Getenv("PATH"), "TF_ENCRYPTION": `key_provider "pbkdf2" "nova" { passphrase = "the runner's own key" }`}
	e := &Engine{OpenTofu: tofu, Terraform: Options{Env: inherited}, StatePassphrase: passphrase}
	for _, tt := range []struct {
		name     string
		contract runner.Contract
		want     string
	}{
		{"plaintext contract", runner.Contract{Engine: runner.EngineOpenTofu}, "unset"},
		{"encrypted contract", runner.Contract{Engine: runner.EngineOpenTofu, Backend: encrypted()}, "key_provider \"pbkdf2\" \"nova\" {\n  passphrase = \"" + passphrase + "\"\n}\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := e.options(&tt.contract)
			if err != nil {
				t.Fatal(err)
			}
			ws, err := New(t.TempDir(), opts)
			if err != nil {
				t.Fatal(err)
			}
			if err := ws.Init(t.Context(), nil); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(seen)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("tofu saw TF_ENCRYPTION %q, want %q", got, tt.want)
			}
		})
	}
}

// TestEngineVersionHoldsTheBinaryToTheContract: the change is named by the
// contract's engine at the binary's exact version, once the binary is one
// Nova runs and the contract's engineVersion allows it.
func TestEngineVersionHoldsTheBinaryToTheContract(t *testing.T) {
	calls := filepath.Join(t.TempDir(), "calls")
	binary := func(v string) string {
		return versioned(t, calls, `echo '{"terraform_version":"`+v+`","platform":"linux_amd64","provider_selections":{}}'`, "exit 0")
	}
	tofu1126, tofu162, tofu150 := binary("1.12.6"), binary("1.6.2"), binary("1.5.0")
	tests := []struct {
		name     string
		tofu     string
		contract runner.Contract
		want     string
		reason   runner.Reason
	}{
		{"opentofu", tofu1126, runner.Contract{Engine: runner.EngineOpenTofu}, "opentofu 1.12.6", ""},
		{"within the constraint", tofu1126, runner.Contract{Engine: runner.EngineOpenTofu, EngineVersion: ">= 1.12, < 2"}, "opentofu 1.12.6", ""},
		{"outside the constraint", tofu1126, runner.Contract{Engine: runner.EngineOpenTofu, EngineVersion: "~> 1.11.0"}, "", runner.EngineVersionUnsatisfied},
		{"older than Nova runs", tofu150, runner.Contract{Engine: runner.EngineOpenTofu}, "", runner.TerraformNotFound},
		{"too old to encrypt", tofu162, runner.Contract{Engine: runner.EngineOpenTofu, Backend: encrypted()}, "", runner.EngineVersionUnsatisfied},
		{"old enough without encryption", tofu162, runner.Contract{Engine: runner.EngineOpenTofu}, "opentofu 1.6.2", ""},
		{"an unreadable constraint", tofu1126, runner.Contract{Engine: runner.EngineOpenTofu, EngineVersion: "newest"}, "", runner.ContractFieldValue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := &Engine{Terraform: Options{Env: map[string]string{"PATH": os.Getenv("PATH")}}, OpenTofu: tt.tofu, StatePassphrase: passphrase}
			got, err := e.EngineVersion(t.Context(), &tt.contract)
			if (err == nil) != (tt.reason == "") || (err != nil && runner.ReasonOf(err) != tt.reason) || got != tt.want {
				t.Errorf("EngineVersion = %q, %v; want %q, %s", got, err, tt.want, tt.reason)
			}
		})
	}
}

// TestCommandsAreNamedForTheEngine: a failure says which program failed,
// as the user would run it.
func TestCommandsAreNamedForTheEngine(t *testing.T) {
	tofu := scripted(t, "echo 'Error: no backend' >&2\nexit 1\n")
	ws, err := New(t.TempDir(), Options{ExecPath: tofu, Engine: runner.EngineOpenTofu, Env: map[string]string{"PATH": os.Getenv("PATH")}})
	if err != nil {
		t.Fatal(err)
	}
	err = ws.Init(t.Context(), nil)
	if runner.ReasonOf(err) != runner.TerraformInitFailed || !strings.HasPrefix(err.Error(), "tofu init: ") {
		t.Errorf("init: %v, want TERRAFORM_INIT_FAILED from `tofu init`", err)
	}
}

// TestEngineVersionNamesTheRealEngines asks each real binary: the label is
// the engine's name and the version its `version -json` reports.
func TestEngineVersionNamesTheRealEngines(t *testing.T) {
	for _, engine := range terraformtest.Engines {
		t.Run(engine, func(t *testing.T) {
			bin := terraformtest.Binary(t, engine)
			cmd := exec.CommandContext(t.Context(), bin, "version", "-json")
			cmd.Env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+os.DevNull)
			out, err := cmd.Output()
			if err != nil {
				t.Fatal(err)
			}
			var v struct {
				Version string `json:"terraform_version"`
			}
			if err := json.Unmarshal(out, &v); err != nil || v.Version == "" {
				t.Fatalf("%s version -json: %v\n%s", bin, err, out)
			}
			// A CLI config file that does not exist makes tofu warn on
			// stdout, before its JSON; the adapter's environment keeps
			// that from any command.
			env := map[string]string{"PATH": os.Getenv("PATH"), "TF_CLI_CONFIG_FILE": filepath.Join(t.TempDir(), "missing.tfrc")}
			e := &Engine{Terraform: Options{ExecPath: bin, Env: env}, OpenTofu: bin}
			got, err := e.EngineVersion(t.Context(), &runner.Contract{Engine: engine})
			if err != nil || got != engine+" "+v.Version {
				t.Errorf("EngineVersion = %q, %v; want %q", got, err, engine+" "+v.Version)
			}
		})
	}
}
