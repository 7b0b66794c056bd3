//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package evidence

// fileLock is a no-op where flock is unavailable: one nova process per
// state dir is then the caller's responsibility.
type fileLock struct{}

func lockFile(string) (*fileLock, error) { return &fileLock{}, nil }

func (*fileLock) relock() error { return nil }

func (*fileLock) release() {}

func (*fileLock) unlock() {}
