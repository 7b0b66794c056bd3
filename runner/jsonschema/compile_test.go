package jsonschema

import (
	"strings"
	"testing"
)

// TestCompileRefusesWhatItDoesNotImplement: a schema that needs more than
// the validator knows must not compile, or a change to the schema would
// pass values unchecked.
func TestCompileRefusesWhatItDoesNotImplement(t *testing.T) {
	tests := []struct {
		name, schema, mention string
	}{
		{"unknown keyword", `{"type":"object","minProperties":1}`, `keyword "minProperties" is not supported`},
		{"unknown keyword in a property", `{"properties":{"a":{"items":{}}}}`, `#/properties/a/items`},
		{"unknown keyword in a definition", `{"$defs":{"d":{"oneOf":[]}}}`, `#/$defs/d/oneOf`},
		{"exclusiveMaximum", `{"exclusiveMaximum":1}`, `"exclusiveMaximum"`},
		{"unsupported format", `{"format":"email"}`, `format email is not supported (supported: date-time, uri, uuid)`},
		{"format not a string", `{"format":1}`, `format 1 is not supported`},
		{"type list", `{"type":["string","null"]}`, `lists of types are not supported`},
		{"unknown type", `{"type":"float"}`, `type must be one of`},
		{"boolean subschema", `{"properties":{"a":true}}`, `boolean schemas are not supported`},
		{"additionalProperties true", `{"additionalProperties":true}`, `leave it out`},
		{"remote $ref", `{"$ref":"https://example.com/s.json"}`, `only #/$defs/<name> is`},
		{"$ref to a property", `{"$ref":"#/properties/a"}`, `only #/$defs/<name> is`},
		{"$ref to nothing", `{"$ref":"#/$defs/missing"}`, `names no definition`},
		{"$ref cycle", `{"$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}}`, `$ref cycle`},
		{"self $ref", `{"$defs":{"a":{"$ref":"#/$defs/a"}}}`, `$ref cycle`},
		{"nested $id", `{"properties":{"a":{"$id":"x"}}}`, `only supported at the schema's root`},
		{"other draft", `{"$schema":"http://json-schema.org/draft-07/schema#"}`, `not draft 2020-12`},
		{"other $id", `{"$id":"https://example.com/other.json"}`, `differs from the address`},
		{"bad pattern", `{"pattern":"("}`, `pattern "("`},
		{"negative length", `{"minLength":-1}`, `non-negative integer`},
		{"fractional length", `{"maxLength":1.5}`, `non-negative integer`},
		{"huge length", `{"maxLength":1e30}`, `non-negative integer`},
		{"bound not a number", `{"minimum":"0"}`, `must be a number`},
		{"bound with huge exponent", `{"maximum":1e99999}`, `exponent beyond`},
		{"empty enum", `{"enum":[]}`, `non-empty array`},
		{"const beyond exact numbers", `{"const":{"a":[1e99999]}}`, `#/const: number 1e99999 has an exponent beyond`},
		{"enum beyond exact numbers", `{"enum":["a",-1e-99999]}`, `exponent beyond`},
		{"required not strings", `{"required":[1]}`, `array of strings`},
		{"required twice", `{"required":["a","a"]}`, `names "a" twice`},
		{"description not a string", `{"description":1}`, `description must be a string`},
		{"root not an object", `true`, `root must be an object`},
		{"two documents", `{} {}`, `more than one JSON value`},
		{"not JSON", `{`, `reading schema`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Compile("https://example.com/s.json", []byte(tc.schema))
			if err == nil || !strings.Contains(err.Error(), tc.mention) {
				t.Errorf("Compile(%s) = %v, want an error mentioning %q", tc.schema, err, tc.mention)
			}
		})
	}
}

// TestEmbeddedSchemasCompile: the schemas Nova ships stay inside what the
// validator implements.
func TestEmbeddedSchemasCompile(t *testing.T) {
	if _, err := pcrSchema(); err != nil {
		t.Error(err)
	}
}
