// Package jsonschema wraps santhosh-tekuri/jsonschema for Nova: it compiles
// the schemas Nova embeds (draft 2020-12, formats asserted) and validates
// PolicyCheckResults against the published PCR schema, the one check every
// engine's output passes before it becomes part of a run.
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
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/nova-platform/nova/runner"
)

// PCRSchema is the published JSON Schema of a PCR, a copy of
// docs/pcr.schema.json (a test keeps the two equal).
//
//go:embed pcr.schema.json
var PCRSchema []byte

const pcrSchemaURL = "https://github.com/nova-platform/nova/blob/main/docs/pcr.schema.json"

// Compiling is deferred to the first validation: commands that never
// validate anything (nova version) must not pay for it.
var pcrSchema = sync.OnceValues(func() (*jsonschema.Schema, error) { return Compile(pcrSchemaURL, PCRSchema) })

// Printer renders validation errors in English, whatever the locale.
var Printer = message.NewPrinter(language.English)

// Compile compiles an embedded draft 2020-12 schema published at url, with
// formats asserted (a "uuid" that is not one must fail).
func Compile(url string, data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	if err := c.AddResource(url, doc); err != nil {
		return nil, err
	}
	return c.Compile(url)
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
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return fmt.Errorf("decoding the record: %w", err)
	}
	if err := sch.Validate(doc); err != nil {
		var verr *jsonschema.ValidationError
		if errors.As(err, &verr) {
			return errors.New(leafMessages(verr))
		}
		return err
	}
	return nil
}

// leafMessages flattens a validation error into its most specific causes,
// which name the offending field rather than "doesn't validate".
func leafMessages(e *jsonschema.ValidationError) string {
	var out []string
	var walk func(*jsonschema.ValidationError)
	walk = func(e *jsonschema.ValidationError) {
		if len(e.Causes) == 0 {
			loc := "/" + strings.Join(e.InstanceLocation, "/")
			out = append(out, fmt.Sprintf("%s: %s", loc, e.ErrorKind.LocalizedString(Printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	return strings.Join(out, "; ")
}
