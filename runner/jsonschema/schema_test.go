package jsonschema

import (
	"bytes"
	"os"
	"testing"
)

// TestEmbeddedSchemaIsThePublishedOne: the schema records are validated
// against is byte for byte the one published in docs/.
func TestEmbeddedSchemaIsThePublishedOne(t *testing.T) {
	published, err := os.ReadFile("../../docs/pcr.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(published, PCRSchema) {
		t.Error("runner/jsonschema/pcr.schema.json differs from docs/pcr.schema.json; copy docs/pcr.schema.json over it")
	}
}
