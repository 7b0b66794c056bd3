package policy

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"

	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
)

// ConfigFile is where a consumer repository configures policy evaluation.
const ConfigFile = ".nova/config.yml"

// Engine names, as written in the config file and --engines.
const (
	EngineRego    = "rego"
	EngineCheckov = "checkov"
	EngineKyverno = "kyverno"
)

// Config is the policy and NFR part of .nova/config.yml, with defaults
// applied. PolicyDir and KyvernoPolicies are relative to the repository and
// may not leave it.
type Config struct {
	// Engines run in this order. Default: rego, checkov, kyverno. rego
	// runs whether listed or not (first when not): the list chooses the
	// external engines, it cannot switch off the platform rules.
	Engines []string
	// PolicyDir holds the consumer's conftest-style policies.
	PolicyDir string
	// Namespaces are evaluated against the plan JSON after plan;
	// ContractNamespaces against the contract before plan.
	Namespaces         []string
	ContractNamespaces []string
	// CheckovPath, KyvernoPath and InfracostPath name the binaries (on
	// PATH, or a path). From the file, a command name or an absolute path
	// outside the repository; flags may give any path.
	CheckovPath string
	KyvernoPath string
	// KyvernoPolicies is the directory of kyverno-json policies.
	KyvernoPolicies string
	// KyvernoPreProcess are the JMESPath expressions applied to the plan.
	KyvernoPreProcess []string
	InfracostPath     string
}

// DefaultConfig is the configuration of a repository without
// .nova/config.yml: every engine, each reporting itself skipped when its
// tool is absent.
func DefaultConfig() Config {
	return Config{
		Engines:            []string{EngineRego, EngineCheckov, EngineKyverno},
		PolicyDir:          ".nova/policy",
		Namespaces:         []string{"main"},
		ContractNamespaces: []string{"contract"},
		CheckovPath:        "checkov",
		KyvernoPath:        "kyverno-json",
		KyvernoPolicies:    ".nova/kyverno",
		KyvernoPreProcess:  []string{"resource_changes"},
		InfracostPath:      "infracost",
	}
}

// configFile is the file's shape. Unknown fields are errors: a misspelt
// engine or path must not silently fall back to a default.
type configFile struct {
	Policy struct {
		Engines            []string `yaml:"engines"`
		Dir                *string  `yaml:"dir"`
		Namespaces         []string `yaml:"namespaces"`
		ContractNamespaces []string `yaml:"contractNamespaces"`
		Checkov            struct {
			Path string `yaml:"path"`
		} `yaml:"checkov"`
		Kyverno struct {
			Path       string   `yaml:"path"`
			Policies   string   `yaml:"policies"`
			PreProcess []string `yaml:"preProcess"`
		} `yaml:"kyverno"`
	} `yaml:"policy"`
	NFR struct {
		Infracost struct {
			Path string `yaml:"path"`
		} `yaml:"infracost"`
	} `yaml:"nfr"`
}

// maxConfigBytes bounds .nova/config.yml: a few settings.
const maxConfigBytes = 1 << 20

// LoadConfig reads repoDir/.nova/config.yml; a missing file is the default
// configuration.
func LoadConfig(repoDir string) (Config, error) {
	data, err := checkout.ReadFile(repoDir, ConfigFile, maxConfigBytes)
	if errors.Is(err, fs.ErrNotExist) {
		return DefaultConfig(), nil
	}
	if err != nil {
		return Config{}, runner.Errorf(runner.PolicyConfigInvalid, "reading %s: %w", ConfigFile, err)
	}
	return parseConfig(data, repoDir)
}

// ParseConfig reads the contents of a config file. It cannot know where
// the repository is: LoadConfig also refuses tool paths inside it.
func ParseConfig(data []byte) (Config, error) {
	return parseConfig(data, "")
}

