package parity

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/jsonschema"
)

// TestCompareCatchesASkew: a comparison that cannot fail proves nothing.
// Nova's validator is given a schema that differs from the library's in
// one rule, or in the words of one message alone, and Compare must notice
// on the corpus.
func TestCompareCatchesASkew(t *testing.T) {
	record := runner.PCR{
		ContractID: "7f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0", EvaluatedAt: time.Date(2025, 11, 29, 18, 0, 0, 0, time.UTC),
		Engine: runner.EngineCheckov, RuleID: "checkov.CKV_AWS_20", Severity: runner.High, Result: runner.PCRFail,
		Message: "bucket is public", ResourceRef: "aws_s3_bucket.b",
	}
	raw, err := json.Marshal(record)
	if err != nil {
		t.Fatal(err)
	}
	var doc any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&doc); err != nil {
		t.Fatal(err)
	}
	shape, err := ShapeOf(jsonschema.PCRSchema)
	if err != nil {
		t.Fatal(err)
	}
	corpus := append([]any{doc}, shape.Mutations(doc, shape.Values())...)
	for _, tc := range []struct{ name, from, to string }{
		{"a bound", `"maxLength": 1024`, `"maxLength": 1023`},
		{"an enum", `"info"]`, `"info", "none"]`},
		// The same strings match; only the pattern quoted in the
		// message differs.
		{"a message", `"^[A-Z][A-Z0-9]*(_[A-Z0-9]+)*$"`, `"^[A-Z][0-9A-Z]*(_[A-Z0-9]+)*$"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			skewed := bytes.Replace(jsonschema.PCRSchema, []byte(tc.from), []byte(tc.to), 1)
			if bytes.Equal(skewed, jsonschema.PCRSchema) {
				t.Fatalf("%s is not in the PCR schema any more; pick another rule to skew", tc.from)
			}
			c, err := newChecker(jsonschema.PCRSchemaURL, skewed, jsonschema.PCRSchema)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range corpus {
				if _, err := c.Compare(d); err != nil {
					t.Logf("caught: %v", err)
					return
				}
			}
			t.Errorf("the validators disagree on %s, and no document of the corpus shows it", tc.name)
		})
	}
}
