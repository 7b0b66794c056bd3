package schema_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

const exampleContract = "../../examples/hello/.nova/contract.yml"

// Complete contracts for each environment. Line 4 is always environment,
// which is where a missing per-environment field is reported.
const (
	header = "apiVersion: nova/v1\n" +
		"id: 3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90\n" +
		"stack: hello\n"

	devContract = header + "environment: dev\n"

	qaContract = header + `environment: qa
inputs:
  greeting: Hello
  audience: QA
nfr:
  availability: 99.5
  rpoMinutes: 60
  rtoMinutes: 240
  dataClassification: internal
validation:
  unitTests: reports/unit.xml
  integrationTests: reports/integration.xml
  e2eSuite: reports/e2e.xml
  loadTest: reports/load.xml
`

	prodContract = header + `environment: prod
inputs:
  audience: customers
  repeat: 3
nfr:
  availability: 99.95
  rpoMinutes: 15
  rtoMinutes: 60
  encryptionAtRest: true
  backups: true
  multiAz: true
  latencyP99Ms: 250
  monthlyCostCeiling: 1200.50
  dataClassification: confidential
validation:
  unitTests: reports/unit.xml
  e2eSuite: reports/e2e.xml
  loadTest: reports/load.xml
runbook: https://runbooks.example.com/hello
dashboard: https://grafana.example.com/d/hello
oncall: team-hello
`

	agenticFields = `naturalLanguageIntent: Greet our customers three times.
confidenceAtSubmission: 0.82
agentTrace: traces/run-17.jsonl
`
)

var envLine = regexp.MustCompile(`(?m)^environment: .*$`)

var drContract = withEnv(prodContract, "dr") + "drDrillRef: https://tickets.example.com/DR-42\n"

// withEnv replaces the environment line, keeping every position.
func withEnv(c, env string) string {
	return envLine.ReplaceAllLiteralString(c, "environment: "+env)
}

// without drops every line that, trimmed, starts with one of prefixes.
func without(c string, prefixes ...string) string {
	var out []string
	for _, line := range strings.SplitAfter(c, "\n") {
		if !slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(strings.TrimSpace(line), p) }) {
			out = append(out, line)
		}
	}
	return strings.Join(out, "")
}

// aliasBomb is the "billion laughs" pattern: each level holds nine aliases
// of the previous one, so ten levels expand to 9^10 strings.
func aliasBomb() string {
	var b strings.Builder
	b.WriteString(devContract + "inputs:\n")
	b.WriteString(`  l0: &l0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]` + "\n")
	for i := 1; i < 10; i++ {
		refs := strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d,", i-1), 9), ",")
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, refs)
	}
	return b.String()
}

// deepInputs nests a mapping levels deep under inputs.
func deepInputs(levels int) string {
	var b strings.Builder
	b.WriteString(devContract + "inputs:\n")
	indent := "  "
	for range levels {
		b.WriteString(indent + "x:\n")
		indent += "  "
	}
	b.WriteString(indent + "y: 1\n")
	return b.String()
}

// where is the part of a finding a test pins down; messages are free to
// improve.
type where struct {
	Reason   runner.Reason
	Field    string
	Location string
}

type parseCase struct {
	name string
	data []byte
	env  runner.Environment
	// want is every finding's reason, in the order Parse reports them.
	want []runner.Reason
	// wantWhere, when set, pins each finding's field and location too.
	wantWhere []where
	// wantMessage must appear in the first finding's message.
	wantMessage string
	// check inspects the contract of a case without findings.
	check func(t *testing.T, c *runner.Contract)
}

func readExample(tb testing.TB) []byte {
	tb.Helper()
	data, err := os.ReadFile(exampleContract)
	if err != nil {
		tb.Fatal(err)
	}
	return data
}

