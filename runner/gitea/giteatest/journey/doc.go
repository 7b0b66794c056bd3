// Package journey holds Nova's end-to-end test on a real Gitea: an
// operator scaffolds a repository with `nova init --forge gitea`, a
// developer opens a pull request, reviewers approve by review and by
// comment, and Gitea itself runs the workflow for every one of those
// events through the test runner (giteatest/actrunner). The test asserts
// what Gitea shows afterwards: the commit statuses of the pull request's
// head, Nova's comments, and the evidence repository on the same Gitea.
//
// The package has no code of its own; it exists so the journey runs with
// `go test ./runner/gitea/giteatest/...` beside the forge it drives.
package journey
