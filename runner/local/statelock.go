package local

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nova-platform/nova/runner"
)

// StateLock is the run lock of one machine: one file per contract and
// environment under Dir, flock'd for the run's span and holding the
// holder's JSON while it is held. The kernel drops a flock when its
// process dies, however it dies, so a crashed run never leaves a lock
// behind for an operator to clear. flock locks belong to the open file,
// not the process, so two runs inside one process (a monorepo run) keep
// each other out as well.
type StateLock struct{ Dir string }

var _ runner.StateLock = StateLock{}

// Lock implements runner.StateLock.
func (l StateLock) Lock(ctx context.Context, req runner.LockRequest) (func() error, error) {
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		return nil, runner.Errorf(runner.StateLockFailed, "creating the lock directory: %w", err)
	}
	path := filepath.Join(l.Dir, lockFileName(req.Key))
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, runner.Errorf(runner.StateLockFailed, "opening the run lock of %s: %w", req.Key, err)
	}
	ok, err := tryFlock(f)
	if err != nil {
		f.Close()
		return nil, runner.Errorf(runner.StateLockFailed, "locking %s: %w", path, err)
	}
	if !ok {
		holder := readHolder(path)
		if req.Wait <= 0 {
			f.Close()
			return nil, locked(req.Key, holder, "")
		}
		if req.Waiting != nil {
			req.Waiting(holder)
		}
		if err := waitFlock(ctx, f, req.Wait); err != nil {
			if ctx.Err() != nil {
				return nil, runner.Errorf(runner.RunCancelled, "waiting for the run lock of %s: %w", req.Key, ctx.Err())
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return nil, locked(req.Key, readHolder(path), " after waiting "+req.Wait.String())
			}
			return nil, runner.Errorf(runner.StateLockFailed, "locking %s: %w", path, err)
		}
	}
	if err := writeHolder(f, req.Holder); err != nil {
		unflock(f)
		f.Close()
		return nil, runner.Errorf(runner.StateLockFailed, "recording the holder of %s: %w", path, err)
	}
	return func() error {
		// Emptied before the unlock: afterwards it may already be the
		// next holder's.
		_ = f.Truncate(0)
		unflock(f)
		return f.Close()
	}, nil
}

func locked(key, holder, waited string) error {
	return runner.Errorf(runner.StateLocked, "contract and environment %s are locked by %s%s; it is released when that run ends (pass --lock-timeout to wait for it)", key, holder, waited)
}

// lockFileName keeps a key (a contract id, which the schema makes a UUID,
// and an environment) inside the lock directory whatever it holds.
func lockFileName(key string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '.'
	}, key) + ".lock"
}

func writeHolder(f *os.File, h runner.LockHolder) error {
	data, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := f.Truncate(0); err != nil {
		return err
	}
	_, err = f.WriteAt(append(data, '\n'), 0)
	return err
}

// readHolder names whoever holds the lock at path, from what it wrote.
// A holder that has locked but not yet written is named as such.
func readHolder(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("another run (its lock file cannot be read: %v)", err)
	}
	var h runner.LockHolder
	if len(data) == 0 || json.Unmarshal(data, &h) != nil || h.RunID == "" {
		return "another run (it has not yet written its name)"
	}
	return h.String()
}
