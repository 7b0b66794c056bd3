package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/nova-platform/nova/runner"
)

// outbox is the local, durable queue between "the stage's effect is
// acknowledged" and "the event is in the evidence repo". It is an
// append-only file of lines: an event (canonical JSON) when it is recorded,
// and {"delivered":"<id>"} once it is pushed. Appends are fsynced before
// returning; when nothing is pending the file is truncated. It is read
// afresh on every operation (under the store's lock) because another nova
// process sharing the state dir may have appended or drained it meanwhile.
type outbox struct {
	path string
}

// outboxLine is either an event or a delivery mark.
type outboxLine struct {
	Delivered string `json:"delivered"`
}

// load returns the pending events in order. A last line without its
// newline is a write torn by a crash: that Record never returned, so the
// event was never acknowledged and is dropped (and cut from the file so
// later appends start on a clean line).
func (o *outbox) load() ([]runner.Event, error) {
	b, err := os.ReadFile(o.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading outbox: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i != len(b)-1 {
		b = b[:i+1]
		if err := os.Truncate(o.path, int64(len(b))); err != nil {
			return nil, fmt.Errorf("truncating torn outbox line: %w", err)
		}
	}
	var events []runner.Event
	delivered := map[string]bool{}
	for n, line := range bytes.Split(bytes.TrimSuffix(b, []byte("\n")), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var mark outboxLine
		if bytes.HasPrefix(line, []byte(`{"delivered":`)) && json.Unmarshal(line, &mark) == nil {
			delivered[mark.Delivered] = true
			continue
		}
		var e runner.Event
		if err := json.Unmarshal(line, &e); err != nil {
			return nil, fmt.Errorf("reading outbox line %d: %w", n+1, err)
		}
		events = append(events, e)
	}
	pending := events[:0]
	seen := map[string]bool{}
	for _, e := range events {
		if !delivered[e.ID] && !seen[e.ID] {
			pending = append(pending, e)
			seen[e.ID] = true
		}
	}
	return pending, nil
}

// add appends e unless an event with its id is already pending (a
// redelivery), and syncs the file before returning.
func (o *outbox) add(e runner.Event) error {
	pending, err := o.load()
	if err != nil {
		return err
	}
	for _, p := range pending {
		if p.ID == e.ID {
			return nil
		}
	}
	line, err := e.Canonical()
	if err != nil {
		return fmt.Errorf("encoding event: %w", err)
	}
	return o.append(line)
}

// remove marks the event with id delivered once it is pushed, or empties
// the file when it was the last pending one. A crash before the mark keeps
// the event pending; the next drain finds its id in the repo and drops it.
func (o *outbox) remove(id string) error {
	pending, err := o.load()
	if err != nil {
		return err
	}
	if len(pending) == 0 || (len(pending) == 1 && pending[0].ID == id) {
		if err := os.Truncate(o.path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("emptying outbox: %w", err)
		}
		return nil
	}
	line, err := json.Marshal(outboxLine{Delivered: id})
	if err != nil {
		return err
	}
	return o.append(line)
}

func (o *outbox) append(line []byte) error {
	_, statErr := os.Stat(o.path)
	f, err := os.OpenFile(o.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening outbox: %w", err)
	}
	_, err = f.Write(append(line, '\n'))
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to outbox: %w", err)
	}
	if errors.Is(statErr, os.ErrNotExist) {
		// A new file's directory entry must be durable too.
		if err := syncDir(filepath.Dir(o.path)); err != nil {
			return fmt.Errorf("syncing outbox dir: %w", err)
		}
	}
	return nil
}
