package evidence

import (
	"errors"
	"fmt"
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
		// A torn last line from a crash does not count; the head before it does.
		if field, _, _ := strings.Cut(strings.TrimSpace(line), " "); plumbing.IsHash(field) {
			heads = append(heads, plumbing.NewHash(field))
		}
	}
	return heads, nil
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
