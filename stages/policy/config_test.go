package policy

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

func TestParseConfig(t *testing.T) {
	custom := DefaultConfig()
	custom.Engines = []string{"rego", "kyverno"}
	custom.PolicyDir = "policy"
	custom.Namespaces = []string{"main", "terraform.aws"}
	custom.KyvernoPath = "/opt/kyverno-json/bin/kyverno-json"
	custom.KyvernoPolicies = "policy/kyverno"
	custom.InfracostPath = "infracost-0.10"
	tests := []struct {
		name, yaml string
		want       Config
	}{
		{"empty file", "", DefaultConfig()},
		{"comments only", "# nothing configured yet\n", DefaultConfig()},
		{"every field", `
policy:
  engines: [rego, kyverno]
  dir: policy
  namespaces: [main, terraform.aws]
  kyverno:
    path: /opt/kyverno-json/bin/kyverno-json
    policies: policy/kyverno
nfr:
  infracost:
    path: infracost-0.10
`, custom},
		{"no engines at all", "policy:\n  engines: []\n", func() Config { c := DefaultConfig(); c.Engines = []string{}; return c }()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseConfig([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

func TestParseConfigRejects(t *testing.T) {
	tests := []struct{ name, yaml, mention string }{
		{"unknown field", "policy:\n  engine: [rego]\n", "engine"},
		{"unknown section", "policies:\n  dir: x\n", "policies"},
		{"unknown engine", "policy:\n  engines: [rego, opa]\n", `"opa"`},
		{"engine twice", "policy:\n  engines: [rego, rego]\n", "twice"},
		{"dir outside the repo", "policy:\n  dir: ../shared/policy\n", "inside the repository"},
		{"absolute dir", "policy:\n  dir: /etc/nova\n", "inside the repository"},
		{"bad namespace", "policy:\n  namespaces: [\"main; rm\"]\n", "not a Rego package name"},
		{"wrong type", "policy:\n  engines: rego\n", "cannot unmarshal"},
		{"relative tool path", "policy:\n  checkov:\n    path: ./evil.sh\n", "policy.checkov.path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tc.yaml))
			if runner.ReasonOf(err) != runner.PolicyConfigInvalid || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("error %v, want POLICY_CONFIG_INVALID mentioning %q", err, tc.mention)
			}
		})
	}
}

// TestToolPathsFromTheFile: a binary the config file names is a command on
// PATH or an absolute path outside the checkout, never a file the change
// under review could add.
func TestToolPathsFromTheFile(t *testing.T) {
	repo := t.TempDir()
	outside := t.TempDir()
	link := filepath.Join(outside, "checkov-link")
	if err := os.WriteFile(filepath.Join(repo, "evil.sh"), []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(repo, "evil.sh"), link); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, field, path string
		ok                bool
	}{
		{"command name", "policy.checkov.path", "checkov", true},
		{"versioned command name", "nfr.infracost.path", "infracost-0.10", true},
		{"absolute, outside", "policy.kyverno.path", "/opt/kyverno-json/bin/kyverno-json", true},
		{"relative", "policy.checkov.path", "./evil.sh", false},
		{"relative without dot", "policy.kyverno.path", "bin/kyverno-json", false},
		{"parent", "nfr.infracost.path", "../infracost", false},
		{"dot", "policy.checkov.path", ".", false},
		{"absolute, inside", "policy.checkov.path", filepath.Join(repo, "evil.sh"), false},
		{"absolute, the checkout itself", "policy.checkov.path", repo, false},
		{"absolute, inside after ..", "nfr.infracost.path", filepath.Join(repo, "x", "..", "evil.sh"), false},
		{"absolute, outside but a link into it", "policy.checkov.path", link, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			section, rest, _ := strings.Cut(tc.field, ".")
			tool, _, _ := strings.Cut(rest, ".")
			yaml := section + ":\n  " + tool + ":\n    path: " + strconv.Quote(tc.path) + "\n"
			if err := os.MkdirAll(filepath.Join(repo, ".nova"), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(repo, ConfigFile), []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadConfig(repo)
			switch {
			case tc.ok && err != nil:
				t.Errorf("refused: %v", err)
			case !tc.ok && (runner.ReasonOf(err) != runner.PolicyConfigInvalid || !strings.Contains(err.Error(), tc.field)):
				t.Errorf("error %v, want POLICY_CONFIG_INVALID naming %s", err, tc.field)
			}
		})
	}
}

func TestLoadConfig(t *testing.T) {
	dir := t.TempDir()
	if got, err := LoadConfig(dir); err != nil || !cmp.Equal(got, DefaultConfig()) {
		t.Errorf("without a file: %+v %v, want the default", got, err)
	}
	if err := os.MkdirAll(filepath.Join(dir, ".nova"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ConfigFile), []byte("policy:\n  engines: [rego]\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := LoadConfig(dir)
	if err != nil || !cmp.Equal(got.Engines, []string{"rego"}) {
		t.Errorf("got %+v %v", got, err)
	}
}
