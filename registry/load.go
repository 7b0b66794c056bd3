package registry

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"

	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
)

type moduleFile struct {
	Name         string              `yaml:"name"`
	Version      string              `yaml:"version"`
	Description  string              `yaml:"description"`
	Inputs       ordered[fieldFile]  `yaml:"inputs"`
	Outputs      ordered[outputFile] `yaml:"outputs"`
	Capabilities []Capability        `yaml:"capabilities"`
}

type fieldFile struct {
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
	Default     any    `yaml:"default"`
	Sensitive   bool   `yaml:"sensitive"`
}

type outputFile struct {
	Type        string `yaml:"type"`
	Description string `yaml:"description"`
	Sensitive   bool   `yaml:"sensitive"`
}

type stackFile struct {
	Name        string             `yaml:"name"`
	Version     string             `yaml:"version"`
	Description string             `yaml:"description"`
	Inputs      ordered[fieldFile] `yaml:"inputs"`
	Instances   []instanceFile     `yaml:"instances"`
	Wires       []Wire             `yaml:"wires"`
}

type instanceFile struct {
	Name     string         `yaml:"name"`
	Module   string         `yaml:"module"`
	Version  string         `yaml:"version"`
	Inputs   map[string]any `yaml:"inputs"`
	Children []string       `yaml:"children"`
}

