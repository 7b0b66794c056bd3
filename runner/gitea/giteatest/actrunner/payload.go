package actrunner

import (
	"bytes"
	"fmt"
	"strconv"

	"gopkg.in/yaml.v3"
)

// numericKeys are the workflow keys whose values act's schema wants as
// numbers. Gitea's job parser writes them back as the strings it read
// (timeout-minutes: "60"), which act_runner's fork of act accepts and
// act's schema validation refuses.
var numericKeys = map[string]bool{"timeout-minutes": true, "cancel-timeout-minutes": true, "max-parallel": true}

// booleanKeys are the keys whose values act's schema wants as booleans,
// which Gitea writes back as strings the same way (fail-fast: "false").
var booleanKeys = map[string]bool{"fail-fast": true, "continue-on-error": true}

// readablePayload is the workflow Gitea sent with those strings turned
// back into the numbers they were in the workflow file. Nothing else
// changes: an expression (timeout-minutes: ${{ … }}) stays a string.
func readablePayload(payload []byte) ([]byte, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(payload, &doc); err != nil {
		return nil, fmt.Errorf("parsing the workflow Gitea sent: %w", err)
	}
	unquoteNumbers(&doc)
	var out bytes.Buffer
	enc := yaml.NewEncoder(&out)
	enc.SetIndent(2)
	if err := enc.Encode(&doc); err != nil {
		return nil, fmt.Errorf("re-encoding the workflow Gitea sent: %w", err)
	}
	return out.Bytes(), enc.Close()
}

func unquoteNumbers(n *yaml.Node) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			k, v := n.Content[i], n.Content[i+1]
			if numericKeys[k.Value] && v.Kind == yaml.ScalarNode && v.Tag == "!!str" {
				if _, err := strconv.ParseFloat(v.Value, 64); err == nil {
					v.Tag, v.Style = "", 0
				}
			}
			if booleanKeys[k.Value] && v.Kind == yaml.ScalarNode && v.Tag == "!!str" && (v.Value == "true" || v.Value == "false") {
				v.Tag, v.Style = "", 0
			}
		}
	}
	for _, c := range n.Content {
		unquoteNumbers(c)
	}
}
