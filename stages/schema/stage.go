// Package schema is the first stage: it loads .nova/contract.yml, validates
// it against the embedded JSON Schema and the per-environment rules, and
// resolves it through the registry into the target stack every later stage
// works on.
package schema

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/checkout"
)

// DefaultContractPath is where a consumer repository keeps its contract.
const DefaultContractPath = ".nova/contract.yml"

// Stage validates the contract and resolves its target stack.
type Stage struct {
	reg *registry.Registry
}

var _ runner.Stage = (*Stage)(nil)

// New returns the schema stage resolving against reg.
func New(reg *registry.Registry) *Stage { return &Stage{reg: reg} }

// Name implements runner.Stage.
func (*Stage) Name() string { return "schema" }

// Data is what the stage records in its event. The target is redacted
// (input types, no values): events are kept forever and must not carry a
// secret someone wrote into a contract; TargetDigest binds the values.
type Data struct {
	ContractID     string              `json:"contractId"`
	Environment    runner.Environment  `json:"environment"`
	ContractDigest string              `json:"contractDigest"`
	TargetDigest   string              `json:"targetDigest"`
	Target         *runner.TargetStack `json:"target"`
}

// Run implements runner.Stage.
func (s *Stage) Run(_ context.Context, st *runner.State) (runner.Result, error) {
	rel := st.ContractPath
	if rel == "" {
		rel = DefaultContractPath
	}
	data, err := readContract(st.Dir, rel)
	if runner.ReasonOf(err) == runner.ContractNotFound && st.DeletedContract != nil {
		data, err = st.DeletedContract, nil
	}
	if err != nil {
		var le *loadError
		if errors.As(err, &le) {
			return failed(rel, le), nil
		}
		return runner.Result{}, err
	}
	c, doc, findings := parse(data, rel, st.EnvOverride)
	if len(findings) > 0 {
		// Later stages' events name the contract when its id could be read,
		// so a rejected contract's failure joins its own chain.
		if c != nil {
			st.Contract = c
		}
		return runner.Result{Verdict: runner.Fail, Summary: summarize(findings), Findings: findings}, nil
	}
	declaredEngine := c.Engine
	if e := st.EngineOverride; e != "" && e != c.EngineName() {
		// --engine replaces the engine for this run as --env replaces the
		// environment: every later stage, the contract digest and so the
		// plan digest see the engine that runs.
		c.Engine = e
	}
	st.Contract = c
	if c.Encrypted() && c.EngineName() != runner.EngineOpenTofu {
		// Terraform has no state encryption: planning would write the
		// state the contract asks to keep encrypted in plaintext.
		f := doc.at(rel, "/backend/encryption", runner.Finding{Reason: runner.StateEncryptionUnsupported, Field: "/backend/encryption",
			Message: fmt.Sprintf("backend.encryption needs engine: opentofu; %s cannot encrypt state", c.EngineName())})
		return runner.Result{Verdict: runner.Fail, Summary: summarize([]runner.Finding{f.Finding}), Findings: []runner.Finding{f.Finding}}, nil
	}
	target, findings := s.reg.Resolve(c)
	if len(findings) > 0 {
		for i, f := range findings {
			findings[i].Location = doc.at(rel, f.Field, f).Location
		}
		return runner.Result{Verdict: runner.Fail, Summary: summarize(findings), Findings: findings}, nil
	}
	digest, err := runner.Digest(c)
	if err != nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "hashing contract: %w", err)
	}
	targetDigest, err := runner.Digest(target)
	if err != nil {
		return runner.Result{}, runner.Errorf(runner.InternalError, "hashing target stack: %w", err)
	}
	// The contract's content as written, whichever environment --env
	// runs it in (and whichever engine --engine): the same contract
	// promoted from dev to dr.
	content := digest
	if c.Environment != c.Declared || c.Engine != declaredEngine {
		// Otherwise the contract as written is the contract that runs,
		// and one digest is both.
		written := *c
		written.Environment, written.Engine = c.Declared, declaredEngine
		if content, err = runner.Digest(written); err != nil {
			return runner.Result{}, runner.Errorf(runner.InternalError, "hashing contract: %w", err)
		}
	}
	st.ContractDigest, st.ContractContent, st.Target = digest, content, target
	return runner.Result{
		Verdict: runner.Pass,
		Summary: fmt.Sprintf("contract %s valid for %s: stack %s@%s, %d module instance(s)", c.ID, c.Environment, target.Stack, target.StackVersion, len(target.Instances)),
		Event:   runner.EventContractValidated,
		Data:    Data{ContractID: c.ID, Environment: c.Environment, ContractDigest: digest, TargetDigest: targetDigest, Target: target.Redacted()},
	}, nil
}