func loadModule(fsys fs.FS, dir string, checkTF bool) (*Module, error) {
	file := path.Join(dir, "module.yaml")
	var mf moduleFile
	err := decodeStrict(fsys, file, &mf)
	if err != nil {
		return nil, err
	}
	if !entryName().MatchString(mf.Name) {
		return nil, runner.Errorf(runner.RegistryInvalid, "%s: name %q must match %s", file, mf.Name, entryName())
	}
	if !semver().MatchString(mf.Version) {
		return nil, runner.Errorf(runner.RegistryVersionInvalid, "%s: version %q is not MAJOR.MINOR.PATCH", file, mf.Version)
	}
	m := &Module{Name: mf.Name, Version: mf.Version, Description: mf.Description, Capabilities: mf.Capabilities, Dir: dir}
	if m.Inputs, err = parseFields(file, mf.Inputs); err != nil {
		return nil, err
	}
	for _, name := range mf.Outputs.names {
		of := mf.Outputs.byName[name]
		if !fieldName().MatchString(name) {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: output name %q must match %s", file, name, fieldName())
		}
		t, err := ParseType(of.Type)
		if err != nil {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: output %s: %w", file, name, err)
		}
		m.Outputs = append(m.Outputs, Output{Name: name, Type: t, Description: of.Description, Sensitive: of.Sensitive})
	}
	for i := range m.Capabilities {
		c := &m.Capabilities[i]
		// Values compared with resolved inputs must have the shape those
		// have (json.Number, not YAML's int or float64), or equals: 2
		// would never match a desired_count of 2.
		if c.Equals, err = normalize(c.Equals); err != nil {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: capability %s equals: %w", file, c.NFR, err)
		}
		if c.Provides, err = normalize(c.Provides); err != nil {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: capability %s provides: %w", file, c.NFR, err)
		}
		if c.Input == "" {
			continue
		}
		in, ok := m.Input(c.Input)
		if !ok {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: capability %s names unknown input %q", file, c.NFR, c.Input)
		}
		if c.Equals != nil {
			if err := in.Type.Conforms(c.Equals); err != nil {
				return nil, runner.Errorf(runner.RegistryInvalid, "%s: capability %s equals: %v, so it could never hold", file, c.NFR, err)
			}
		}
	}
	if checkTF {
		if err := checkTerraform(fsys, m); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func loadStack(fsys fs.FS, file string) (*Stack, error) {
	var sf stackFile
	err := decodeStrict(fsys, file, &sf)
	if err != nil {
		return nil, err
	}
	if !entryName().MatchString(sf.Name) {
		return nil, runner.Errorf(runner.RegistryInvalid, "%s: name %q must match %s", file, sf.Name, entryName())
	}
	if !semver().MatchString(sf.Version) {
		return nil, runner.Errorf(runner.RegistryVersionInvalid, "%s: version %q is not MAJOR.MINOR.PATCH", file, sf.Version)
	}
	s := &Stack{Name: sf.Name, Version: sf.Version, Description: sf.Description, Wires: sf.Wires, File: file}
	if s.Inputs, err = parseFields(file, sf.Inputs); err != nil {
		return nil, err
	}
	if len(sf.Instances) == 0 {
		return nil, runner.Errorf(runner.RegistryInvalid, "%s: a stack needs at least one instance", file)
	}
	for _, inf := range sf.Instances {
		inputs := map[string]any{}
		for k, v := range inf.Inputs {
			nv, err := normalize(v)
			if err != nil {
				return nil, runner.Errorf(runner.RegistryInvalid, "%s: instance %s input %s: %w", file, inf.Name, k, err)
			}
			inputs[k] = nv
		}
		s.Instances = append(s.Instances, StackInstance{
			Name: inf.Name, Module: inf.Module, Version: inf.Version, Inputs: inputs, Children: inf.Children,
		})
	}
	return s, nil
}

// decodeStrict decodes a YAML file into v, rejecting unknown fields.
func decodeStrict(fsys fs.FS, file string, v any) error {
	data, err := fs.ReadFile(fsys, file)
	if err != nil {
		return runner.Errorf(runner.RegistryInvalid, "reading %s: %w", file, err)
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return runner.Errorf(runner.RegistryInvalid, "%s: empty file", file)
		}
		return runner.Errorf(runner.RegistryInvalid, "%s: %w", file, err)
	}
	return nil
}

// ordered is a mapping of names to T that keeps the names' order (inputs
// and outputs are listed as the file lists them) and each value's node
// (an input has a default when its key is there, even as null).
//
// It implements yaml's older Unmarshaler, whose callback decodes with the
// file's own decoder, unknown fields refused: Node.Decode, the newer
// interface's way, would accept them. Reading the order from the node of
// the same pass is what spares a second parse of every registry file.
type ordered[T any] struct {
	names  []string
	byName map[string]T
	nodes  map[string]*yaml.Node
}

func (o *ordered[T]) UnmarshalYAML(decode func(any) error) error {
	var n nodeOf
	if err := decode(&n); err != nil {
		return err
	}
	if err := decode(&o.byName); err != nil {
		return err
	}
	// An alias arrives resolved. byName's decode has refused anything but
	// a mapping.
	m := n.node
	if m == nil || m.Kind != yaml.MappingNode {
		return nil
	}
	o.nodes = make(map[string]*yaml.Node, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		name := m.Content[i].Value
		o.names = append(o.names, name)
		o.nodes[name] = m.Content[i+1]
	}
	return nil
}

// nodeOf takes the node it is decoded from. Decoding into a *yaml.Node
// from the callback above would not: the callback's decoder sees a
// pointer and decodes into the Node's fields.
type nodeOf struct{ node *yaml.Node }

func (h *nodeOf) UnmarshalYAML(n *yaml.Node) error {
	h.node = n
	return nil
}

// metaArguments are the names Terraform reserves inside a module block; an
// input of that name would be read as the meta-argument instead.
var metaArguments = map[string]bool{
	"source": true, "version": true, "providers": true, "count": true,
	"for_each": true, "depends_on": true, "lifecycle": true,
}

// IsReservedInput reports whether name cannot be a module input because
// Terraform reserves it in module blocks. The registry refuses such inputs
// when it loads a module; the renderer checks again before writing HCL.
func IsReservedInput(name string) bool { return metaArguments[name] }

func parseFields(file string, fields ordered[fieldFile]) ([]Input, error) {
	var out []Input
	for _, name := range fields.names {
		ff := fields.byName[name]
		if !fieldName().MatchString(name) {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: input name %q must match %s", file, name, fieldName())
		}
		if IsReservedInput(name) {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: input name %q is a Terraform module meta-argument", file, name)
		}
		t, err := ParseType(ff.Type)
		if err != nil {
			return nil, runner.Errorf(runner.RegistryInvalid, "%s: input %s: %w", file, name, err)
		}
		in := Input{Name: name, Type: t, Description: ff.Description, Sensitive: ff.Sensitive}
		in.HasDefault = mappingValue(fields.nodes[name], "default") != nil
		if in.HasDefault {
			if in.Default, err = normalize(ff.Default); err != nil {
				return nil, runner.Errorf(runner.RegistryInvalid, "%s: input %s default: %w", file, name, err)
			}
			if in.Default != nil {
				if err := t.Conforms(in.Default); err != nil {
					return nil, runner.Errorf(runner.RegistryInvalid, "%s: input %s default: %v", file, name, err)
				}
			}
		}
		out = append(out, in)
	}
	return out, nil
}

// normalize turns a YAML-decoded value into the shape encoding/json gives
// with UseNumber, the one shape the resolver and type checks handle.
func normalize(v any) (any, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("value cannot be represented as JSON: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var out any
	if err := dec.Decode(&out); err != nil {
		return nil, err
	}
	return out, nil
}

func mappingValue(n *yaml.Node, key string) *yaml.Node {
	if n == nil || n.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i+1]
		}
	}
	return nil
}
