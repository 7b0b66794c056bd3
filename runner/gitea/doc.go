// Package gitea is Nova's adapter for Gitea: it finds approval claims in a
// pull request's reviews and /nova comments, answers team membership,
// describes the change under review, keeps Nova's pull request comment and
// sets commit statuses, all through Gitea's REST API (code.gitea.io/sdk).
//
// It reports what Gitea holds and decides nothing: whether a claim's author
// may approve is for the gate's import stage (runner), which also keeps
// authors from approving their own change.
//
// Every request goes through the retrying transport both forge adapters
// share (runner/forgehttp): 5xx answers, 429 and lost connections are
// retried with capped exponential backoff, honouring Retry-After, within a
// bounded number of attempts and a bounded total wait; each attempt has its
// own timeout; waits end with the context. Every list is read page by page. Failures carry
// runner.ForgeAPIFailed (runner.RunCancelled when the context ended), and
// the token never appears in an error.
//
// The token's user needs, on Gitea 1.23: read:repository (pull request,
// reviews, commits), write:repository (commit statuses), write:issue
// (comments), read:user (to find its own comment again) and
// read:organization (teams). To answer team membership it must also be an
// owner of the organisation or a member of every team asked about: Gitea
// tells only those whether someone else is in a team.
package gitea
