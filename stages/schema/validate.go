package schema

import (
	_ "embed"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/nova-platform/nova/runner"
	novaschema "github.com/nova-platform/nova/runner/jsonschema"
)

// SchemaJSON is the published JSON Schema (draft 2020-12) of a contract.
//
//go:embed contract.schema.json
var SchemaJSON []byte

const schemaURL = "https://nova-platform.dev/schemas/contract/v1.json"

// The schema compiles on first use: commands that read no contract do not
// pay for it.
var compiled = sync.OnceValues(func() (*jsonschema.Schema, error) { return novaschema.Compile(schemaURL, SchemaJSON) })

// validateSchema checks a document against the embedded schema and returns
// one finding per violated rule, ordered by position in the file.
func validateSchema(doc *document, file string) ([]runner.Finding, error) {
	sch, err := compiled()
	if err != nil {
		return nil, runner.Errorf(runner.InternalError, "compiling the embedded contract schema: %w", err)
	}
	err = sch.Validate(doc.value)
	if err == nil {
		return nil, nil
	}
	var verr *jsonschema.ValidationError
	if !errors.As(err, &verr) {
		return nil, runner.Errorf(runner.InternalError, "validating contract: %w", err)
	}
	var out []located
	for _, leaf := range novaschema.Leaves(verr) {
		out = append(out, findingsFor(doc, file, leaf)...)
	}
	return sortFindings(out), nil
}

// validID reports whether id is a contract id by the schema's own rule for
// one, so that the two cannot drift apart.
func validID(id string) bool {
	sch, err := compiled()
	if err != nil {
		return false
	}
	prop, ok := sch.Properties["id"]
	return ok && prop.Validate(id) == nil
}

// located pairs a finding with its position for ordering.
type located struct {
	runner.Finding
	pos position
}

func findingsFor(doc *document, file string, e *jsonschema.ValidationError) []located {
	ptr := novaschema.Pointer(e.InstanceLocation)
	field := ptr
	if field == "" {
		field = "/"
	}
	msg := e.ErrorKind.LocalizedString(novaschema.Printer)
	switch k := e.ErrorKind.(type) {
	case *kind.Required:
		var out []located
		for _, name := range k.Missing {
			child := ptr + "/" + escapePointer(name)
			out = append(out, doc.at(file, ptr, runner.Finding{
				Reason: runner.ContractFieldMissing, Field: child,
				Message: fmt.Sprintf("%s is required", child),
			}))
		}
		return out
	case *kind.AdditionalProperties:
		var out []located
		for _, name := range k.Properties {
			child := ptr + "/" + escapePointer(name)
			l := doc.at(file, ptr, runner.Finding{
				Reason: runner.ContractUnknownField, Field: child,
				Message: fmt.Sprintf("unknown field %s%s", child, suggestion(ptr, name)),
			})
			if p, ok := doc.keyPos[child]; ok {
				l.pos, l.Location = p, locate(file, p)
			}
			out = append(out, l)
		}
		return out
	case *kind.Type:
		return []located{doc.at(file, ptr, runner.Finding{Reason: runner.ContractFieldType, Field: field, Message: fmt.Sprintf("%s: %s", field, msg)})}
	case *kind.Const:
		reason := runner.ContractFieldValue
		if ptr == "/apiVersion" {
			reason = runner.ContractAPIVersion
		}
		return []located{doc.at(file, ptr, runner.Finding{Reason: reason, Field: field, Message: fmt.Sprintf("%s: %s", field, msg)})}
	case *kind.Format, *kind.Pattern:
		return []located{doc.at(file, ptr, runner.Finding{Reason: runner.ContractFieldFormat, Field: field, Message: fmt.Sprintf("%s: %s", field, msg)})}
	case *kind.PropertyNames:
		// jsonschema v6.0.3 stores a propertyNames error's instance
		// location without copying it, so a later error overwrites it; the
		// schema location is stable and, in this schema, says the same.
		ptr = instanceFromSchemaURL(e.SchemaURL)
		child := ptr + "/" + escapePointer(k.Property)
		l := doc.at(file, ptr, runner.Finding{Reason: runner.ContractFieldFormat, Field: child, Message: fmt.Sprintf("%s: name must be lowercase letters, digits and _ and start with a letter", child)})
		if p, ok := doc.keyPos[child]; ok {
			l.pos, l.Location = p, locate(file, p)
		}
		return []located{l}
	case *kind.Enum, *kind.Minimum, *kind.Maximum, *kind.ExclusiveMinimum, *kind.ExclusiveMaximum,
		*kind.MinLength, *kind.MaxLength:
		return []located{doc.at(file, ptr, runner.Finding{Reason: runner.ContractFieldValue, Field: field, Message: fmt.Sprintf("%s: %s", field, msg)})}
	}
	return []located{doc.at(file, ptr, runner.Finding{Reason: runner.ContractSchemaViolation, Field: field, Message: fmt.Sprintf("%s: %s", field, msg)})}
}

// instanceFromSchemaURL maps ".../v1.json#/properties/a/properties/b/..."
// to "/a/b".
func instanceFromSchemaURL(u string) string {
	_, frag, _ := strings.Cut(u, "#")
	var b strings.Builder
	parts := strings.Split(strings.TrimPrefix(frag, "/"), "/")
	for i := 0; i+1 < len(parts); i++ {
		if parts[i] == "properties" {
			b.WriteString("/" + parts[i+1])
			i++
		}
	}
	return b.String()
}

// at attaches the file position of ptr, or of its nearest ancestor.
func (d *document) at(file, ptr string, f runner.Finding) located {
	for {
		if p, ok := d.pos[ptr]; ok {
			f.Location = locate(file, p)
			return located{Finding: f, pos: p}
		}
		i := strings.LastIndex(ptr, "/")
		if i < 0 {
			return located{Finding: f}
		}
		ptr = ptr[:i]
	}
}

func locate(file string, p position) string {
	switch {
	case p.line == 0:
		return file
	case p.col == 0:
		return fmt.Sprintf("%s:%d", file, p.line)
	}
	return fmt.Sprintf("%s:%d:%d", file, p.line, p.col)
}

func sortFindings(ls []located) []runner.Finding {
	sort.SliceStable(ls, func(i, j int) bool {
		if ls[i].pos.line != ls[j].pos.line {
			return ls[i].pos.line < ls[j].pos.line
		}
		return ls[i].pos.col < ls[j].pos.col
	})
	out := make([]runner.Finding, len(ls))
	for i, l := range ls {
		out[i] = l.Finding
	}
	return out
}

// suggestion names the known field closest to a misspelt one, since most
// unknown fields are typos of a real one.
func suggestion(parent, name string) string {
	known := knownFields(parent)
	best, bestDist := "", 3
	for _, k := range known {
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best == "" {
		return ""
	}
	return fmt.Sprintf(" (did you mean %q?)", best)
}

func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// ValidID reports whether id is a contract id, for input that names one
// outside a contract file (a fan-out's results).
func ValidID(id string) bool { return validID(id) }
