//go:build unix

package local

import (
	"context"
	"errors"
	"os"
	"syscall"
	"time"
)

// tryFlock takes f's lock if nobody holds it.
func tryFlock(f *os.File) (bool, error) {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return false, nil
	}
	return err == nil, err
}

// waitFlock waits for f's lock for up to wait. The wait is the kernel's
// (a blocking flock in its own goroutine), so the lock is taken the moment
// its holder lets go, not at the next poll. A wait that ends first leaves
// that goroutine behind: it releases the lock as soon as it gets it. f is
// closed when the wait fails.
func waitFlock(ctx context.Context, f *os.File, wait time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }()
	select {
	case err := <-done:
		if err != nil {
			f.Close()
		}
		return err
	case <-ctx.Done():
		go func() {
			if <-done == nil {
				unflock(f)
			}
			f.Close()
		}()
		return ctx.Err()
	}
}

func unflock(f *os.File) { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
