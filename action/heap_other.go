//go:build !linux

package main

// preferHugePages does nothing where transparent huge pages are not a
// per-process choice.
func preferHugePages() {}
