package evidence

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/nova-platform/nova/runner"
	"github.com/nova-platform/nova/runner/evidence/chain"
)

// outbox is the local, durable queue between "the stage's effect is
// acknowledged" and "the event is in the evidence repo": one file per
// contract directory (<state dir>/outbox/<dir>.jsonl), so that a contract
// whose events cannot be delivered holds up no other. A file is
// append-only lines: an event (canonical JSON) when it is recorded, and
// {"delivered":"<id>"} once it is pushed; appends are fsynced before
// returning, and a file with nothing pending is emptied. Each operation
// re-reads the file under the state dir's lock, because another nova
// process sharing the state dir may have appended or drained it meanwhile.
type outbox struct {
	dir  string
	lock string
	// unsynced, while deferring (Store.DeferOutboxSync), collects the
	// files whose appends were not synced yet; nil syncs every append.
	unsynced *unsyncedFiles
	// held, when set, keeps the lock file open for the store's life:
	// opening and closing it for every event was a tenth of validating
	// many contracts. Nil opens it for each operation.
	held *heldLock
}

// heldLock is the state dir's lock file, opened once and flocked for
// each operation. Its mutex keeps the store's own goroutines apart, since
// they share one open file, which flock does not tell apart; other
// processes (and other stores) open their own, which it does.
type heldLock struct {
	mu sync.Mutex
	l  *fileLock
}

// close closes the lock file; a later operation opens it again.
func (h *heldLock) close() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.l != nil {
		h.l.unlock()
		h.l = nil
	}
}

// unsyncedFiles are outbox files (and the outbox directory, when an
// append created a file) written but not synced yet.
type unsyncedFiles struct {
	mu    sync.Mutex
	paths map[string]bool
}

func (u *unsyncedFiles) add(paths ...string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	for _, p := range paths {
		u.paths[p] = true
	}
}

// take returns the paths collected so far and forgets them.
func (u *unsyncedFiles) take() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	out := make([]string, 0, len(u.paths))
	for p := range u.paths {
		out = append(out, p)
	}
	clear(u.paths)
	return out
}

// legacyOutbox is the single outbox of every contract that Nova kept
// before outboxes were per contract; Open moves what it holds.
const legacyOutbox = "outbox.jsonl"

// outboxLine is either an event or a delivery mark.
type outboxLine struct {
	Delivered string `json:"delivered"`
}

func (o outbox) file(contract string) string { return filepath.Join(o.dir, contract+".jsonl") }

// locked runs fn holding the state dir's lock.
func (o outbox) locked(fn func() error) error {
	if h := o.held; h != nil {
		h.mu.Lock()
		defer h.mu.Unlock()
		if h.l == nil {
			l, err := lockFile(o.lock)
			if err != nil {
				return err
			}
			h.l = l
		} else if err := h.l.relock(); err != nil {
			return err
		}
		defer h.l.release()
		return fn()
	}
	l, err := lockFile(o.lock)
	if err != nil {
		return err
	}
	defer l.unlock()
	return fn()
}

// load returns the contract's pending events in order, and each one's
// line: its canonical form as recorded (see canonicalAt).
func (o outbox) load(contract string) (pending []runner.Event, lines [][]byte, err error) {
	err = o.locked(func() error {
		pending, lines, err = loadOutbox(o.file(contract))
		return err
	})
	return pending, lines, err
}

// all returns every contract's pending events, contract by contract.
func (o outbox) all() ([]runner.Event, error) {
	contracts, err := o.contracts()
	if err != nil {
		return nil, err
	}
	var all []runner.Event
	for _, c := range contracts {
		pending, _, err := o.load(c)
		if err != nil {
			return nil, err
		}
		all = append(all, pending...)
	}
	return all, nil
}

// contracts lists the contract directories with an outbox file, sorted.
func (o outbox) contracts() ([]string, error) {
	entries, err := os.ReadDir(o.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("reading outbox: %w", err)
	}
	var out []string
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), ".jsonl"); ok && !e.IsDir() {
			out = append(out, name)
		}
	}
	return out, nil
}

// add appends e unless an event with its id is already pending (a
// redelivery), and syncs the file before returning.
// canonical, when not nil, is e.Canonical()'s bytes, computed already.
func (o outbox) add(contract string, e runner.Event, canonical []byte) error {
	return o.locked(func() error { return o.addLocked(contract, e, canonical) })
}

func (o outbox) addLocked(contract string, e runner.Event, canonical []byte) error {
	path := o.file(contract)
	// One open serves the duplicate check and the append: a read of the
	// file and an append through separate opens (and a stat to tell a new
	// file) were most of the system calls of recording an event.
	f, created, err := openOutbox(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b, err := readOpenOutbox(f)
	if err != nil {
		return err
	}
	// Only a file that mentions the id anywhere can hold the event; the
	// others (every new event's) are not decoded at all.
	if e.ID != "" && bytes.Contains(b, []byte(e.ID)) {
		pending, _, err := parseOutbox(path, b)
		if err != nil {
			return err
		}
		if slices.ContainsFunc(pending, func(p runner.Event) bool { return p.ID == e.ID }) {
			return nil
		}
	}
	line := canonical
	if line == nil {
		if line, err = e.Canonical(); err != nil {
			return fmt.Errorf("encoding event: %w", err)
		}
	}
	_, err = f.Write(append(line[:len(line):len(line)], '\n'))
	if err == nil && o.unsynced == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to outbox: %w", err)
	}
	switch {
	case o.unsynced != nil && created:
		o.unsynced.add(path, filepath.Dir(path))
	case o.unsynced != nil:
		o.unsynced.add(path)
	case created:
		// A new file's directory entry must be durable too.
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("syncing outbox dir: %w", err)
		}
	}
	return nil
}

