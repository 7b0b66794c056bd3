package jsonschema_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
	"github.com/nova-platform/nova/runner/jsonschema/parity"
)

const (
	contractSchemaFile = "../../stages/schema/contract.schema.json"
	contractSchemaURL  = "https://nova-platform.dev/schemas/contract/v1.json"
)

// pcrFixtures are records of every engine and result, as runs produce
// them, with and without the optional fields.
func pcrFixtures(t testing.TB) []any {
	at := time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC)
	base := runner.PCR{ContractID: "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", EvaluatedAt: at, Severity: runner.High, Result: runner.PCRFail}
	var out []any
	for _, p := range []runner.PCR{
		{Engine: runner.EngineCheckov, RuleID: "checkov.CKV_AWS_20", Message: "bucket is public", ResourceRef: "aws_s3_bucket.b", Evidence: json.RawMessage(`{"file":"plan.json"}`)},
		{Engine: runner.EngineRego, RuleID: "nova.tags.required", Message: "tags missing", ResourceRef: "contract:/inputs"},
		{Engine: runner.EngineKyverno, RuleID: "kyverno.require-labels", Message: "no labels", Evidence: json.RawMessage(`{"reason":"POLICY_ENGINE_ERROR","n":1.5}`)},
		{Engine: runner.EngineNFR, RuleID: "nfr.availability", Message: "99.9 met", Severity: runner.Info, Result: runner.PCRPass},
		{Engine: runner.EngineCheckov, RuleID: string(runner.PolicyResultInvalid), Message: "checkov returned an invalid record", Result: runner.PCRError},
	} {
		p.ContractID, p.EvaluatedAt = base.ContractID, base.EvaluatedAt
		if p.Severity == "" {
			p.Severity = base.Severity
		}
		if p.Result == "" {
			p.Result = base.Result
		}
		out = append(out, decode(t, mustJSON(t, p)))
	}
	return out
}

