package registry

import (
	"bytes"
	"io/fs"
	"path"

	"github.com/nova-platform/nova/runner"
)

// checkTerraform compares module.yaml with what the module's Terraform code
// actually declares. Parsing HCL needs no provider, so this runs anywhere.
func checkTerraform(fsys fs.FS, m *Module) error {
	dir := path.Join(m.Dir, "terraform")
	if _, err := fs.Stat(fsys, dir); err != nil {
		return runner.Errorf(runner.RegistryModuleMismatch, "module %s: no terraform/ directory: %w", m.Name, err)
	}
	tm, err := readTerraformInterface(fsys, dir)
	if err != nil {
		return runner.Errorf(runner.RegistryTerraformBroken, "module %s: %w", m.Name, err)
	}
	mismatch := func(format string, a ...any) error {
		return runner.Errorf(runner.RegistryModuleMismatch, "module %s: "+format, append([]any{m.Name}, a...)...)
	}
	for _, in := range m.Inputs {
		v, ok := tm.Variables[in.Name]
		if !ok {
			return mismatch("input %s is not a variable in terraform/", in.Name)
		}
		tfType := v.Type
		if tfType == "" {
			tfType = "any"
		}
		t, err := ParseType(tfType)
		if err != nil {
			return mismatch("variable %s: %v", in.Name, err)
		}
		if t.String() != in.Type.String() {
			return mismatch("input %s has type %s in module.yaml but %s in terraform/", in.Name, in.Type, t)
		}
		if v.Required == in.HasDefault {
			return mismatch("input %s: module.yaml says required=%t, terraform/ says required=%t", in.Name, !in.HasDefault, v.Required)
		}
		if in.HasDefault && !sameJSON(in.Default, v.Default) {
			return mismatch("input %s: default differs between module.yaml and terraform/", in.Name)
		}
		if v.Sensitive != in.Sensitive {
			return mismatch("input %s: sensitive differs between module.yaml and terraform/", in.Name)
		}
	}
	for name := range tm.Variables {
		if _, ok := m.Input(name); !ok {
			return mismatch("variable %s in terraform/ is not an input in module.yaml", name)
		}
	}
	for _, out := range m.Outputs {
		o, ok := tm.Outputs[out.Name]
		if !ok {
			return mismatch("output %s is not an output in terraform/", out.Name)
		}
		if o.Sensitive != out.Sensitive {
			return mismatch("output %s: sensitive differs between module.yaml and terraform/", out.Name)
		}
	}
	for name := range tm.Outputs {
		if _, ok := m.Output(name); !ok {
			return mismatch("output %s in terraform/ is not an output in module.yaml", name)
		}
	}
	return nil
}

func sameJSON(a, b any) bool {
	na, errA := normalize(a)
	nb, errB := normalize(b)
	if errA != nil || errB != nil {
		return false
	}
	ca, errA := runner.Canonical(na)
	cb, errB := runner.Canonical(nb)
	return errA == nil && errB == nil && bytes.Equal(ca, cb)
}
