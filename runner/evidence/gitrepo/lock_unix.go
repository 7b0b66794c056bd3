//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package gitrepo

import (
	"os"
	"path/filepath"
	"syscall"
)

// The pack lock is a flock, not a lock file created exclusively, so a
// merger that dies lets go of it with its process. It is shared by
// readers re-listing the packs and held exclusively by the one merger:
// go-git reads the pack list and the indexes one file at a time, and a
// listing taken while a merge removes packs can name a pack whose file is
// gone by the time it is opened.
func packLockPath(gitDir string) string { return filepath.Join(gitDir, "nova-pack.lock") }

// mergeLock takes the pack lock exclusively if nobody holds it.
func mergeLock(gitDir string) (unlock func(), ok bool) {
	f, err := os.OpenFile(packLockPath(gitDir), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, false
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return nil, false
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, true
}

// settle waits until no merge is removing packs, and keeps it so until
// release: a repo nobody ever merged (no lock file) or one this process
// cannot open need no wait or cannot be coordinated with.
func settle(gitDir string) (release func()) {
	f, err := os.Open(packLockPath(gitDir))
	if err != nil {
		return func() {}
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		f.Close()
		return func() {}
	}
	return func() {
		_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}
}
