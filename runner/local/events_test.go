package local

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nova-platform/nova/runner"
)

// TestEventLogKeepsItsFileOpen: the log keeps its file open between
// events, yet each line is in the file as soon as it is recorded (people
// and tools read a run's directory while it runs), and an event after
// Close is appended, not lost.
func TestEventLogKeepsItsFileOpen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs", "r1", "events.jsonl")
	l := NewEventLog(path)
	lines := func() []string {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return strings.SplitAfter(strings.TrimSuffix(string(b), "\n"), "\n")
	}
	for i, id := range []string{"e-1", "e-2"} {
		if err := l.Record(ctx, runner.Event{SpecVersion: "1.0", ID: id}); err != nil {
			t.Fatal(err)
		}
		if got := lines(); len(got) != i+1 || !strings.Contains(got[i], `"id":"`+id+`"`) {
			t.Fatalf("after event %s the file holds %q", id, got)
		}
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := l.Record(ctx, runner.Event{SpecVersion: "1.0", ID: "e-3"}); err != nil {
		t.Fatal(err)
	}
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if got := lines(); len(got) != 3 || !strings.Contains(got[2], `"id":"e-3"`) {
		t.Fatalf("the log holds %q, want e-1, e-2 and e-3", got)
	}
}
