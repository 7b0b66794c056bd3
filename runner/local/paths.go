package local

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"path/filepath"
	"time"
)

// StateDir is where local mode keeps Terraform state when nothing else is
// configured: $XDG_STATE_HOME/nova/state, else ~/.local/state/nova/state.
// State lives outside the checkout so that `git clean` cannot lose it and a
// commit cannot publish it.
func StateDir(getenv func(string) string) (string, error) {
	if d := getenv("XDG_STATE_HOME"); d != "" {
		return filepath.Join(d, "nova", "state"), nil
	}
	home := getenv("HOME")
	if home == "" {
		return "", errors.New("neither XDG_STATE_HOME nor HOME is set; pass --state-dir")
	}
	return filepath.Join(home, ".local", "state", "nova", "state"), nil
}

// RunsDir is where a checkout keeps its runs' events and plan bundles.
func RunsDir(checkout string) string { return filepath.Join(checkout, ".nova", "runs") }

// NewRunID returns a run id that sorts by start time and cannot collide
// between two runs started in the same second.
func NewRunID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