func parseConfig(data []byte, repoDir string) (Config, error) {
	var f configFile
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, runner.Errorf(runner.PolicyConfigInvalid, "%s: %w", ConfigFile, err)
	}
	for _, tool := range []struct{ field, path string }{
		{"policy.checkov.path", f.Policy.Checkov.Path},
		{"policy.kyverno.path", f.Policy.Kyverno.Path},
		{"nfr.infracost.path", f.NFR.Infracost.Path},
	} {
		if err := checkToolPath(tool.field, tool.path, repoDir); err != nil {
			return Config{}, err
		}
	}
	c := DefaultConfig()
	if f.Policy.Engines != nil {
		c.Engines = f.Policy.Engines
	}
	if f.Policy.Dir != nil {
		c.PolicyDir = *f.Policy.Dir
	}
	if f.Policy.Namespaces != nil {
		c.Namespaces = f.Policy.Namespaces
	}
	if f.Policy.ContractNamespaces != nil {
		c.ContractNamespaces = f.Policy.ContractNamespaces
	}
	c.CheckovPath = or(f.Policy.Checkov.Path, c.CheckovPath)
	c.KyvernoPath = or(f.Policy.Kyverno.Path, c.KyvernoPath)
	c.KyvernoPolicies = or(f.Policy.Kyverno.Policies, c.KyvernoPolicies)
	if f.Policy.Kyverno.PreProcess != nil {
		c.KyvernoPreProcess = f.Policy.Kyverno.PreProcess
	}
	c.InfracostPath = or(f.NFR.Infracost.Path, c.InfracostPath)
	if err := c.Validate(); err != nil {
		return Config{}, err
	}
	return c, nil
}

var namespace = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*(\.[a-zA-Z_][a-zA-Z0-9_]*)*$`)
})

// Validate checks a configuration, from the file or after flags changed it.
func (c Config) Validate() error {
	bad := func(format string, a ...any) error {
		return runner.Errorf(runner.PolicyConfigInvalid, format, a...)
	}
	for i, e := range c.Engines {
		if e != EngineRego && e != EngineCheckov && e != EngineKyverno {
			return bad("policy.engines: unknown engine %q (want rego, checkov or kyverno)", e)
		}
		if slices.Contains(c.Engines[:i], e) {
			return bad("policy.engines: %q is listed twice", e)
		}
	}
	for field, p := range map[string]string{"policy.dir": c.PolicyDir, "policy.kyverno.policies": c.KyvernoPolicies} {
		if p != "" && !filepath.IsLocal(p) {
			return bad("%s: %q must be a relative path inside the repository", field, p)
		}
	}
	for _, ns := range append(slices.Clone(c.Namespaces), c.ContractNamespaces...) {
		if !namespace().MatchString(ns) {
			return bad("policy namespace %q is not a Rego package name", ns)
		}
	}
	return nil
}

// checkToolPath refuses a tool path from the config file that could name
// a file of the checkout: the file comes with the change under review, and
// a pull request must not be able to make nova run a program it adds. A
// command name is looked up on PATH (which never resolves relative to the
// working directory, exec.ErrDot); an absolute path must lead outside the
// repository, symlinks followed. Flags are the operator's, not the
// repository's, and are not checked here.
func checkToolPath(field, p, repoDir string) error {
	if p == "" || (!strings.ContainsAny(p, `/\`) && p != "." && p != "..") {
		return nil
	}
	bad := runner.Errorf(runner.PolicyConfigInvalid, "%s: %q must be a command name on PATH or an absolute path outside the repository", field, p)
	if !filepath.IsAbs(p) {
		return bad
	}
	if repoDir == "" {
		return nil
	}
	repo, err := filepath.Abs(repoDir)
	if err != nil {
		return runner.Errorf(runner.PolicyConfigInvalid, "%s: locating the repository: %w", field, err)
	}
	if within(repo, filepath.Clean(p)) {
		return bad
	}
	realRepo, err1 := filepath.EvalSymlinks(repo)
	realPath, err2 := filepath.EvalSymlinks(p)
	if err1 == nil && err2 == nil && within(realRepo, realPath) {
		return bad
	}
	return nil
}

// within reports whether path is dir or below it; both are absolute and
// clean.
func within(dir, path string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && filepath.IsLocal(rel)
}

func or(v, def string) string {
	if v != "" {
		return v
	}
	return def
}
