package local

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/nova-platform/nova/runner"
)

// EventLog appends events as canonical JSON lines to one file, syncing each
// line to disk before Record returns.
type EventLog struct {
	mu   sync.Mutex
	path string
}

var _ runner.Recorder = (*EventLog)(nil)

// NewEventLog returns a log writing to path; the file is created on the
// first event.
func NewEventLog(path string) *EventLog { return &EventLog{path: path} }

// Path is the file the log writes.
func (l *EventLog) Path() string { return l.path }

// Record implements runner.Recorder.
func (l *EventLog) Record(_ context.Context, e runner.Event) error {
	line, err := e.Canonical()
	if err != nil {
		return err
	}
	line = append(line, '\n')

	l.mu.Lock()
	defer l.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(l.path), 0o755); err != nil {
		return err
	}
	f, err := os.OpenFile(l.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(line); err != nil {
		f.Close()
		return fmt.Errorf("appending to %s: %w", l.path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("syncing %s: %w", l.path, err)
	}
	return f.Close()
}
