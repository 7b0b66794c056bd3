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

// Redacted returns a copy of t with every input value removed and its type
// kept: what goes into events and evidence. Input values may hold what a
// consumer should not have written in a contract (a password the secrets
// rule is about to reject), and events are kept forever; the digest of the
// full target, recorded beside it, still binds the exact values.
func (t *TargetStack) Redacted() *TargetStack {
	out := *t
	out.Instances = make([]Instance, len(t.Instances))
	for i, in := range t.Instances {
		in.Inputs = make(map[string]Value, len(t.Instances[i].Inputs))
		for name, v := range t.Instances[i].Inputs {
			in.Inputs[name] = Value{Type: v.Type}
		}
		out.Instances[i] = in
	}
	return &out
}
