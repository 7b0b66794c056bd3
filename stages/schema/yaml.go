package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"go.yaml.in/yaml/v3"

	"github.com/nova-platform/nova/runner"
)

// Limits on what a contract may be. Contracts declare intent; anything near
// these limits is an accident or an attack, and is refused before any
// expensive work.
const (
	MaxContractBytes = 1 << 20
	maxNodes         = 100_000
	maxDepth         = 64
)

// position is where a value starts in the contract file.
type position struct{ line, col int }

// document is a contract file turned into JSON-shaped values, with the
// position of every value keyed by its JSON pointer ("" is the root).
type document struct {
	value any
	pos   map[string]position
	// keyPos holds where a mapping key starts, so that an unknown field is
	// reported at its key rather than at its value.
	keyPos map[string]position
}

// loadError is a load failure with its reason and, when known, its position.
type loadError struct {
	reason runner.Reason
	pos    position
	msg    string
	// field is the JSON pointer of the offending value, when there is one.
	field string
}

func (e *loadError) Error() string { return e.msg }

var yamlLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^yaml: line (\d+): `) })

// plainInteger is a decimal integer as JSON writes one, after an optional
// "+" that YAML allows and JSON does not.
var plainInteger = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\+?(-?(?:0|[1-9][0-9]*))$`) })

// yamlParserProblems are the messages of yaml.v3's parser, as opposed to its
// scanner. yaml.v3 turns the 0-based line of a scanner error into a 1-based
// one but not that of a parser error (see its (*parser).fail), so a parser
// error's "line N" is really line N+1.
var yamlParserProblems = map[string]bool{
	"did not find expected ',' or ']'":       true,
	"did not find expected ',' or '}'":       true,
	"did not find expected '-' indicator":    true,
	"did not find expected <document start>": true,
	"did not find expected <stream-start>":   true,
	"did not find expected key":              true,
	"did not find expected node content":     true,
	"found duplicate %TAG directive":         true,
	"found duplicate %YAML directive":        true,
	"found incompatible YAML document":       true,
	"found undefined tag handle":             true,
}

// parseYAML turns raw contract bytes into a document. It never expands an
// alias beyond the node budget, so an alias bomb costs milliseconds.
func parseYAML(data []byte) (*document, error) {
	if le := encodingError(data); le != nil {
		return nil, le
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var root yaml.Node
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &loadError{reason: runner.ContractEmpty, msg: "the contract holds no YAML document"}
		}
		return nil, yamlSyntaxError(err, data)
	}
	var second yaml.Node
	switch err := dec.Decode(&second); {
	case err == nil:
		return nil, &loadError{reason: runner.ContractYAMLMultipleDocs, pos: position{second.Line, second.Column},
			msg: "the contract holds more than one YAML document; keep one contract per file"}
	case !errors.Is(err, io.EOF):
		return nil, yamlSyntaxError(err, data)
	}
	if len(root.Content) == 0 || (root.Content[0].Kind == yaml.ScalarNode && root.Content[0].ShortTag() == "!!null") {
		return nil, &loadError{reason: runner.ContractEmpty, msg: "the contract holds no YAML document"}
	}
	c := &converter{doc: &document{pos: map[string]position{}, keyPos: map[string]position{}}}
	v, err := c.convert(root.Content[0], "", 0)
	if err != nil {
		return nil, err
	}
	c.doc.value = v
	return c.doc, nil
}

// encodingError finds the first byte that makes data something other than
// UTF-8 text, and says where it is and what it is: a NUL byte is named as
// one, so nobody hunts for an invisible encoding problem.
func encodingError(data []byte) *loadError {
	line, col := 1, 1
	for i := 0; i < len(data); {
		r, size := utf8.DecodeRune(data[i:])
		switch {
		case r == 0:
			return &loadError{reason: runner.ContractEncodingInvalid, pos: position{line, col},
				msg: "the contract holds a NUL byte; it must be UTF-8 text"}
		case r == utf8.RuneError && size <= 1:
			return &loadError{reason: runner.ContractEncodingInvalid, pos: position{line, col},
				msg: fmt.Sprintf("the contract is not valid UTF-8 text: byte 0x%02x does not start or continue a character", data[i])}
		case r == '\n':
			line, col = line+1, 1
		default:
			col++
		}
		i += size
	}
	return nil
}

