//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package evidence

import (
	"fmt"
	"os"
	"syscall"
)

// fileLock serialises nova processes sharing one state dir (two runs on
// one machine): the outbox, witness and local clone are read-modify-write.
type fileLock struct{ f *os.File }

func lockFile(path string) (*fileLock, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening lock %s: %w", path, err)
	}
	l := &fileLock{f: f}
	if err := l.relock(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

// relock takes the lock again after release, on the file kept open.
func (l *fileLock) relock() error {
	if err := syscall.Flock(int(l.f.Fd()), syscall.LOCK_EX); err != nil {
		return fmt.Errorf("locking %s: %w", l.f.Name(), err)
	}
	return nil
}

// release lets go of the lock and keeps the file open for relock.
func (l *fileLock) release() { _ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN) }

func (l *fileLock) unlock() {
	l.release()
	_ = l.f.Close()
}
