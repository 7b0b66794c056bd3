//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gitrepo

import "os"

// mapFile reads the file whole where mmap is not at hand.
func mapFile(path string) ([]byte, func(), error) {
	b, err := os.ReadFile(path)
	return b, func() {}, err
}
