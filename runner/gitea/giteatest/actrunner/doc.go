// Package actrunner is a Gitea Actions runner for tests: it does what
// act_runner does, so a test can let the real Gitea (giteatest.Start)
// create workflow runs from real pull request, review, comment and push
// events and watch them run to the status Gitea shows.
//
// Start registers with Gitea's runner service (connect-rpc, the
// actions-proto-go messages), declares its labels and polls FetchTask.
// Each task is the one-job workflow Gitea extracted from the file it chose
// for the event, with Gitea's context (event payload, job token, ref, sha,
// run ids, server_url), the repository's secrets and variables. The job
// runs through the act library (github.com/nektos/act) in host mode
// ("-self-hosted": no container image can be pulled here), and its step
// results and log rows go back through UpdateTask and UpdateLog, so Gitea
// keeps the logs and derives the run status and commit statuses itself.
//
// It is not act_runner: it takes one task at a time, runs only jobs whose
// steps are `run:` scripts (no `uses:` of remote actions: nothing can be
// fetched here), knows the `github` context and not Gitea's `gitea` alias
// of it, and gives a job that `needs:` others their outputs and results
// without running them again, as Gitea hands them over. What it shares
// with act_runner is what matters to a workflow: the payload, the token,
// secrets and variables arrive exactly as Gitea sends them; server_url
// and api_url are the runner's address of Gitea without a trailing slash,
// as act_runner's are.
//
// Waiting is on Gitea, not on the runner: Await polls the repository's
// action tasks (the only Actions listing Gitea 1.23's API has) until a
// condition holds or a deadline passes, and Log reads a job's log back
// from Gitea's web route, so a test asserts on what Gitea shows.
package actrunner
