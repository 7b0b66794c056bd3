package schema

import (
	"encoding/json"
	"sort"
	"sync"
)

// schemaFields maps each object in the schema (by JSON pointer into the
// contract, "" for the root) to the field names it allows. It is read from
// the embedded schema itself so suggestions and docs checks cannot drift.
var schemaFields = sync.OnceValue(func() map[string][]string {
	var root schemaNode
	if err := json.Unmarshal(SchemaJSON, &root); err != nil {
		return nil
	}
	out := map[string][]string{}
	var walk func(ptr string, n schemaNode)
	walk = func(ptr string, n schemaNode) {
		if len(n.Properties) == 0 {
			return
		}
		names := make([]string, 0, len(n.Properties))
		for name, child := range n.Properties {
			names = append(names, name)
			walk(ptr+"/"+name, child)
		}
		sort.Strings(names)
		out[ptr] = names
	}
	walk("", root)
	return out
})

type schemaNode struct {
	Properties map[string]schemaNode `json:"properties"`
}

func knownFields(parent string) []string { return schemaFields()[parent] }

// Fields lists every field the contract schema defines, as JSON pointers
// ("/nfr/availability"), sorted.
func Fields() []string {
	var out []string
	for parent, names := range schemaFields() {
		for _, n := range names {
			out = append(out, parent+"/"+n)
		}
	}
	sort.Strings(out)
	return out
}