func yamlSyntaxError(err error, data []byte) error {
	msg := err.Error()
	le := &loadError{reason: runner.ContractYAMLInvalid, msg: strings.TrimPrefix(msg, "yaml: ")}
	if m := yamlLine().FindStringSubmatch(msg); m != nil {
		le.pos.line, _ = strconv.Atoi(m[1])
		le.msg = strings.TrimPrefix(msg, m[0])
		if yamlParserProblems[le.msg] {
			le.pos.line++
		}
	}
	// YAML forbids tabs in indentation, and yaml.v3 reports one in words
	// that rarely say so ("mapping values are not allowed in this
	// context"), naming a line only.
	if col := tabColumn(data, le.pos.line); col > 0 {
		le.pos.col = col
		le.msg = fmt.Sprintf("a tab is used for indentation (%s); YAML indents with spaces only", le.msg)
	}
	return le
}

// tabColumn is the column of the first tab in the indentation of line (or
// of the line before or after it, as yaml.v3's line can be off by one).
func tabColumn(data []byte, line int) int {
	if line < 1 {
		return 0
	}
	lines := bytes.Split(data, []byte("\n"))
	for _, l := range []int{line, line + 1, line - 1} {
		if l < 1 || l > len(lines) {
			continue
		}
		text := lines[l-1]
		if i := bytes.IndexByte(text, '\t'); i >= 0 && len(bytes.TrimLeft(text[:i], " ")) == 0 {
			return i + 1
		}
	}
	return 0
}

type converter struct {
	doc   *document
	nodes int
}

func (c *converter) convert(n *yaml.Node, ptr string, depth int) (any, error) {
	c.nodes++
	if c.nodes > maxNodes {
		return nil, &loadError{reason: runner.ContractYAMLAliasLimit, pos: position{n.Line, n.Column},
			msg: fmt.Sprintf("the contract expands to more than %d YAML nodes (are anchors and aliases multiplying each other?)", maxNodes)}
	}
	if depth > maxDepth {
		return nil, &loadError{reason: runner.ContractYAMLInvalid, pos: position{n.Line, n.Column},
			msg: fmt.Sprintf("the contract nests deeper than %d levels", maxDepth)}
	}
	if _, seen := c.doc.pos[ptr]; !seen {
		c.doc.pos[ptr] = position{n.Line, n.Column}
	}
	switch n.Kind {
	case yaml.AliasNode:
		return c.convert(n.Alias, ptr, depth+1)
	case yaml.MappingNode:
		if err := checkTag(n, "!!map"); err != nil {
			return nil, err
		}
		m := make(map[string]any, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if k.Kind != yaml.ScalarNode || k.ShortTag() == "!!merge" {
				return nil, &loadError{reason: runner.ContractYAMLInvalid, pos: position{k.Line, k.Column},
					msg: "mapping keys must be plain strings (merge keys << are not supported)"}
			}
			// A key is used by its text alone, so a tag on it would be
			// dropped silently; refuse it as on any other node.
			if !coreScalarTags[k.ShortTag()] {
				return nil, &loadError{reason: runner.ContractYAMLUnsupportedTag, pos: position{k.Line, k.Column},
					msg: fmt.Sprintf("YAML tag %s is not supported", k.Tag)}
			}
			if _, dup := m[k.Value]; dup {
				return nil, &loadError{reason: runner.ContractYAMLDuplicateKey, pos: position{k.Line, k.Column},
					msg: fmt.Sprintf("key %q appears twice in the same mapping", k.Value)}
			}
			child := ptr + "/" + escapePointer(k.Value)
			c.doc.keyPos[child] = position{k.Line, k.Column}
			val, err := c.convert(v, child, depth+1)
			if err != nil {
				return nil, err
			}
			m[k.Value] = val
		}
		return m, nil
	case yaml.SequenceNode:
		if err := checkTag(n, "!!seq"); err != nil {
			return nil, err
		}
		s := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			val, err := c.convert(item, ptr+"/"+strconv.Itoa(i), depth+1)
			if err != nil {
				return nil, err
			}
			s = append(s, val)
		}
		return s, nil
	case yaml.ScalarNode:
		v, err := scalar(n)
		var le *loadError
		if errors.As(err, &le) && ptr != "" {
			le.field = ptr
		}
		return v, err
	}
	return nil, &loadError{reason: runner.ContractYAMLInvalid, pos: position{n.Line, n.Column}, msg: "unexpected YAML node"}
}

