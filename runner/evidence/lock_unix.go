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
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("locking %s: %w", path, err)
	}
	return &fileLock{f: f}, nil
}

func (l *fileLock) unlock() {
	_ = syscall.Flock(int(l.f.Fd()), syscall.LOCK_UN)
	_ = l.f.Close()
}
