package evidence

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing"
)

// The witness is this machine's memory of every head it pushed. Git lets
// anyone with push rights force-push a history without some commits, and a
// repo cannot testify to what it no longer holds; the witness can: a
// witnessed head that is not in the current history proves a rewrite.
// It lives beside the outbox, outside the evidence repo.

// readWitness returns the heads recorded in path, oldest first; a missing
// file is an empty witness.
func readWitness(path string) ([]plumbing.Hash, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading witness: %w", err)
	}
	var heads []plumbing.Hash
	for _, line := range strings.Split(string(b), "\n") {
		if h, ok := witnessHead(line); ok {
			heads = append(heads, h)
		}
	}
	return heads, nil
}

// witnessHead reads a witness line's head. A torn last line from a crash
// does not count; the head before it does.
func witnessHead(line string) (plumbing.Hash, bool) {
	field, _, _ := strings.Cut(strings.TrimSpace(line), " ")
	if !plumbing.IsHash(field) {
		return plumbing.ZeroHash, false
	}
	return plumbing.NewHash(field), true
}

// lastWitness returns the newest head recorded in path (zero: none),
// reading the file from its end: every sync asks, and the file grows by
// one line per push for as long as the machine writes evidence. It
// answers what the last head readWitness lists would be.
func lastWitness(path string) (plumbing.Hash, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return plumbing.ZeroHash, nil
	}
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading witness: %w", err)
	}
	defer f.Close()
	end, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return plumbing.ZeroHash, fmt.Errorf("reading witness: %w", err)
	}
	// A line is a hash and a newline; a window of a few lines is enough
	// unless the tail is torn or foreign, and then it doubles.
	for window := int64(512); ; window *= 2 {
		start := max(end-window, 0)
		buf := make([]byte, end-start)
		if _, err := f.ReadAt(buf, start); err != nil && !errors.Is(err, io.EOF) {
			return plumbing.ZeroHash, fmt.Errorf("reading witness: %w", err)
		}
		lines := bytes.Split(buf, []byte("\n"))
		if start > 0 {
			// The window's first line may begin before it.
			lines = lines[1:]
		}
		for i := len(lines) - 1; i >= 0; i-- {
			if h, ok := witnessHead(string(lines[i])); ok {
				return h, nil
			}
		}
		if start == 0 {
			return plumbing.ZeroHash, nil
		}
	}
}

// ReadWitness returns the heads recorded in a witness file, oldest first,
// for VerifyOptions.Witness.
func ReadWitness(path string) ([]string, error) {
	heads, err := readWitness(path)
	out := make([]string, len(heads))
	for i, h := range heads {
		out[i] = h.String()
	}
	return out, err
}

// appendWitness records a pushed head durably.
func appendWitness(path string, head plumbing.Hash) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("opening witness: %w", err)
	}
	_, err = f.WriteString(head.String() + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("appending to witness: %w", err)
	}
	return nil
}
