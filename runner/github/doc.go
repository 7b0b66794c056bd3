// Package github is Nova's GitHub adapter: it implements the runner's forge
// ports (approval sources, team membership, the change under review, the
// state of pull requests, the plan comment, commit statuses and
// deployments) over GitHub's REST API with
// go-github.
//
// The adapter reports what GitHub holds and decides nothing: an approval
// source returns every claim that matches the request's plan, and the gate's
// import stage decides who may give it. Every call goes through one
// http.RoundTripper (transport.go) that adds the token, then the retrying
// transport both forge adapters share (runner/forgehttp), which bounds each
// attempt in time and retries server errors and rate limits within a
// budget, so a flaky or throttled API slows a run down instead of failing
// it, and a broken one fails it with FORGE_API_FAILED instead of hanging it.
//
// Nothing here reads the environment: action/ passes the API URL, token,
// repository, pull request and workflow run in through Config.
package github
