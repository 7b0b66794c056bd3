package report

import (
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ContractLocator places records whose resourceRef is a contract field
// ("contract:/inputs/db_password", a JSON pointer) at the line of that field
// in the contract file, or of the closest enclosing field that exists
// (an NFR requirement the contract does not spell out sits at /nfr). Other
// references are not in a file.
func ContractLocator(file string, data []byte) Locator {
	var doc yaml.Node
	if yaml.Unmarshal(data, &doc) != nil || len(doc.Content) == 0 {
		return func(string) (string, int, bool) { return "", 0, false }
	}
	root := doc.Content[0]
	return func(ref string) (string, int, bool) {
		ptr, ok := strings.CutPrefix(ref, "contract:")
		if !ok {
			return "", 0, false
		}
		n, line := root, root.Line
		for _, tok := range pointerTokens(ptr) {
			n = child(n, tok)
			if n == nil {
				break
			}
			line = n.Line
		}
		return file, line, true
	}
}

// child returns the node a pointer token selects: a mapping's value (at
// its key's line) or a sequence's element.
func child(n *yaml.Node, tok string) *yaml.Node {
	switch n.Kind {
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == tok {
				v := *n.Content[i+1]
				// A field's line is where its key is written.
				v.Line = n.Content[i].Line
				return &v
			}
		}
	case yaml.SequenceNode:
		if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(n.Content) {
			return n.Content[i]
		}
	}
	return nil
}

// pointerTokens splits an RFC 6901 pointer.
func pointerTokens(ptr string) []string {
	if ptr == "" {
		return nil
	}
	parts := strings.Split(strings.TrimPrefix(ptr, "/"), "/")
	for i, p := range parts {
		parts[i] = strings.NewReplacer("~1", "/", "~0", "~").Replace(p)
	}
	return parts
}
