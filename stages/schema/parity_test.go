package schema_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner/jsonschema/parity"
	"github.com/nova-platform/nova/stages/schema"
)

const schemaURL = "https://nova-platform.dev/schemas/contract/v1.json"

// contractFiles are the repository's contract fixtures.
var contractFiles = []string{
	"../../examples/hello/.nova/contract.yml",
	"../../examples/hello/.nova/lifecycle/modified.yml",
	"../../stages/nfr/testdata/microservice.yml",
	"../../stages/policy/rego/testdata/consumer/contract.yml",
	"../../stages/policy/rego/testdata/contracts/microservice.yml",
	"../../stages/policy/report/testdata/contract.yml",
}

// parityFixtures are the fullest contract of this package and the
// example's, which are mutated, then the repository's other contract
// fixtures, this package's contracts and the YAML examples of
// docs/contract.md, compared as they are (mutating them too would add
// little but seconds: runner/jsonschema mutates contracts as well).
func parityFixtures(t *testing.T) (mutated, asIs []any) {
	t.Helper()
	var files []string
	for _, f := range contractFiles {
		data, err := os.ReadFile(filepath.FromSlash(f))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, string(data))
	}
	mutated = values(t, []string{drContract + agenticFields, files[0]})
	texts := append(files[1:], devContract, qaContract, prodContract, drContract)
	_, blocks := readDoc(t)
	for _, b := range blocks {
		if b.info == "yaml" && strings.Contains(b.text, "apiVersion:") {
			texts = append(texts, b.text)
		}
	}
	return mutated, values(t, texts)
}

func values(t *testing.T, texts []string) []any {
	t.Helper()
	var out []any
	for _, text := range texts {
		v, err := schema.DocumentValue([]byte(text))
		if err != nil {
			t.Fatalf("%v in\n%s", err, text)
		}
		out = append(out, v)
	}
	return out
}

// TestSchemaParityOverContracts: on contracts as Parse reads them (numbers
// as written, dates as text), Nova's validator and the library it replaced
// agree on every violation and its message, over the fixtures and every
// mutation of them.
func TestSchemaParityOverContracts(t *testing.T) {
	c, err := parity.New(schemaURL, schema.SchemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	shape, err := parity.ShapeOf(schema.SchemaJSON)
	if err != nil {
		t.Fatal(err)
	}
	mutated, asIs := parityFixtures(t)
	docs := asIs
	for _, fx := range mutated {
		docs = append(append(docs, fx), shape.Mutations(fx, shape.Values())...)
	}
	tally, err := c.CompareAll(docs)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d contracts valid, %d invalid", tally.Valid, tally.Invalid)
	if tally.Valid == 0 || tally.Invalid == 0 {
		t.Errorf("corpus is one-sided: %d valid, %d invalid", tally.Valid, tally.Invalid)
	}
}

// FuzzSchemaParity compares the validators on any YAML that reads as a
// contract document; its seeds are the contract fixtures and Parse's test
// cases.
func FuzzSchemaParity(f *testing.F) {
	c, err := parity.New(schemaURL, schema.SchemaJSON)
	if err != nil {
		f.Fatal(err)
	}
	for _, file := range contractFiles {
		data, err := os.ReadFile(filepath.FromSlash(file))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, tc := range parseCases(f) {
		f.Add(tc.data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		doc, err := schema.DocumentValue(data)
		if err != nil {
			return
		}
		if _, err := c.Compare(doc); err != nil && !errors.Is(err, parity.ErrOutOfDomain) {
			t.Fatal(err)
		}
	})
}
