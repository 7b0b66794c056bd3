// Package imagetest builds the container action's image with the real
// Docker Engine and runs it the way the action's users run it: as GitHub's
// runner starts a container action (its docker run emulated flag for flag),
// under act in Docker mode, and in whole workflows on an emulation of
// GitHub Actions (ghactions_test.go) driven by the events GitHub sends,
// against a fake of GitHub's API and git hosting (the GitHub journey).
//
// It holds tests only, in a package of their own, so that `make test` runs
// them once: ./action runs a second time under the race detector, and
// these tests race nothing of nova's.
package imagetest
