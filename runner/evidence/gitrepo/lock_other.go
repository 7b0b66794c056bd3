//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package gitrepo

// Without flock no merge can be coordinated with readers: packs are not
// merged, which costs lookups, never correctness.
func mergeLock(string) (unlock func(), ok bool) { return nil, false }

func settle(string) (release func()) { return func() {} }