// checkTag refuses explicit tags beyond YAML's core schema: a custom tag
// means the author expects behaviour Nova does not have.
func checkTag(n *yaml.Node, want string) error {
	if n.ShortTag() != want {
		return &loadError{reason: runner.ContractYAMLUnsupportedTag, pos: position{n.Line, n.Column},
			msg: fmt.Sprintf("YAML tag %s is not supported", n.Tag)}
	}
	return nil
}

// coreScalarTags are the scalar tags of YAML's core schema (plus
// timestamps, which yaml.v3 resolves unquoted dates to).
var coreScalarTags = map[string]bool{
	"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!timestamp": true,
}

func scalar(n *yaml.Node) (any, error) {
	pos := position{n.Line, n.Column}
	switch n.ShortTag() {
	case "!!str":
		return n.Value, nil
	case "!!timestamp":
		// Dates stay the text the author wrote; nothing in a contract is a
		// time value and the round trip through time.Time would alter it.
		return n.Value, nil
	case "!!null":
		return nil, nil
	case "!!bool":
		var b bool
		if err := n.Decode(&b); err != nil {
			return nil, &loadError{reason: runner.ContractYAMLInvalid, pos: pos, msg: err.Error()}
		}
		return b, nil
	case "!!int", "!!float":
		// A plain decimal integer keeps the digits the author wrote: read
		// through int64 or float64, one beyond their range would silently
		// become another number.
		if m := plainInteger().FindStringSubmatch(n.Value); m != nil {
			return json.Number(m[1]), nil
		}
		var v any
		if err := n.Decode(&v); err != nil {
			return nil, &loadError{reason: runner.ContractYAMLInvalid, pos: pos, msg: err.Error()}
		}
		switch x := v.(type) {
		case int:
			return json.Number(strconv.Itoa(x)), nil
		case int64:
			return json.Number(strconv.FormatInt(x, 10)), nil
		case uint64:
			return json.Number(strconv.FormatUint(x, 10)), nil
		case float64:
			if math.IsInf(x, 0) || math.IsNaN(x) {
				return nil, &loadError{reason: runner.ContractFieldValue, pos: pos, msg: fmt.Sprintf("%s is not a finite number", n.Value)}
			}
			// Whole numbers keep plain digits: 'g' would write 1e6 as
			// "1e+06", which the schema accepts as an integer but
			// encoding/json refuses to decode into an int field.
			if x == math.Trunc(x) && math.Abs(x) < 1e21 {
				return json.Number(strconv.FormatFloat(x, 'f', -1, 64)), nil
			}
			return json.Number(strconv.FormatFloat(x, 'g', -1, 64)), nil
		}
		return nil, &loadError{reason: runner.ContractYAMLInvalid, pos: pos, msg: fmt.Sprintf("number %s cannot be represented", n.Value)}
	}
	return nil, &loadError{reason: runner.ContractYAMLUnsupportedTag, pos: pos, msg: fmt.Sprintf("YAML tag %s is not supported", n.Tag)}
}

func escapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~", "~0"), "/", "~1")
}
