package policy

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"golang.org/x/text/language"
	"golang.org/x/text/message"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// SchemaJSON is the published JSON Schema of a PCR, a copy of
// docs/pcr.schema.json (a test keeps the two equal).
//
//go:embed pcr.schema.json
var SchemaJSON []byte

const schemaURL = "https://github.com/nova-platform/nova/blob/main/docs/pcr.schema.json"

var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) { return schema.CompileJSONSchema(schemaURL, SchemaJSON) })

var printer = message.NewPrinter(language.English)

// Validate checks one PCR against the published schema.
func Validate(p runner.PCR) error {
	sch, err := compiled()
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
			out = append(out, fmt.Sprintf("%s: %s", loc, e.ErrorKind.LocalizedString(printer)))
			return
		}
		for _, c := range e.Causes {
			walk(c)
		}
	}
	walk(e)
	return strings.Join(out, "; ")
}

// Normalize is the one place where records from an engine (or the NFR stage)
// become part of a run: it stamps the contract id and evaluation time the
// engine left empty, and replaces every record that does not validate
// against the published schema, or that claims another engine, by an error
// record naming the engine. It never drops a record silently.
func Normalize(engine string, pcrs []runner.PCR, contractID string, now time.Time) []runner.PCR {
	out := make([]runner.PCR, 0, len(pcrs))
	for i, p := range pcrs {
		if p.ContractID == "" {
			p.ContractID = contractID
		}
		if p.EvaluatedAt.IsZero() {
			p.EvaluatedAt = now
		}
		err := Validate(p)
		switch {
		case err != nil:
		case p.ContractID != contractID:
			err = fmt.Errorf("contractId %q is not the contract being evaluated", p.ContractID)
		case p.Engine != engine:
			err = fmt.Errorf("engine %q is not the engine that returned it", p.Engine)
		}
		if err != nil {
			p = invalidRecord(engine, i, p.RuleID, err, contractID, now)
		}
		out = append(out, p)
	}
	return out
}

func invalidRecord(engine string, index int, ruleID string, err error, contractID string, now time.Time) runner.PCR {
	if len(ruleID) > 120 {
		ruleID = ruleID[:120] + "…"
	}
	return runner.PCR{
		ContractID:  contractID,
		EvaluatedAt: now,
		Engine:      engine,
		RuleID:      string(runner.PolicyResultInvalid),
		Severity:    runner.High,
		Result:      runner.PCRError,
		Message:     fmt.Sprintf("engine %s returned an invalid record (#%d, rule %q): %v", engine, index, ruleID, err),
		Evidence:    Evidence(runner.PolicyResultInvalid, map[string]any{"index": index, "ruleId": ruleID}),
	}
}