// Parse validates contract bytes; file names the contract in locations. A
// non-empty envOverride replaces the contract's environment before any rule
// is checked. On findings the returned contract is nil, except that a
// contract whose id and environment could be read is returned with just
// those set, so the failure can be recorded against it.
func Parse(data []byte, file string, envOverride runner.Environment) (*runner.Contract, []runner.Finding) {
	c, _, findings := parse(data, file, envOverride)
	return c, findings
}

func parse(data []byte, file string, envOverride runner.Environment) (*runner.Contract, *document, []runner.Finding) {
	doc, err := parseYAML(data)
	if err != nil {
		var le *loadError
		errors.As(err, &le)
		return nil, nil, failed(file, le).Findings
	}
	root, isMap := doc.value.(map[string]any)
	declared := ""
	if isMap {
		declared, _ = root["environment"].(string)
	}
	if isMap && envOverride != "" {
		// --env may make a run stricter, never looser: run as dev, a prod
		// contract would skip its approval and plan against its state.
		if own, _ := root["environment"].(string); envOverride.Valid() && runner.Environment(own).Guard() > envOverride.Guard() {
			f := doc.at(file, "/environment", runner.Finding{Reason: runner.ContractEnvOverrideLowers, Field: "/environment",
				Message: fmt.Sprintf("--env %s would run a %s contract with less protection than its own environment", envOverride, own)})
			return identity(root), doc, []runner.Finding{f.Finding}
		}
		root["environment"] = string(envOverride)
	}
	findings, err := validateSchema(doc, file)
	if err != nil {
		return nil, nil, []runner.Finding{{Reason: runner.ReasonOf(err), Message: err.Error()}}
	}
	if len(findings) == 0 {
		findings = checkRules(doc, file, envOverride != "")
	}
	if len(findings) > 0 {
		return identity(root), doc, findings
	}
	raw, err := json.Marshal(doc.value)
	if err != nil {
		return nil, nil, []runner.Finding{{Reason: runner.InternalError, Message: fmt.Sprintf("re-encoding contract: %v", err)}}
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	dec.DisallowUnknownFields()
	var c runner.Contract
	if err := dec.Decode(&c); err != nil {
		// The schema and the Go type disagree: a Nova bug, not the author's.
		return nil, nil, []runner.Finding{{Reason: runner.InternalError, Message: fmt.Sprintf("decoding validated contract: %v", err)}}
	}
	c.Declared = runner.Environment(declared)
	return &c, doc, nil
}

// identity returns a contract holding only a well-formed id and
// environment, or nil.
func identity(root map[string]any) *runner.Contract {
	id, _ := root["id"].(string)
	env, _ := root["environment"].(string)
	if id == "" || !runner.Environment(env).Valid() || !validID(id) {
		return nil
	}
	return &runner.Contract{ID: id, Environment: runner.Environment(env)}
}

// readContract reads at most MaxContractBytes+1 bytes of the contract, so
// a huge file is refused without being read whole; a path or link leading
// out of the checkout, a FIFO or a device is refused before it is read.
func readContract(dir, rel string) ([]byte, error) {
	data, err := checkout.ReadFile(dir, rel, MaxContractBytes)
	switch {
	case err == nil:
		return data, nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, runner.Errorf(runner.ContractNotFound, "no contract at %s", filepath.Join(dir, rel))
	case runner.ReasonOf(err) == runner.FileTooLarge:
		return nil, &loadError{reason: runner.ContractTooLarge, msg: fmt.Sprintf("the contract is larger than %d bytes", MaxContractBytes)}
	case runner.ReasonOf(err) == runner.PathOutsideCheckout, runner.ReasonOf(err) == runner.FileNotRegular:
		return nil, err
	}
	return nil, runner.Errorf(runner.ContractUnreadable, "reading the contract: %w", err)
}

func failed(file string, le *loadError) runner.Result {
	f := runner.Finding{Reason: le.reason, Message: le.msg, Field: le.field, Location: locate(file, le.pos)}
	return runner.Result{Verdict: runner.Fail, Summary: summarize([]runner.Finding{f}), Findings: []runner.Finding{f}}
}

func summarize(fs []runner.Finding) string {
	first := fs[0]
	s := string(first.Reason)
	if first.Location != "" {
		s += " at " + first.Location
	}
	s += ": " + first.Message
	if len(fs) > 1 {
		s += fmt.Sprintf(" (and %d more)", len(fs)-1)
	}
	return s
}
