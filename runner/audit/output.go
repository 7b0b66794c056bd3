package audit

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
)

// EventRow is one event a query returns: its envelope, what it names
// (approvers, reason codes), where it lies and the commit that added it;
// JSON Lines rows carry the event's data too.
type EventRow struct {
	Time           time.Time       `json:"time"`
	ContractID     string          `json:"contract_id"`
	Environment    string          `json:"environment"`
	Type           string          `json:"type"`
	Seq            int64           `json:"seq"`
	RunID          string          `json:"run_id"`
	Approvers      []string        `json:"approvers"`
	Reasons        []string        `json:"reasons"`
	EventID        string          `json:"event_id"`
	EvidenceCommit string          `json:"evidence_commit"`
	Path           string          `json:"path"`
	Data           json.RawMessage `json:"data,omitempty"`
}

// eventColumns are the CSV header and the table's columns, in order.
var eventColumns = []string{"time", "contract_id", "environment", "type", "seq", "run_id", "approvers", "reasons", "event_id", "evidence_commit", "path"}

// EventWriter writes query results in one format.
type EventWriter interface {
	// WantsData says whether rows need the event's data (read from the
	// repo, so only when the format shows it).
	WantsData() bool
	Write(EventRow) error
	Close() error
}

// NewEventWriter returns a writer for format: table (aligned columns for a
// terminal), jsonl or csv.
func NewEventWriter(w io.Writer, format string) (EventWriter, error) {
	switch format {
	case "table":
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TIME\tCONTRACT\tENV\tTYPE\tSEQ\tAPPROVERS\tREASONS\tEVENT\tCOMMIT")
		return &tableWriter{tw: tw}, nil
	case "jsonl":
		enc := json.NewEncoder(w)
		enc.SetEscapeHTML(false)
		return jsonlWriter{enc}, nil
	case "csv":
		cw := csv.NewWriter(w)
		return csvWriter{cw}, cw.Write(eventColumns)
	}
	return nil, fmt.Errorf("query output %q: want table, jsonl or csv", format)
}

type tableWriter struct {
	tw *tabwriter.Writer
	n  int
}

func (t *tableWriter) WantsData() bool { return false }

func (t *tableWriter) Write(r EventRow) error {
	t.n++
	_, err := fmt.Fprintf(t.tw, "%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", r.Time.Format(time.RFC3339), r.ContractID, dash(r.Environment), r.Type, r.Seq,
		dash(strings.Join(r.Approvers, ",")), dash(strings.Join(r.Reasons, ",")), r.EventID, shortCommit(r.EvidenceCommit))
	return err
}

func (t *tableWriter) Close() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(t.tw, "\n%d event(s)\n", t.n)
	if err == nil {
		err = t.tw.Flush()
	}
	return err
}

type jsonlWriter struct{ enc *json.Encoder }

func (jsonlWriter) WantsData() bool { return true }
func (j jsonlWriter) Write(r EventRow) error {
	if r.Approvers == nil {
		r.Approvers = []string{}
	}
	if r.Reasons == nil {
		r.Reasons = []string{}
	}
	return j.enc.Encode(r)
}
func (jsonlWriter) Close() error { return nil }

type csvWriter struct{ cw *csv.Writer }

func (csvWriter) WantsData() bool { return false }
func (c csvWriter) Write(r EventRow) error {
	return c.cw.Write([]string{r.Time.Format(time.RFC3339Nano), csvText(r.ContractID), csvText(r.Environment), csvText(r.Type), strconv.FormatInt(r.Seq, 10), csvText(r.RunID),
		csvText(strings.Join(r.Approvers, ";")), csvText(strings.Join(r.Reasons, ";")), csvText(r.EventID), csvText(r.EvidenceCommit), csvText(r.Path)})
}
func (c csvWriter) Close() error {
	c.cw.Flush()
	return c.cw.Error()
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func shortCommit(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
