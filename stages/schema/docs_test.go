package schema_test

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/nova-platform/nova/registry"
	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

const contractDoc = "../../docs/contract.md"

// docBlock is a fenced code block of docs/contract.md.
type docBlock struct {
	line int // of the opening fence
	info string
	text string
}

// readDoc returns the document's lines and its fenced code blocks.
func readDoc(t *testing.T) ([]string, []docBlock) {
	t.Helper()
	data, err := os.ReadFile(contractDoc)
	if err != nil {
		t.Fatal(err)
	}
	var (
		lines  []string
		blocks []docBlock
		open   *docBlock
		body   strings.Builder
	)
	sc := bufio.NewScanner(bytes.NewReader(data))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		lines = append(lines, line)
		fence, isFence := strings.CutPrefix(line, "```")
		switch {
		case isFence && open == nil:
			open = &docBlock{line: n, info: strings.TrimSpace(fence)}
			body.Reset()
		case isFence:
			open.text = body.String()
			blocks = append(blocks, *open)
			open = nil
		case open != nil:
			body.WriteString(line + "\n")
		}
	}
	if open != nil {
		t.Fatalf("%s:%d: code block never closed", contractDoc, open.line)
	}
	return lines, blocks
}

// TestDocsMentionEveryField keeps docs/contract.md in step with the schema:
// each field must appear as `/pointer`, or be the text of a heading.
func TestDocsMentionEveryField(t *testing.T) {
	lines, _ := readDoc(t)
	doc := strings.Join(lines, "\n")
	headings := map[string]bool{}
	for _, l := range lines {
		if strings.HasPrefix(l, "#") {
			headings[strings.Trim(strings.TrimLeft(l, "#"), " `")] = true
		}
	}
	fields := schema.Fields()
	if len(fields) == 0 {
		t.Fatal("schema.Fields() is empty")
	}
	for _, field := range fields {
		t.Run(field, func(t *testing.T) {
			if !strings.Contains(doc, "`"+field+"`") && !headings[field] {
				t.Errorf("%s does not document %s; mention it as `%s`", contractDoc, field, field)
			}
		})
	}
}

// TestDocsExamplesAreValid parses every ```yaml block of docs/contract.md:
// each one is a complete contract and must pass the schema stage's checks.
// Blocks with another info string (```yaml fragment, ```text) are not
// checked.
func TestDocsExamplesAreValid(t *testing.T) {
	_, blocks := readDoc(t)
	reg := embeddedRegistry(t)
	envs := map[runner.Environment]bool{}
	for _, b := range blocks {
		if b.info != "yaml" {
			continue
		}
		t.Run(fmt.Sprintf("line %d", b.line), func(t *testing.T) {
			// Locations count from the block's first line: add the fence's
			// line to find them in the document.
			c, findings := schema.Parse([]byte(b.text), "example", "")
			for _, f := range findings {
				t.Errorf("%s: example at line %d: %s at %s: %s", contractDoc, b.line, f.Reason, f.Location, f.Message)
			}
			if len(findings) > 0 {
				return
			}
			envs[c.Environment] = true
			// The docs also promise that inputs match the stack, so an
			// example must resolve through the registry shipped with Nova.
			for _, f := range resolveFindings(reg, c) {
				t.Errorf("%s: example at line %d does not resolve: %s %s: %s", contractDoc, b.line, f.Reason, f.Field, f.Message)
			}
		})
	}
	for _, env := range runner.Environments {
		if !envs[env] {
			t.Errorf("%s has no valid %s example", contractDoc, env)
		}
	}
}

func resolveFindings(reg *registry.Registry, c *runner.Contract) []runner.Finding {
	_, findings := reg.Resolve(c)
	return findings
}
