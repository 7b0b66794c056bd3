package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/nova-platform/nova/runner"
)

// EventLog appends events as canonical JSON lines to one file: the run's
// own copy of its events, for people and tools reading the run directory.
// It does not fsync. The evidence store, recorded after it (runner.Tee),
// is where an event is made durable before the run goes on, and a second
// fsync per event here cost a run as much again (15 per no-change run)
// without making any event safer: a line lost here with the machine is
// in the outbox or the repo.
type EventLog struct {
	mu   sync.Mutex
	path string
	// f is the file, opened on the first event and kept open until Close:
	// an open and a close per event were most of what the log cost a run
	// of many contracts.
	f *os.File
}

var (
	_ runner.Recorder          = (*EventLog)(nil)
	_ runner.CanonicalRecorder = (*EventLog)(nil)
)

// NewEventLog returns a log writing to path; the file is created on the
// first event.
func NewEventLog(path string) *EventLog { return &EventLog{path: path} }

// Path is the file the log writes.
func (l *EventLog) Path() string { return l.path }

// Record implements runner.Recorder.
func (l *EventLog) Record(ctx context.Context, e runner.Event) error {
	line, err := e.Canonical()
	if err != nil {
		return err
	}
	return l.RecordCanonical(ctx, e, line)
}

// RecordCanonical implements runner.CanonicalRecorder.
func (l *EventLog) RecordCanonical(_ context.Context, _ runner.Event, canonical []byte) error {
	line := append(canonical[:len(canonical):len(canonical)], '\n')

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
			return err
		}
		f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err != nil {
			return err
		}
		l.f = f
	}
	if _, err := l.f.Write(line); err != nil {
		return fmt.Errorf("appending to %s: %w", l.path, err)
	}
	return nil
}

// Close closes the file; an event recorded after opens it again.
func (l *EventLog) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.f == nil {
		return nil
	}
	err := l.f.Close()
	l.f = nil
	return err
}
