// Package rego is Nova's built-in policy engine on embedded OPA: the
// platform rules shipped in the binary (rules/*.rego) and the consumer's own
// conftest-style policies from .nova/policy/.
//
// Platform and consumer policies are compiled apart. Platform rules live in
// packages under nova.platform; a consumer package under nova is rejected
// outright, and since the consumer's modules never enter the platform
// compiler, no consumer rule can redefine, disable or even read a platform
// rule. A consumer rule can only add records of its own (ruleId prefix
// "consumer.").
package rego

import (
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"sync"
	"time"

	"github.com/nova-platform/nova/runner"
)

// Engine evaluates the platform rules and the consumer's policies. Queries
// are compiled and prepared once; Evaluate only evaluates.
type Engine struct {
	// platform is the platform rules, waiting for their compilation (New
	// starts it and does not wait).
	platform func() (*platform, error)
	consumer *consumer
}

var _ runner.PolicyEngine = (*Engine)(nil)

type options struct {
	policies           fs.FS
	policyDir          string
	namespaces         []string
	contractNamespaces []string
	consumerTimeout    time.Duration
}

// Option configures an Engine.
type Option func(*options)

// WithConsumerPolicies evaluates the .rego files under fsys as consumer
// policies; dir names them in messages (".nova/policy").
func WithConsumerPolicies(fsys fs.FS, dir string) Option {
	return func(o *options) { o.policies, o.policyDir = fsys, dir }
}

// WithConsumerTimeout bounds the evaluation of a phase's consumer
// policies (default DefaultConsumerTimeout). It is the operator's setting:
// the policies' own repository must not be able to raise it.
func WithConsumerTimeout(d time.Duration) Option {
	return func(o *options) { o.consumerTimeout = d }
}

// WithNamespaces sets which consumer packages are evaluated against the
// plan JSON after plan (conftest's --namespace, default [main]) and which
// against the contract before plan (default [contract]).
func WithNamespaces(plan, contract []string) Option {
	return func(o *options) { o.namespaces, o.contractNamespaces = plan, contract }
}

// DefaultNamespaces are conftest's default namespace for plan rules and
// Nova's for contract rules.
var (
	DefaultNamespaces         = []string{"main"}
	DefaultContractNamespaces = []string{"contract"}
)

// sharedPlatform is the platform rules compiled once per process. They are
// part of the binary, so every Engine evaluates the same ones; a run over a
// thousand contracts builds a thousand Engines (one per contract directory's
// policies) and must not compile the rules a thousand times. Sharing is safe:
// OPA treats a compiler and a prepared query as read-only once prepared, and
// documents prepared queries as safe to evaluate from many goroutines.
var sharedPlatform = sync.OnceValues(func() (*platform, error) {
	// Compiling reads nothing from outside the binary, so no caller's
	// context needs to bound it.
	return compilePlatform(context.Background())
})

// compileInBackground starts compiling the platform rules once per process.
var compileInBackground sync.Once

// New returns an engine over the platform rules and, when given, the
// consumer's policies. The platform rules compile once per process, in
// the background from the first New on: a run builds its engines before
// its first stage, and checking the contract and initialising terraform
// (which the plan stage starts as soon as the contract is resolved) go on
// meanwhile. Evaluate waits for the compilation. The rules fail to compile
// only if they are broken, which the tests rule out; Evaluate then fails
// with INTERNAL_ERROR. A consumer policy that does not compile is reported
// by Evaluate as an error record, and the platform rules still run.
func New(ctx context.Context, opts ...Option) (*Engine, error) {
	o := options{namespaces: DefaultNamespaces, contractNamespaces: DefaultContractNamespaces}
	for _, opt := range opts {
		opt(&o)
	}
	compileInBackground.Do(func() { go sharedPlatform() })
	e := &Engine{platform: sharedPlatform}
	if o.policies != nil {
		e.consumer = loadConsumer(ctx, o.policies, o.policyDir, map[runner.Phase][]string{
			runner.PostPlan: o.namespaces,
			runner.PrePlan:  o.contractNamespaces,
		})
		if o.consumerTimeout > 0 {
			e.consumer.timeout = o.consumerTimeout
		}
	}
	return e, nil
}

// Name implements runner.PolicyEngine.
func (*Engine) Name() string { return runner.EngineRego }

// Configured implements runner.PolicyEngine: the built-in engine always is.
func (*Engine) Configured() bool { return true }

// Evaluate implements runner.PolicyEngine.
func (e *Engine) Evaluate(ctx context.Context, p runner.PolicyPayload) ([]runner.PCR, error) {
	plat, err := e.platform()
	if err != nil {
		return nil, runner.Errorf(runner.InternalError, "%w", err)
	}
	in, err := inputDocument(p)
	if err != nil {
		// Not one rule ran; each says so with its own severity, so that a
		// malformed plan cannot turn the critical rules into a lesser
		// engine error. The error itself is the engine's error record.
		return plat.unevaluated(err), err
	}
	out, err := plat.evaluate(ctx, p.Phase, in)
	if err != nil {
		return nil, err
	}
	if e.consumer == nil {
		return out, nil
	}
	if e.consumer.err != nil {
		return out, e.consumer.err
	}
	return append(out, e.consumer.evaluate(ctx, p.Phase, consumerInput(p, in))...), nil
}

func mustJSON(v any) json.RawMessage {
	if v == nil {
		return nil
	}
	raw, err := json.Marshal(v)
	if err != nil {
		raw, _ = json.Marshal(map[string]any{"error": fmt.Sprintf("evidence could not be encoded: %v", err)})
	}
	return raw
}

func remarshal(v any, out any) error {
	raw, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return json.Unmarshal(raw, out)
}
