package audit

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"
)

var update = flag.Bool("update", false, "rewrite generated files (docs/export/*.schema.json)")

// TestExportSchemasAreCurrent keeps docs/export/<table>.schema.json equal
// to the schemas the row types define, so the published column contract
// cannot drift from what export writes.
func TestExportSchemasAreCurrent(t *testing.T) {
	dir := filepath.Join("..", "..", "docs", "export")
	for _, table := range (&Tables{}).List() {
		path := filepath.Join(dir, table.Name+".schema.json")
		want := table.Schema()
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is stale or missing (%v); regenerate with: go test ./runner/audit -run TestExportSchemasAreCurrent -update", path, err)
		}
	}
}