// openOutbox opens an outbox file to read and append, creating it if
// need be; created says it did (its directory entry is then to sync).
func openOutbox(path string) (f *os.File, created bool, err error) {
	f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
	if errors.Is(err, os.ErrNotExist) {
		f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE|os.O_EXCL, 0o600)
		created = err == nil
		if errors.Is(err, os.ErrExist) {
			// Created meanwhile by a writer not holding the lock.
			f, err = os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0o600)
		}
	}
	if err != nil {
		return nil, false, fmt.Errorf("opening outbox: %w", err)
	}
	return f, created, nil
}

// readOpenOutbox reads an open outbox file as readOutbox does, cutting a
// torn last line from it.
func readOpenOutbox(f *os.File) ([]byte, error) {
	b, err := io.ReadAll(f)
	if err != nil {
		return nil, fmt.Errorf("reading outbox: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i != len(b)-1 {
		b = b[:i+1]
		if err := f.Truncate(int64(len(b))); err != nil {
			return nil, fmt.Errorf("truncating torn outbox line: %w", err)
		}
	}
	return b, nil
}

// remove marks the events with ids delivered once they are pushed, with
// one append and one sync for a whole batch, or empties the file when
// nothing else is pending (kept, since creating it again would cost a
// directory sync per batch). A crash before the mark keeps the events
// pending; the next drain finds their ids in the repo and drops them.
func (o outbox) remove(contract string, ids ...string) error {
	if len(ids) == 0 {
		return nil
	}
	return o.locked(func() error {
		path := o.file(contract)
		pending, _, err := loadOutbox(path)
		if err != nil {
			return err
		}
		if !slices.ContainsFunc(pending, func(p runner.Event) bool { return !slices.Contains(ids, p.ID) }) {
			if err := os.Truncate(path, 0); err != nil && !errors.Is(err, os.ErrNotExist) {
				return fmt.Errorf("emptying outbox: %w", err)
			}
			return nil
		}
		var lines []byte
		for i, id := range ids {
			line, err := json.Marshal(outboxLine{Delivered: id})
			if err != nil {
				return err
			}
			if i > 0 {
				lines = append(lines, '\n')
			}
			lines = append(lines, line...)
		}
		return appendLine(path, lines)
	})
}

// migrate moves the events pending in a legacy single outbox into the
// per-contract ones, so an upgrade loses nothing. A crash midway leaves
// the legacy file, and the next Open moves its events again: add drops
// those already moved.
func (o outbox) migrate(legacy string) error {
	return o.locked(func() error {
		pending, _, err := loadOutbox(legacy)
		if err != nil {
			return err
		}
		for _, e := range pending {
			if err := o.addLocked(chain.Dir(e.ContractID), e, nil); err != nil {
				return err
			}
		}
		if err := os.Remove(legacy); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("removing %s: %w", legacy, err)
		}
		return nil
	})
}

// loadOutbox returns the pending events of an outbox file in order. A
// last line without its newline is a write torn by a crash: that Record
// never returned, so the event was never acknowledged and is dropped (and
// cut from the file so later appends start on a clean line).
func loadOutbox(path string) ([]runner.Event, [][]byte, error) {
	b, err := readOutbox(path)
	if err != nil {
		return nil, nil, err
	}
	return parseOutbox(path, b)
}

// readOutbox reads an outbox file, cutting a torn last line from it.
func readOutbox(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading outbox: %w", err)
	}
	if i := bytes.LastIndexByte(b, '\n'); i != len(b)-1 {
		b = b[:i+1]
		if err := os.Truncate(path, int64(len(b))); err != nil {
			return nil, fmt.Errorf("truncating torn outbox line: %w", err)
		}
	}
	return b, nil
}

// parseOutbox returns the pending events of an outbox file's content,
// and each one's line.
func parseOutbox(path string, b []byte) ([]runner.Event, [][]byte, error) {
	var events []runner.Event
	var lines [][]byte
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
			return nil, nil, fmt.Errorf("reading %s line %d: %w", filepath.Base(path), n+1, err)
		}
		events = append(events, e)
		lines = append(lines, line)
	}
	seen := map[string]bool{}
	pending, pendingLines := events[:0], lines[:0]
	for i, e := range events {
		if !delivered[e.ID] && !seen[e.ID] {
			pending, pendingLines = append(pending, e), append(pendingLines, lines[i])
			seen[e.ID] = true
		}
	}
	return pending, pendingLines, nil
}

// canonicalAt returns the canonical form of pending event e (line, as the
// outbox holds it) numbered seq after the event of hash prev. An event
// goes into the outbox as its canonical form (Record, or the Emitter's
// bytes through RecordCanonical), numbered as its emitter saw the chain:
// when that is still its place, the line is that form, and computing it
// again (a JSON encoding, decoding and sorted encoding per event) was the
// largest cost of delivering many contracts' events. Otherwise the event
// is renumbered and encoded anew.
func canonicalAt(e runner.Event, line []byte, seq int64, prev string) (runner.Event, []byte, error) {
	if line != nil && e.Seq == seq && e.PrevEventHash == prev {
		return e, line, nil
	}
	e.Seq, e.PrevEventHash = seq, prev
	canon, err := e.Canonical()
	return e, canon, err
}

func appendLine(path string, line []byte) error {
	_, statErr := os.Stat(path)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
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
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("syncing outbox dir: %w", err)
		}
	}
	return nil
}
