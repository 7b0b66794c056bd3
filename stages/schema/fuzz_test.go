package schema_test

import (
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/stages/schema"
)

// FuzzParse checks that no input makes Parse panic, that every finding
// carries a reason from the published vocabulary, and that a contract the
// schema accepts always decodes (INTERNAL_ERROR means schema and Go type
// disagree).
func FuzzParse(f *testing.F) {
	for _, tc := range parseCases(f) {
		f.Add(tc.data, string(tc.env))
	}
	f.Fuzz(func(t *testing.T, data []byte, env string) {
		c, findings := schema.Parse(data, "c.yml", runner.Environment(env))
		if len(findings) == 0 && c == nil {
			t.Fatal("no findings and no contract")
		}
		for _, fd := range findings {
			if _, ok := runner.Lookup(fd.Reason); !ok {
				t.Errorf("finding with unknown reason %q: %+v", fd.Reason, fd)
			}
			if fd.Reason == runner.InternalError {
				t.Errorf("internal error: %+v", fd)
			}
			if fd.Location != "" && !strings.HasPrefix(fd.Location, "c.yml") {
				t.Errorf("location %q does not name the file", fd.Location)
			}
		}
	})
}
