// Package checkout reads the consumer's files, under one rule: whatever
// Nova reads from a checkout (the contract, test reports, policies, its
// configuration) or from a plan bundle stays inside that directory after
// every symbolic link is resolved, is a regular file, and is read only up
// to a size. A link out of the checkout, a FIFO or a device is refused
// with a reason naming the path, instead of being followed, blocking or
// growing without end.
package checkout

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/nova-platform/nova/runner"
)

// Rel turns p, as a user or a contract gave it (relative to dir, or
// absolute), into a path relative to dir, refusing one that leaves it.
// Links are resolved when the file is opened, through the root.
func Rel(dir, p string) (string, error) {
	if filepath.IsAbs(p) {
		absDir, err := filepath.Abs(dir)
		if err != nil {
			return "", runner.Errorf(runner.ConfigInvalid, "%w", err)
		}
		r, err := filepath.Rel(absDir, p)
		if err != nil || escapes(r) {
			return "", runner.Errorf(runner.PathOutsideCheckout, "%s is outside %s", p, dir)
		}
		return r, nil
	}
	if escapes(filepath.Clean(p)) {
		return "", runner.Errorf(runner.PathOutsideCheckout, "%s leaves %s", p, dir)
	}
	return filepath.Clean(p), nil
}

func escapes(rel string) bool {
	return rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// ReadFile reads rel inside dir, at most limit bytes. A missing file is
// an error that wraps fs.ErrNotExist; a file over the limit is refused
// with FileTooLarge, without being read whole.
func ReadFile(dir, rel string, limit int64) ([]byte, error) {
	f, err := Open(dir, rel)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if int64(len(data)) > limit {
		return nil, runner.Errorf(runner.FileTooLarge, "%s is larger than %d bytes", rel, limit)
	}
	return data, nil
}

// Open opens rel inside dir for reading, refusing anything but a regular
// file inside dir. The file is opened without blocking, so a FIFO cannot
// hold the run before it is refused.
func Open(dir, rel string) (*os.File, error) {
	rel, err := Rel(dir, rel)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	defer root.Close()
	f, err := root.OpenFile(rel, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, classify(dir, rel, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	if !fi.Mode().IsRegular() {
		f.Close()
		return nil, runner.Errorf(runner.FileNotRegular, "%s is not a regular file (%s)", rel, fi.Mode().Type())
	}
	return f, nil
}

// OpenDir opens the directory rel inside dir as a root of its own, for
// walking (a policy directory): a link to the directory, or inside it,
// cannot lead out of dir.
func OpenDir(dir, rel string) (*os.Root, error) {
	rel, err := Rel(dir, rel)
	if err != nil {
		return nil, err
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("opening %s: %w", dir, err)
	}
	defer root.Close()
	sub, err := root.OpenRoot(rel)
	if err != nil {
		return nil, classify(dir, rel, err)
	}
	return sub, nil
}

// classify tells an escape through a link from other failures to open.
func classify(dir, rel string, err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("%s: %w", rel, err)
	case strings.Contains(err.Error(), "path escapes from parent"):
		// os.Root's error for a link that resolves outside the root; it
		// has no exported sentinel.
		return runner.Errorf(runner.PathOutsideCheckout, "%s leads outside %s through a symbolic link", rel, dir)
	}
	return fmt.Errorf("opening %s: %w", rel, err)
}
