package runner

// TargetStack is the IR: the engine-neutral resolution of a contract into a
// tree of L1 module instances. Adapters (Terraform today) render it; nothing
// in it is engine-specific.
type TargetStack struct {
	Stack        string     `json:"stack"`
	StackVersion string     `json:"stackVersion"`
	Instances    []Instance `json:"instances"`
}

// Instance is one L1 module in the target stack. Instances are ordered
// parents before children, so renderers and readers see a stable order.
type Instance struct {
	Name    string `json:"name"`
	Module  string `json:"module"`
	Version string `json:"version"`
	// Pinned is true when the stack names the exact module version, so a
	// registry update cannot change what this contract deploys.
	Pinned bool   `json:"pinned"`
	Parent string `json:"parent,omitempty"`
	Depth  int    `json:"depth"`
	// Inputs holds literal values, already type-checked against the module.
	Inputs map[string]Value `json:"inputs,omitempty"`
	// Wires feeds inputs from other instances' outputs.
	Wires   map[string]Ref `json:"wires,omitempty"`
	Outputs []string       `json:"outputs,omitempty"`
	// SensitiveOutputs lists the outputs Terraform must keep out of plan
	// and apply output.
	SensitiveOutputs []string `json:"sensitiveOutputs,omitempty"`
}

// Value is a typed literal. Type uses Terraform's type-constraint spelling
// (string, number, bool, list(string), map(string), …).
type Value struct {
	Type  string `json:"type"`
	Value any    `json:"value"`
}

// Ref names an output of another instance.
type Ref struct {
	Instance string `json:"instance"`
	Output   string `json:"output"`
}

// Instance returns the named instance, or nil.
func (t *TargetStack) Instance(name string) *Instance {
	for i := range t.Instances {
		if t.Instances[i].Name == name {
			return &t.Instances[i]
		}
	}
	return nil
}
