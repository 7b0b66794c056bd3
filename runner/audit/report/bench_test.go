package report

import (
	"testing"
	"time"

	"github.com/nova-platform/nova/runner/audit"
	"github.com/nova-platform/nova/runner/evidence/evidencetest"
)

// BenchmarkReport100k measures turning 100 000 verified events (250
// contracts over half a year) into fact tables and the report page: what
// `nova report` does after reading the events back.
func BenchmarkReport100k(b *testing.B) {
	events := evidencetest.History(250, 100_000, time.Date(2026, 1, 5, 8, 0, 0, 0, time.UTC), 180*24*time.Hour)
	records := make([]audit.Record, len(events))
	for i, e := range events {
		records[i] = audit.Record{Event: e, Commit: "0123456789012345678901234567890123456789"}
	}
	// Records come in chain order, contract by contract, as the index
	// holds them.
	byContract := map[string][]audit.Record{}
	var order []string
	for _, r := range records {
		if _, ok := byContract[r.Event.ContractID]; !ok {
			order = append(order, r.Event.ContractID)
		}
		byContract[r.Event.ContractID] = append(byContract[r.Event.ContractID], r)
	}
	records = records[:0]
	for _, c := range order {
		records = append(records, byContract[c]...)
	}
	var size int
	for b.Loop() {
		page, err := Render(Input{Tables: audit.Build(records), Repo: "bench", Events: len(records), Generated: time.Now()})
		if err != nil {
			b.Fatal(err)
		}
		size = len(page)
	}
	b.ReportMetric(float64(size)/1e6, "MB/page")
}