// contractFixtures are contracts as JSON values; the YAML fixtures, read
// as the contract stage reads them, are compared in stages/schema.
var contractFixtures = []string{
	`{"apiVersion":"nova/v1","id":"3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90","stack":"hello","environment":"dev"}`,
	`{"apiVersion":"nova/v1","id":"3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90","stack":"hello","environment":"prod",
	  "inputs":{"audience":"customers","repeat":3},
	  "nfr":{"availability":99.95,"rpoMinutes":15,"rtoMinutes":60,"encryptionAtRest":true,"backups":true,"multiAz":true,
	         "latencyP99Ms":250,"monthlyCostCeiling":1200.50,"dataClassification":"confidential"},
	  "validation":{"unitTests":"reports/unit.xml","e2eSuite":"reports/e2e.xml","loadTest":"reports/load.xml"},
	  "runbook":"https://runbooks.example.com/hello","dashboard":"https://grafana.example.com/d/hello","oncall":"team-hello",
	  "drDrillRef":"DR-42","supersedes":"7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0",
	  "backend":{"type":"s3","config":{"bucket":"state"}},
	  "profile":"agentic","naturalLanguageIntent":"Greet.","confidenceAtSubmission":0.82,"agentTrace":"traces/1.jsonl"}`,
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func decode(t testing.TB, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

type paritySchema struct {
	name, url string
	schema    []byte
	fixtures  []any
}

func paritySchemas(t testing.TB) []paritySchema {
	contract, err := os.ReadFile(contractSchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	var contracts []any
	for _, c := range contractFixtures {
		contracts = append(contracts, decode(t, []byte(c)))
	}
	return []paritySchema{
		{"pcr", jsonschema.PCRSchemaURL, jsonschema.PCRSchema, pcrFixtures(t)},
		{"contract", contractSchemaURL, contract, contracts},
	}
}

// TestParityWithTheLibrary: over the fixtures and every mutation of them,
// Nova's validator and the library it replaced agree on pass or fail, on
// each violation's kind and location, and on its message.
func TestParityWithTheLibrary(t *testing.T) {
	for _, ps := range paritySchemas(t) {
		t.Run(ps.name, func(t *testing.T) {
			c, err := parity.New(ps.url, ps.schema)
			if err != nil {
				t.Fatal(err)
			}
			shape, err := parity.ShapeOf(ps.schema)
			if err != nil {
				t.Fatal(err)
			}
			values, docs := shape.Values(), []any{}
			for _, fx := range ps.fixtures {
				docs = append(append(docs, fx), shape.Mutations(fx, values)...)
			}
			tally, err := c.CompareAll(docs)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d documents valid, %d invalid, violation kinds %v", tally.Valid, tally.Invalid, tally.Kinds)
			// A corpus that never passes, or never trips a keyword, would
			// prove nothing about that keyword.
			if tally.Valid == 0 || tally.Invalid == 0 {
				t.Errorf("corpus is one-sided: %d valid, %d invalid", tally.Valid, tally.Invalid)
			}
			for _, k := range usedKinds[ps.name] {
				if !tally.Kinds[k] {
					t.Errorf("no document violates %s", k)
				}
			}
		})
	}
}

// usedKinds are the kinds of violation each schema can produce.
var usedKinds = map[string][]string{
	"pcr":      {"type", "enum", "format", "required", "additionalProperties", "pattern", "minLength", "maxLength"},
	"contract": {"type", "const", "enum", "format", "required", "additionalProperties", "propertyNames", "pattern", "minLength", "maxLength", "minimum", "maximum", "exclusiveMinimum"},
}

// FuzzParity feeds any JSON document to both validators, against both
// schemas.
func FuzzParity(f *testing.F) {
	schemas := paritySchemas(f)
	var checkers []*parity.Checker
	for _, ps := range schemas {
		c, err := parity.New(ps.url, ps.schema)
		if err != nil {
			f.Fatal(err)
		}
		checkers = append(checkers, c)
		for _, fx := range ps.fixtures {
			f.Add(mustJSON(f, fx))
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec := json.NewDecoder(bytes.NewReader(data))
		dec.UseNumber()
		var doc any
		if dec.Decode(&doc) != nil {
			return
		}
		for _, c := range checkers {
			if _, err := c.Compare(doc); err != nil && !errors.Is(err, parity.ErrOutOfDomain) {
				t.Fatal(err)
			}
		}
	})
}

// TestNovaDoesNotLinkTheLibrary: the library stays a test dependency. Its
// init compiles five drafts' meta-schemas on every start of nova, which is
// what this package exists to avoid.
func TestNovaDoesNotLinkTheLibrary(t *testing.T) {
	out, err := exec.CommandContext(t.Context(), "go", "list", "-deps", "../../action").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/santhosh-tekuri/jsonschema") || strings.HasPrefix(pkg, "golang.org/x/text/message") {
			t.Errorf("the nova binary links %s", pkg)
		}
	}
}

// syntheticSchema uses every supported keyword in the forms Nova's own
// schemas do not (yet): numeric and structured const and enum, integer,
// null, boolean and array types, a chain of $ref, an additionalProperties
// schema, propertyNames with a length.
const syntheticSchema = `{
  "$schema": "https://json-schema.org/draft/2020-12/schema",
  "$id": "https://example.com/synthetic.json",
  "type": "object",
  "required": ["a", "b", "c"],
  "properties": {
    "a": {"const": 1},
    "b": {"const": {"x": [1, "y", null, true]}},
    "c": {"enum": [1.5, "s", null, false, [1, 2], {"k": 2}]},
    "d": {"enum": [2]},
    "i": {"type": "integer", "minimum": -3, "maximum": 1e3, "exclusiveMinimum": -3.5},
    "n": {"type": "null"},
    "t": {"type": "boolean"},
    "l": {"type": "array"},
    "r": {"$ref": "#/$defs/outer"},
    "m": {"type": "object", "additionalProperties": {"$ref": "#/$defs/inner"}, "propertyNames": {"minLength": 2, "maxLength": 3}}
  },
  "$defs": {
    "outer": {"$ref": "#/$defs/inner", "pattern": "^a"},
    "inner": {"type": "string", "minLength": 1, "format": "uuid"}
  }
}`

// TestParityBeyondNovasSchemas: the validator agrees with the library on
// the forms of each keyword that Nova's schemas do not use today, so a
// schema change that starts using one is already covered; and on values
// built in Go rather than decoded from JSON.
func TestParityBeyondNovasSchemas(t *testing.T) {
	c, err := parity.New("https://example.com/synthetic.json", []byte(syntheticSchema))
	if err != nil {
		t.Fatal(err)
	}
	shape, err := parity.ShapeOf([]byte(syntheticSchema))
	if err != nil {
		t.Fatal(err)
	}
	base := decode(t, []byte(`{"a":1,"b":{"x":[1,"y",null,true]},"c":[1,2],"d":2,"i":5,"n":null,"t":true,"l":[],
		"r":"a7f1e2d3-4b5a-4968-8776-a5b4c3d2e1f0","m":{"ab":"7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0"}}`))
	values := append(shape.Values(),
		json.Number("1.0"), json.Number("1e0"), json.Number("10e-1"), json.Number("1.5"), json.Number("15e-1"),
		map[string]any{"x": []any{json.Number("1.0"), "y", nil, true}}, map[string]any{"x": []any{1, "y", nil}},
		map[string]any{"k": json.Number("2.0")}, []any{json.Number("1"), json.Number("2.0")}, []any{2, 1},
		1, int8(-3), uint64(1000), int64(-4), 2.0, 1.5, float32(1.5), 999.9999999999999, -3.4999999999999996,
	)
	tally, err := c.CompareAll(append([]any{base}, shape.Mutations(base, values)...))
	if err != nil {
		t.Fatal(err)
	}
	if tally.Valid == 0 || tally.Invalid == 0 {
		t.Errorf("corpus is one-sided: %d valid, %d invalid", tally.Valid, tally.Invalid)
	}
}