// parseCases is shared by TestParse and, as its seed corpus, FuzzParse.
func parseCases(tb testing.TB) []parseCase {
	example := readExample(tb)
	const (
		envMissing = runner.ContractEnvFieldMissing
		fieldType  = runner.ContractFieldType
		fieldValue = runner.ContractFieldValue
		format     = runner.ContractFieldFormat
		unknown    = runner.ContractUnknownField
		missing    = runner.ContractFieldMissing
		yamlBad    = runner.ContractYAMLInvalid
		tag        = runner.ContractYAMLUnsupportedTag
		encoding   = runner.ContractEncodingInvalid
		empty      = runner.ContractEmpty
		agentic    = runner.ContractAgenticField
	)
	return []parseCase{
		// Valid contracts.
		{
			name: "dev example", data: example,
			check: func(t *testing.T, c *runner.Contract) {
				// The example grows with the hello stack; pin only what it
				// is an example of.
				want := []any{"nova/v1", "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", "hello", runner.Dev, json.Number("2")}
				got := []any{c.APIVersion, c.ID, c.Stack, c.Environment, c.Inputs["repeat"]}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("apiVersion, id, stack, environment, inputs.repeat (-want +got):\n%s", diff)
				}
			},
		},
		{name: "minimal dev", data: []byte(devContract)},
		{
			name: "qa with all its fields", data: []byte(qaContract),
			check: func(t *testing.T, c *runner.Contract) {
				want := &runner.Validation{UnitTests: "reports/unit.xml", IntegrationTests: "reports/integration.xml", E2ESuite: "reports/e2e.xml", LoadTest: "reports/load.xml"}
				if diff := cmp.Diff(want, c.Validation); diff != "" {
					t.Errorf("validation (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "prod with all its fields", data: []byte(prodContract),
			check: func(t *testing.T, c *runner.Contract) {
				got := []any{c.Environment, c.Runbook, c.Dashboard, c.Oncall, *c.NFR.Availability, *c.NFR.RPOMinutes, *c.NFR.MultiAZ, *c.NFR.MonthlyCostCeiling}
				want := []any{runner.Prod, "https://runbooks.example.com/hello", "https://grafana.example.com/d/hello", "team-hello", 99.95, 15, true, 1200.5}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("prod fields (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "dr with all its fields", data: []byte(drContract),
			check: func(t *testing.T, c *runner.Contract) {
				if c.Environment != runner.DR || c.DRDrillRef != "https://tickets.example.com/DR-42" {
					t.Errorf("environment %s, drDrillRef %q", c.Environment, c.DRDrillRef)
				}
			},
		},
		{name: "byte order mark", data: append([]byte("\ufeff"), devContract...)},
		{
			name: "backend with config", data: []byte(devContract + "backend:\n  type: s3\n  config:\n    bucket: state\n    region: eu-west-1\n"),
			check: func(t *testing.T, c *runner.Contract) {
				want := &runner.Backend{Type: "s3", Config: map[string]string{"bucket": "state", "region": "eu-west-1"}}
				if diff := cmp.Diff(want, c.Backend); diff != "" {
					t.Errorf("backend (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "OpenTofu with a version constraint and encrypted state", data: []byte(devContract + "engine: opentofu\nengineVersion: \">= 1.12, < 2\"\nnfr:\n  stateEncryption: required\nbackend:\n  type: pg\n  encryption:\n    keyProvider: pbkdf2\n"),
			check: func(t *testing.T, c *runner.Contract) {
				got := []any{c.Engine, c.EngineName(), c.EngineVersion, c.NFR.StateEncryption, c.Encrypted(), c.Backend.Encryption.KeyProvider}
				want := []any{"opentofu", "opentofu", ">= 1.12, < 2", "required", true, "pbkdf2"}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("engine, name, version, stateEncryption, encrypted, key provider (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "no engine is terraform", data: []byte(devContract),
			check: func(t *testing.T, c *runner.Contract) {
				if c.Engine != "" || c.EngineName() != runner.EngineTerraform || c.Encrypted() {
					t.Errorf("engine %q (%s), encrypted %t", c.Engine, c.EngineName(), c.Encrypted())
				}
			},
		},
		{name: "an engine Nova does not run", data: []byte(devContract + "engine: pulumi\n"), wantWhere: []where{{fieldValue, "/engine", "c.yml:5:9"}}},
		{name: "engineVersion that is no constraint", data: []byte(devContract + "engineVersion: newest\n"), wantWhere: []where{{fieldValue, "/engineVersion", "c.yml:5:16"}}, wantMessage: "not a version constraint"},
		{name: "stateEncryption other than required", data: []byte(devContract + "nfr:\n  stateEncryption: optional\n"), wantWhere: []where{{fieldValue, "/nfr/stateEncryption", "c.yml:6:20"}}},
		{name: "encryption without a key provider", data: []byte(devContract + "backend:\n  type: local\n  encryption: {}\n"), want: []runner.Reason{missing}},
		{name: "encryption with a key provider Nova has no secret for", data: []byte(devContract + "backend:\n  type: local\n  encryption:\n    keyProvider: aws_kms\n"), wantWhere: []where{{fieldValue, "/backend/encryption/keyProvider", "c.yml:8:18"}}},
		{
			name: "dates stay strings", data: []byte(devContract + "inputs:\n  since: 2024-01-02\n  at: 2001-12-14t21:59:43.10-05:00\n"),
			check: func(t *testing.T, c *runner.Contract) {
				want := map[string]any{"since": "2024-01-02", "at": "2001-12-14t21:59:43.10-05:00"}
				if diff := cmp.Diff(want, c.Inputs); diff != "" {
					t.Errorf("inputs (-want +got):\n%s", diff)
				}
			},
		},
		{
			// yaml.v3 reads 1e6 as a float; it must still fill an int field.
			name: "whole number written as a float", data: []byte(devContract + "nfr:\n  latencyP99Ms: 1e6\n  rpoMinutes: 30.0\n"),
			check: func(t *testing.T, c *runner.Contract) {
				if got := []int{*c.NFR.LatencyP99Ms, *c.NFR.RPOMinutes}; !slices.Equal(got, []int{1000000, 30}) {
					t.Errorf("latencyP99Ms, rpoMinutes = %v", got)
				}
			},
		},
		{
			name: "harmless anchor and alias", data: []byte(devContract + "inputs:\n  greeting: &word Hi\n  audience: *word\n"),
			check: func(t *testing.T, c *runner.Contract) {
				if diff := cmp.Diff(map[string]any{"greeting": "Hi", "audience": "Hi"}, c.Inputs); diff != "" {
					t.Errorf("inputs (-want +got):\n%s", diff)
				}
			},
		},
		{
			name: "agentic fields with profile agentic", data: []byte(devContract + "profile: agentic\n" + agenticFields),
			check: func(t *testing.T, c *runner.Contract) {
				if c.ConfidenceAtSubmission == nil || *c.ConfidenceAtSubmission != 0.82 || c.AgentTrace != "traces/run-17.jsonl" {
					t.Errorf("agentic fields not decoded: %+v", c)
				}
			},
		},

		// Per-environment mandatory fields, reported at the environment.
		{
			name: "qa without e2eSuite", data: []byte(without(qaContract, "e2eSuite:")),
			wantWhere: []where{{envMissing, "/validation/e2eSuite", "c.yml:4:14"}},
		},
		{
			name: "qa without loadTest", data: []byte(without(qaContract, "loadTest:")),
			wantWhere: []where{{envMissing, "/validation/loadTest", "c.yml:4:14"}},
		},
		{
			name: "qa without validation", data: []byte(without(qaContract, "validation:", "unitTests:", "integrationTests:", "e2eSuite:", "loadTest:")),
			want: []runner.Reason{envMissing, envMissing},
		},
		{
			name: "qa with an empty validation", data: []byte(without(qaContract, "unitTests:", "integrationTests:", "e2eSuite:", "loadTest:")),
			// "validation:" alone is null, which the schema refuses first.
			wantWhere: []where{{fieldType, "/validation", "c.yml:13:12"}},
		},
		{
			name: "prod without runbook", data: []byte(without(prodContract, "runbook:")),
			wantWhere:   []where{{envMissing, "/runbook", "c.yml:4:14"}},
			wantMessage: "environment prod requires /runbook",
		},
		{name: "prod without dashboard", data: []byte(without(prodContract, "dashboard:")), wantWhere: []where{{envMissing, "/dashboard", "c.yml:4:14"}}},
		{name: "prod without oncall", data: []byte(without(prodContract, "oncall:")), wantWhere: []where{{envMissing, "/oncall", "c.yml:4:14"}}},
		{name: "prod without qa's e2eSuite", data: []byte(without(prodContract, "e2eSuite:")), wantWhere: []where{{envMissing, "/validation/e2eSuite", "c.yml:4:14"}}},
		{name: "prod without qa's loadTest", data: []byte(without(prodContract, "loadTest:")), wantWhere: []where{{envMissing, "/validation/loadTest", "c.yml:4:14"}}},
		{name: "dr without drDrillRef", data: []byte(without(drContract, "drDrillRef:")), wantWhere: []where{{envMissing, "/drDrillRef", "c.yml:4:14"}}},
		{name: "dr without prod's runbook and oncall", data: []byte(without(drContract, "runbook:", "oncall:")), want: []runner.Reason{envMissing, envMissing}},

		// --env replaces the environment before any rule is checked.
		{
			name: "--env prod on a dev contract", data: []byte(devContract), env: runner.Prod,
			wantWhere: []where{
				{envMissing, "/validation/e2eSuite", "c.yml:4:14"},
				{envMissing, "/validation/loadTest", "c.yml:4:14"},
				{envMissing, "/runbook", "c.yml:4:14"},
				{envMissing, "/dashboard", "c.yml:4:14"},
				{envMissing, "/oncall", "c.yml:4:14"},
			},
			wantMessage: "(environment set by --env)",
		},
		// The example carries every field, so it promotes as far as dr.
		{name: "--env dr on the example", data: example, env: runner.DR},
		{name: "--env dr on a prod contract", data: []byte(prodContract), env: runner.DR, want: []runner.Reason{envMissing}},
		// --env may raise the guard, never lower it: run as dev, a prod
		// contract would skip its approval.
		{name: "--env dev on a prod contract", data: []byte(prodContract), env: runner.Dev,
			wantWhere: []where{{runner.ContractEnvOverrideLowers, "/environment", "c.yml:4:14"}}},
		{
			name: "--env prod on a dev contract", data: []byte(withEnv(prodContract, "dev")), env: runner.Prod,
			check: func(t *testing.T, c *runner.Contract) {
				if c.Environment != runner.Prod {
					t.Errorf("environment = %s, want prod", c.Environment)
				}
			},
		},
		{name: "--env fills a missing environment", data: []byte(header), env: runner.Dev},
		{name: "--env with an unknown environment", data: []byte(devContract), env: "staging", wantWhere: []where{{fieldValue, "/environment", "c.yml:4:14"}}},

		// Malformed YAML. yaml.v3 gives a line but no column.
		{name: "unclosed flow sequence", data: []byte(devContract + "inputs: [a, b\n"), wantWhere: []where{{yamlBad, "", "c.yml:5"}}},
		{name: "unclosed flow mapping", data: []byte(devContract + "inputs: {a: 1\n"), wantWhere: []where{{yamlBad, "", "c.yml:5"}}},
		{name: "bad indentation", data: []byte(devContract + "nfr:\n  availability: 99\n backups: true\n"), wantWhere: []where{{yamlBad, "", "c.yml:7"}}},
		{name: "tab indentation", data: []byte(devContract + "nfr:\n\tavailability: 99\n"), wantWhere: []where{{yamlBad, "", "c.yml:6:1"}}},
		{name: "tab after spaces before a key", data: []byte(devContract + "nfr:\n  \tavailability: 99\n"), wantWhere: []where{{yamlBad, "", "c.yml:6:3"}}},
		{name: "unterminated quoted string", data: []byte(devContract + "oncall: \"team\n"), want: []runner.Reason{yamlBad}},
		{name: "merge key", data: []byte(devContract + "<<: {oncall: x}\n"), wantWhere: []where{{yamlBad, "", "c.yml:5:1"}}},
		{name: "control character", data: []byte(devContract + "oncall: a\x01b\n"), want: []runner.Reason{yamlBad}},
		{name: "100 levels of nesting", data: []byte(deepInputs(100)), want: []runner.Reason{yamlBad}, wantMessage: "nests deeper than"},
		{name: "deep flow nesting", data: []byte(devContract + "inputs:\n  x: " + strings.Repeat("[", 5000) + strings.Repeat("]", 5000) + "\n"), want: []runner.Reason{yamlBad}},

		// Wrong JSON types.
		{name: "stack is a number", data: []byte(strings.Replace(devContract, "stack: hello", "stack: 5", 1)), wantWhere: []where{{fieldType, "/stack", "c.yml:3:8"}}},
		{name: "inputs is a sequence", data: []byte(devContract + "inputs: [a]\n"), wantWhere: []where{{fieldType, "/inputs", "c.yml:5:9"}}},
		{name: "availability is a word", data: []byte(devContract + "nfr:\n  availability: high\n"), wantWhere: []where{{fieldType, "/nfr/availability", "c.yml:6:17"}}},
		{name: "multiAz is yes", data: []byte(devContract + "nfr:\n  multiAz: \"yes\"\n"), wantWhere: []where{{fieldType, "/nfr/multiAz", "c.yml:6:12"}}},
		// YAML 1.2 (and yaml.v3) reads an unquoted yes as a string too.
		{name: "multiAz is unquoted yes", data: []byte(devContract + "nfr:\n  multiAz: yes\n"), want: []runner.Reason{fieldType}},
		{name: "oncall is null", data: []byte(devContract + "oncall: ~\n"), wantWhere: []where{{fieldType, "/oncall", "c.yml:5:9"}}},
		{name: "backend config value is a number", data: []byte(devContract + "backend:\n  type: s3\n  config:\n    port: 5432\n"), wantWhere: []where{{fieldType, "/backend/config/port", "c.yml:8:11"}}},
		{name: "top-level sequence", data: []byte("- apiVersion: nova/v1\n- stack: hello\n"), wantWhere: []where{{fieldType, "/", "c.yml:1:1"}}},
		{name: "top-level scalar", data: []byte("hello\n"), wantWhere: []where{{fieldType, "/", "c.yml:1:1"}}},

		// Unknown fields, reported at their key.
		{name: "unknown top-level field", data: []byte(devContract + "owner: me\n"), wantWhere: []where{{unknown, "/owner", "c.yml:5:1"}}},
		{
			name: "misspelt environment", data: []byte(strings.Replace(devContract, "environment:", "enviroment:", 1)),
			wantWhere: []where{
				{missing, "/environment", "c.yml:1:1"},
				{unknown, "/enviroment", "c.yml:4:1"},
			},
		},
		{
			name: "misspelt environment suggests the field", data: []byte(header + "enviroment: dev\n"), env: runner.Dev,
			wantWhere:   []where{{unknown, "/enviroment", "c.yml:4:1"}},
			wantMessage: `unknown field /enviroment (did you mean "environment"?)`,
		},
		{name: "unknown nfr field", data: []byte(devContract + "nfr:\n  foo: 1\n"), wantWhere: []where{{unknown, "/nfr/foo", "c.yml:6:3"}}},
		{name: "unknown validation field", data: []byte(devContract + "validation:\n  bar: x\n"), wantWhere: []where{{unknown, "/validation/bar", "c.yml:6:3"}}},
		{
			name: "misspelt nfr field", data: []byte(devContract + "nfr:\n  availabilty: 99.9\n"),
			want: []runner.Reason{unknown}, wantMessage: `(did you mean "availability"?)`,
		},

		// Fields every contract needs.
		{
			name: "only a stack", data: []byte("stack: hello\n"),
			wantWhere: []where{
				{missing, "/apiVersion", "c.yml:1:1"},
				{missing, "/id", "c.yml:1:1"},
				{missing, "/environment", "c.yml:1:1"},
			},
		},
		{name: "backend without type", data: []byte(devContract + "backend:\n  config:\n    bucket: b\n"), wantWhere: []where{{missing, "/backend/type", "c.yml:6:3"}}},
		{
			name: "apiVersion nova/v2", data: []byte(strings.Replace(devContract, "nova/v1", "nova/v2", 1)),
			wantWhere: []where{{runner.ContractAPIVersion, "/apiVersion", "c.yml:1:13"}},
		},

		// Formats.
		{name: "id is not a uuid", data: []byte(strings.Replace(devContract, "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", "not-a-uuid", 1)), wantWhere: []where{{format, "/id", "c.yml:2:5"}}},
		{name: "stack name with capitals", data: []byte(strings.Replace(devContract, "stack: hello", "stack: Hello_World", 1)), wantWhere: []where{{format, "/stack", "c.yml:3:8"}}},
		{
			name: "input names outside the pattern", data: []byte(devContract + "inputs:\n  Bad-Name: 1\n  ok: 2\n  9lives: 3\n"),
			wantWhere: []where{{format, "/inputs/Bad-Name", "c.yml:6:3"}, {format, "/inputs/9lives", "c.yml:8:3"}},
		},
		{
			// The library (v6.0.3) keeps a propertyNames error's location in
			// a slice that a later error can overwrite.
			name: "input name outside the pattern beside a later violation", data: []byte(devContract + "inputs:\n  Bad-Name: 1\nnfr:\n  availability: high\n"),
			wantWhere: []where{{format, "/inputs/Bad-Name", "c.yml:6:3"}, {fieldType, "/nfr/availability", "c.yml:8:17"}},
		},
		{name: "runbook is not a URI", data: []byte(strings.Replace(prodContract, "runbook: https://runbooks.example.com/hello", "runbook: see the wiki", 1)), wantWhere: []where{{format, "/runbook", "c.yml:22:10"}}},
		{name: "supersedes is not a uuid", data: []byte(devContract + "supersedes: last-week\n"), want: []runner.Reason{format}},
		{name: "backend type with capitals", data: []byte(devContract + "backend:\n  type: S3\n"), want: []runner.Reason{format}},

		// Values outside their set or range.
		{name: "environment staging", data: []byte(withEnv(devContract, "staging")), wantWhere: []where{{fieldValue, "/environment", "c.yml:4:14"}}},
		{name: "availability 150", data: []byte(devContract + "nfr:\n  availability: 150\n"), wantWhere: []where{{fieldValue, "/nfr/availability", "c.yml:6:17"}}},
		{name: "availability 0", data: []byte(devContract + "nfr:\n  availability: 0\n"), want: []runner.Reason{fieldValue}},
		{name: "negative rpoMinutes", data: []byte(devContract + "nfr:\n  rpoMinutes: -5\n"), wantWhere: []where{{fieldValue, "/nfr/rpoMinutes", "c.yml:6:15"}}},
		{name: "fractional rtoMinutes", data: []byte(devContract + "nfr:\n  rtoMinutes: 1.5\n"), want: []runner.Reason{fieldType}},
		{name: "dataClassification secret", data: []byte(devContract + "nfr:\n  dataClassification: secret\n"), wantWhere: []where{{fieldValue, "/nfr/dataClassification", "c.yml:6:23"}}},
		{name: "confidenceAtSubmission 1.5", data: []byte(devContract + "profile: agentic\nconfidenceAtSubmission: 1.5\n"), wantWhere: []where{{fieldValue, "/confidenceAtSubmission", "c.yml:6:25"}}},
		{name: "empty oncall in prod", data: []byte(strings.Replace(prodContract, "oncall: team-hello", `oncall: ""`, 1)), wantWhere: []where{{fieldValue, "/oncall", "c.yml:24:9"}}},
		{name: "profile robot", data: []byte(devContract + "profile: robot\n"), want: []runner.Reason{fieldValue}},
		{name: ".inf", data: []byte(devContract + "nfr:\n  availability: .inf\n"), wantWhere: []where{{fieldValue, "/nfr/availability", "c.yml:6:17"}}},
		{name: "-.inf", data: []byte(devContract + "nfr:\n  monthlyCostCeiling: -.Inf\n"), want: []runner.Reason{fieldValue}},
		{name: ".nan", data: []byte(devContract + "inputs:\n  ratio: .NaN\n"), wantWhere: []where{{fieldValue, "/inputs/ratio", "c.yml:6:10"}}},
		{
			name: "several problems, in file order", data: []byte("apiVersion: nova/v1\nid: nope\nstack: hello\nenvironment: staging\nnfr:\n  availability: high\n"),
			want: []runner.Reason{format, fieldValue, fieldType},
		},

		// Agentic fields need profile: agentic.
		{
			name: "agentic fields without profile", data: []byte(devContract + agenticFields),
			wantWhere: []where{
				{agentic, "/naturalLanguageIntent", "c.yml:5:24"},
				{agentic, "/confidenceAtSubmission", "c.yml:6:25"},
				{agentic, "/agentTrace", "c.yml:7:13"},
			},
		},
		{name: "agentic field with profile standard", data: []byte(devContract + "profile: standard\nagentTrace: t.jsonl\n"), want: []runner.Reason{agentic}},

		// YAML structure Nova refuses.
		{name: "duplicate top-level key", data: []byte(devContract + "stack: other\n"), wantWhere: []where{{runner.ContractYAMLDuplicateKey, "", "c.yml:5:1"}}},
		{name: "duplicate nested key", data: []byte(devContract + "nfr:\n  backups: true\n  backups: false\n"), wantWhere: []where{{runner.ContractYAMLDuplicateKey, "", "c.yml:7:3"}}},
		{name: "duplicate key spelt differently", data: []byte(devContract + "\"stack\": other\n"), want: []runner.Reason{runner.ContractYAMLDuplicateKey}},
		{name: "two documents", data: []byte(devContract + "---\n" + devContract), wantWhere: []where{{runner.ContractYAMLMultipleDocs, "", "c.yml:5:1"}}},
		{name: "empty file", data: nil, wantWhere: []where{{empty, "", "c.yml"}}},
		{name: "only comments", data: []byte("# a contract\n# will go here\n"), want: []runner.Reason{empty}},
		{name: "null document", data: []byte("null\n"), want: []runner.Reason{empty}},
		{name: "tilde document", data: []byte("--- ~\n"), want: []runner.Reason{empty}},
		{name: "bytes 0xff 0xfe in a value", data: []byte(devContract + "oncall: \xff\xfe\n"), wantWhere: []where{{encoding, "", "c.yml:5:9"}}},
		{name: "Latin-1 e acute", data: []byte(devContract + "oncall: caf\xe9\n"), want: []runner.Reason{encoding}},
		{name: "UTF-16 file", data: []byte("\xff\xfea\x00p\x00i\x00"), want: []runner.Reason{encoding}},
		{name: "NUL byte", data: []byte(devContract + "oncall: a\x00b\n"), wantWhere: []where{{encoding, "", "c.yml:5:10"}}},
		{name: "custom tag", data: []byte(devContract + "oncall: !vault x\n"), wantWhere: []where{{tag, "/oncall", "c.yml:5:9"}}},
		{name: "binary tag", data: []byte(devContract + "inputs:\n  blob: !!binary aGVsbG8=\n"), wantWhere: []where{{tag, "/inputs/blob", "c.yml:6:9"}}},
		{name: "custom tag on a mapping", data: []byte(devContract + "nfr: !custom\n  backups: true\n"), want: []runner.Reason{tag}},
		{name: "custom tag on a key", data: []byte(devContract + "!vault oncall: x\n"), wantWhere: []where{{tag, "", "c.yml:5:1"}}},
		{name: "binary tag on a key", data: []byte(devContract + "? !!binary b25jYWxs\n: x\n"), want: []runner.Reason{tag}},
		{name: "alias bomb", data: []byte(aliasBomb()), want: []runner.Reason{runner.ContractYAMLAliasLimit}},
	}
}

func TestParse(t *testing.T) {
	cases := parseCases(t)
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, findings := schema.Parse(tc.data, "c.yml", tc.env)

			want := tc.want
			if tc.wantWhere != nil {
				want = nil
				for _, w := range tc.wantWhere {
					want = append(want, w.Reason)
				}
			}
			var got []runner.Reason
			for _, f := range findings {
				got = append(got, f.Reason)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("reasons (-want +got):\n%s\nfindings: %+v", diff, findings)
			}
			if tc.wantWhere != nil {
				var gotWhere []where
				for _, f := range findings {
					gotWhere = append(gotWhere, where{f.Reason, f.Field, f.Location})
				}
				if diff := cmp.Diff(tc.wantWhere, gotWhere); diff != "" {
					t.Errorf("fields and locations (-want +got):\n%s", diff)
				}
			}
			if tc.wantMessage != "" && !strings.Contains(findings[0].Message, tc.wantMessage) {
				t.Errorf("message %q does not contain %q", findings[0].Message, tc.wantMessage)
			}

			switch {
			case len(findings) == 0 && c == nil:
				t.Fatal("no findings and no contract")
			case len(findings) > 0 && c != nil:
				// A rejected contract carries its identity only.
				if diff := cmp.Diff(&runner.Contract{ID: c.ID, Environment: c.Environment}, c); diff != "" {
					t.Errorf("rejected contract holds more than its identity (-want +got):\n%s", diff)
				}
			}
			if tc.check != nil && c != nil && len(findings) == 0 {
				tc.check(t, c)
			}
		})
	}
}

// TestParseIdentityOfRejected checks that a rejected contract is returned
// with its id and environment whenever both are well-formed, so its failure
// joins the contract's own event chain.
func TestParseIdentityOfRejected(t *testing.T) {
	tests := []struct {
		name string
		data string
		env  runner.Environment
		want *runner.Contract
	}{
		{"schema failure", devContract + "owner: me\n", "", &runner.Contract{ID: "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", Environment: runner.Dev}},
		{"rule failure", withEnv(devContract, "prod"), "", &runner.Contract{ID: "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", Environment: runner.Prod}},
		{"rule failure under --env", devContract, runner.QA, &runner.Contract{ID: "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", Environment: runner.QA}},
		{"bad id", strings.Replace(devContract, "3b0c6f5e-8a41-4e8f-9d2a-6c1b7e4f2a90", "x", 1), "", nil},
		{"bad environment", withEnv(devContract, "staging"), "", nil},
		{"YAML failure", devContract + "inputs: [\n", "", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c, findings := schema.Parse([]byte(tc.data), "c.yml", tc.env)
			if len(findings) == 0 {
				t.Fatal("no findings")
			}
			if diff := cmp.Diff(tc.want, c); diff != "" {
				t.Errorf("contract (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkParseAliasBomb shows that an alias bomb is refused after a
// bounded amount of work rather than expanded.
func BenchmarkParseAliasBomb(b *testing.B) {
	data := []byte(aliasBomb())
	for b.Loop() {
		if _, findings := schema.Parse(data, "c.yml", ""); len(findings) != 1 || findings[0].Reason != runner.ContractYAMLAliasLimit {
			b.Fatalf("findings = %+v", findings)
		}
	}
}

func BenchmarkParseExample(b *testing.B) {
	data := readExample(b)
	for b.Loop() {
		if _, findings := schema.Parse(data, "c.yml", ""); len(findings) > 0 {
			b.Fatalf("findings = %+v", findings)
		}
	}
}

// TestLoadErrorsSayWhatIsWrong: the messages name what a person would look
// for, where yaml.v3's own words do not.
func TestLoadErrorsSayWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		data, want string
	}{
		{devContract + "oncall: a\x00b\n", "NUL byte"},
		{devContract + "oncall: caf\xe9\n", "byte 0xe9"},
		{devContract + "nfr:\n  \tavailability: 99\n", "tab"},
		{devContract + "nfr:\n\tavailability: 99\n", "tab"},
	} {
		_, findings := schema.Parse([]byte(tc.data), "c.yml", "")
		if len(findings) != 1 || !strings.Contains(findings[0].Message, tc.want) {
			t.Errorf("%q: findings %+v, want one mentioning %q", tc.data[len(devContract):], findings, tc.want)
		}
	}
}
