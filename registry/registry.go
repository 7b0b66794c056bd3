// Package registry loads Nova's module registry — L1 modules (one Terraform
// module each, described by module.yaml) and L2 stacks composing them — and
// resolves a contract into the target stack the adapters render.
//
// The registry shipped with Nova is embedded in the binary; platform teams
// point --registry at their own directory of the same layout:
//
//	modules/<name>/module.yaml     the module's typed interface
//	modules/<name>/terraform/      the real Terraform module
//	stacks/<name>.yaml             an L2 stack
package registry

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/nova-platform/nova/runner"
)

//go:embed modules stacks
var embedded embed.FS

// Embedded is the registry shipped with this build of Nova.
func Embedded() fs.FS { return embedded }

// The patterns are compiled on first use rather than at init, which every
// command pays for, `nova version` included; so are the other packages'.
var (
	entryName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]{0,62}$`) })
	fieldName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]{0,62}$`) })
	semver    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`)
	})
)

// Registry is a loaded, checked registry.
type Registry struct {
	fsys    fs.FS
	modules map[string]*Module
	stacks  map[string]*Stack
}

// Module is an L1 module: one Terraform module with a typed interface.
type Module struct {
	Name         string
	Version      string
	Description  string
	Inputs       []Input
	Outputs      []Output
	Capabilities []Capability
	// Dir is the module's directory inside the registry file system.
	Dir string
}

// Input is a typed input of a module or stack.
type Input struct {
	Name        string
	Type        Type
	Description string
	// HasDefault distinguishes an optional input whose default is null from
	// a required one.
	HasDefault bool
	Default    any
	Sensitive  bool
}

// Output is a typed output of a module.
type Output struct {
	Name        string
	Type        Type
	Description string
	Sensitive   bool
}

// Capability declares that the module can satisfy a non-functional
// requirement, and which input must hold which value for it to do so.
type Capability struct {
	NFR         string `yaml:"nfr" json:"nfr"`
	Input       string `yaml:"input,omitempty" json:"input,omitempty"`
	Equals      any    `yaml:"equals,omitempty" json:"equals,omitempty"`
	NotEmpty    bool   `yaml:"notEmpty,omitempty" json:"notEmpty,omitempty"`
	Provides    any    `yaml:"provides,omitempty" json:"provides,omitempty"`
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
}

// Input returns the named input.
func (m *Module) Input(name string) (Input, bool) { return findInput(m.Inputs, name) }

// Output returns the named output.
func (m *Module) Output(name string) (Output, bool) {
	i := slices.IndexFunc(m.Outputs, func(o Output) bool { return o.Name == name })
	if i < 0 {
		return Output{}, false
	}
	return m.Outputs[i], true
}

func findInput(inputs []Input, name string) (Input, bool) {
	i := slices.IndexFunc(inputs, func(in Input) bool { return in.Name == name })
	if i < 0 {
		return Input{}, false
	}
	return inputs[i], true
}

// Stack is an L2 stack: instances of L1 modules, their input bindings, the
// parent/child tree and the wires between outputs and inputs.
type Stack struct {
	Name        string
	Version     string
	Description string
	Inputs      []Input
	Instances   []StackInstance
	Wires       []Wire
	// File is the stack's path inside the registry file system.
	File string
}

// StackInstance is one module instance declared by a stack.
type StackInstance struct {
	Name    string
	Module  string
	Version string
	// Inputs binds module inputs to literals; strings may hold ${input.X}
	// and ${nova.X} placeholders that resolution substitutes.
	Inputs   map[string]any
	Children []string
}

// Wire feeds a module input from another instance's output, both written
// as instance.name.
type Wire struct {
	From string `yaml:"from" json:"from"`
	To   string `yaml:"to" json:"to"`
}

// Load reads and checks a registry. Each module's module.yaml must agree
// with its Terraform variables and outputs; a registry that does not is
// rejected whole, since a half-loaded registry would resolve contracts
// against interfaces its modules do not have.
func Load(fsys fs.FS) (*Registry, error) {
	return load(fsys, true)
}

// LoadEmbedded loads the registry built into the binary. Its modules'
// Terraform is not parsed again to compare it with module.yaml: that
// comparison was made on the same bytes before they were built in
// (TestEmbeddedRegistryAgreesWithItsTerraform runs Load on them), and
// parsing every module's HCL was the larger part of loading the registry
// on every run. Everything else Load checks is still checked.
func LoadEmbedded() (*Registry, error) {
	return load(embedded, false)
}

func load(fsys fs.FS, checkTF bool) (*Registry, error) {
	r := &Registry{fsys: fsys, modules: map[string]*Module{}, stacks: map[string]*Stack{}}
	moduleDirs, err := fs.ReadDir(fsys, "modules")
	if err != nil && !isNotExist(err) {
		return nil, runner.Errorf(runner.RegistryInvalid, "reading registry modules: %w", err)
	}
	for _, d := range moduleDirs {
		if !d.IsDir() {
			continue
		}
		m, err := loadModule(fsys, path.Join("modules", d.Name()), checkTF)
		if err != nil {
			return nil, err
		}
		if m.Name != d.Name() {
			return nil, runner.Errorf(runner.RegistryInvalid, "module %s: name %q does not match its directory", m.Dir, m.Name)
		}
		r.modules[m.Name] = m
	}
	stackFiles, err := fs.ReadDir(fsys, "stacks")
	if err != nil && !isNotExist(err) {
		return nil, runner.Errorf(runner.RegistryInvalid, "reading registry stacks: %w", err)
	}
	for _, f := range stackFiles {
		if f.IsDir() || !strings.HasSuffix(f.Name(), ".yaml") {
			continue
		}
		s, err := loadStack(fsys, path.Join("stacks", f.Name()))
		if err != nil {
			return nil, err
		}
		if s.Name+".yaml" != f.Name() {
			return nil, runner.Errorf(runner.RegistryInvalid, "stack %s: name %q does not match its file name", s.File, s.Name)
		}
		if _, clash := r.modules[s.Name]; clash {
			return nil, runner.Errorf(runner.RegistryDuplicate, "stack %s: a module is already named %q; a contract's stack would be ambiguous", s.File, s.Name)
		}
		r.stacks[s.Name] = s
	}
	return r, nil
}

// Module returns the named L1 module.
func (r *Registry) Module(name string) (*Module, bool) {
	m, ok := r.modules[name]
	return m, ok
}

// Stack returns the named L2 stack.
func (r *Registry) Stack(name string) (*Stack, bool) {
	s, ok := r.stacks[name]
	return s, ok
}

// Modules returns every module, by name.
func (r *Registry) Modules() []*Module {
	out := make([]*Module, 0, len(r.modules))
	for _, m := range r.modules {
		out = append(out, m)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Stacks returns every stack, by name.
func (r *Registry) Stacks() []*Stack {
	out := make([]*Stack, 0, len(r.stacks))
	for _, s := range r.stacks {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// StackModules names the L1 modules a contract whose stack is name
// deploys, in instance order without repeats: the stack's modules, or the
// module itself when name is an L1 module. It needs no contract, since a
// stack's instances are fixed, so a change to a module can be traced to
// every contract it reaches without resolving any of them. ok is false when
// the registry has no such stack or module.
func (r *Registry) StackModules(name string) (modules []string, ok bool) {
	s, ok := r.stackFor(name)
	if !ok {
		return nil, false
	}
	for _, inst := range s.Instances {
		if !slices.Contains(modules, inst.Module) {
			modules = append(modules, inst.Module)
		}
	}
	return modules, true
}

// TerraformFS returns the module's Terraform directory, which adapters copy
// next to the root module they render.
func (r *Registry) TerraformFS(m *Module) (fs.FS, error) {
	sub, err := fs.Sub(r.fsys, path.Join(m.Dir, "terraform"))
	if err != nil {
		return nil, fmt.Errorf("opening terraform dir of module %s: %w", m.Name, err)
	}
	return sub, nil
}

func isNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }
