// Package jsonschema validates values against the JSON Schemas Nova embeds
// (draft 2020-12, formats asserted), and PolicyCheckResults against the
// published PCR schema, the one check every engine's output passes before
// it becomes part of a run.
//
// It implements only the keywords those schemas use and refuses to compile
// any other. A general validator would do, but every linked package's init
// runs on every start: the one Nova used compiled five drafts' meta-schemas
// at start-up, a fifth of what `nova version` cost.
package jsonschema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/nova-platform/nova/runner"
)

// PCRSchema is the published JSON Schema of a PCR, a copy of
// docs/pcr.schema.json (a test keeps the two equal).
//
//go:embed pcr.schema.json
var PCRSchema []byte

// PCRSchemaURL is where PCRSchema is published (its $id).
const PCRSchemaURL = "https://github.com/nova-platform/nova/blob/main/docs/pcr.schema.json"

// Compiling is deferred to the first validation: commands that never
// validate anything (nova version) must not pay for it.
var pcrSchema = sync.OnceValues(func() (*Schema, error) { return Compile(PCRSchemaURL, PCRSchema) })

// ValidatePCR checks one record against the published schema.
func ValidatePCR(p runner.PCR) error {
	sch, err := pcrSchema()
	if err != nil {
		return fmt.Errorf("compiling the embedded PCR schema: %w", err)
	}
	raw, err := json.Marshal(p)
	if err != nil {
		return fmt.Errorf("encoding the record: %w", err)
	}
	// The record is validated as JSON, as it is published, not as the Go
	// struct: omitted fields and raw evidence must look as they will.
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if err := dec.Decode(&doc); err != nil {
		return fmt.Errorf("decoding the record: %w", err)
	}
	return sch.Validate(doc)
}
