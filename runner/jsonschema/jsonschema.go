// Package jsonschema is how Nova uses santhosh-tekuri/jsonschema: it
// compiles the schemas Nova embeds (draft 2020-12, formats asserted),
// flattens a validation error into the violations a user can act on, and
// validates PolicyCheckResults against the published PCR schema, the one
// check every engine's output passes before it becomes part of a run.
package jsonschema

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

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
var pcrSchema = sync.OnceValues(func() (*jsonschema.Schema, error) { return Compile(PCRSchemaURL, PCRSchema) })

// Printer renders validation errors in English, whatever the locale.
var Printer = message.NewPrinter(language.English)

// Compile compiles an embedded draft 2020-12 schema published at url, with
// formats asserted (a "uuid" that is not one must fail).
func Compile(url string, data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("reading schema %s: %w", url, err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
}

// Leaves flattens a validation error into its most specific causes, which
// name the offending value rather than "doesn't validate". A propertyNames
// error is a leaf of its own: its causes describe the name as if it were a
// value at the object's location, and the error itself says it better.
func Leaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if _, isNames := e.ErrorKind.(*kind.PropertyNames); isNames || len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, Leaves(c)...)
	}
	return out
}

// Pointer renders an instance location as an RFC 6901 JSON pointer ("" for
// the document itself).
func Pointer(tokens []string) string {
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/")
		b.WriteString(strings.ReplaceAll(strings.ReplaceAll(t, "~", "~0"), "/", "~1"))
	}
	return b.String()
}

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
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("decoding the record: %w", err)
	}
	err = sch.Validate(doc)
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return err
	}
	var msgs []string
	for _, l := range Leaves(verr) {
		loc := Pointer(l.InstanceLocation)
		if loc == "" {
			loc = "/"
		}
		msgs = append(msgs, fmt.Sprintf("%s: %s", loc, l.ErrorKind.LocalizedString(Printer)))
	}
	return errors.New(strings.Join(msgs, "; "))
}
