package github

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"unicode/utf8"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// MaxCheckRunSummary is the longest check run summary GitHub accepts, in
// characters.
const MaxCheckRunSummary = 65535

// maxCheckRunTitle keeps a title to one line's worth.
const maxCheckRunTitle = 200

// CheckRuns publishes check runs on commits.
type CheckRuns struct {
	c *Client
	// refused is set once GitHub refused the token check runs (a workflow
	// without checks: write): every later one would be refused too, and
	// is not asked for.
	refused atomic.Bool
}

// ErrCheckRunsRefused is what ReportCheckRun returns, without asking,
// after GitHub refused this token a check run once.
var ErrCheckRunsRefused = errors.New("github refused this token check runs before (the workflow's permissions lack checks: write)")

var _ runner.CheckRunReporter = (*CheckRuns)(nil)

// CheckRuns publishes check runs, one per contract and environment.
func (c *Client) CheckRuns() *CheckRuns { return &CheckRuns{c: c} }

// ReportCheckRun creates a completed check run on commit. A summary longer
// than GitHub accepts is cut, saying so and pointing at the run, whose
// artifacts hold the whole report: a cut report is better than none, and
// far better than an API error.
func (cr *CheckRuns) ReportCheckRun(ctx context.Context, commit string, r runner.CheckRun) error {
	if commit == "" || r.Name == "" {
		return runner.Errorf(runner.InternalError, "github: a check run needs a commit and a name")
	}
	opts := gh.CreateCheckRunOptions{
		Name:       r.Name,
		HeadSHA:    commit,
		Status:     gh.String("completed"),
		Conclusion: gh.String(conclusion(r.State, r.DetailsURL != "")),
		Output: &gh.CheckRunOutput{
			Title:   gh.String(truncate(r.Title, maxCheckRunTitle)),
			Summary: gh.String(FitCheckRunSummary(r.Summary, r.DetailsURL)),
		},
	}
	if r.DetailsURL != "" {
		opts.DetailsURL = gh.String(r.DetailsURL)
	}
	if cr.refused.Load() {
		return ErrCheckRunsRefused
	}
	if _, _, err := cr.c.gh.Checks.CreateCheckRun(ctx, cr.c.owner, cr.c.repo, opts); err != nil {
		if s := statusOfErr(err); s == http.StatusForbidden || s == http.StatusNotFound {
			cr.refused.Store(true)
		}
		return cr.c.fail(ctx, err, permChecksW, "creating check run %q on commit %s", r.Name, commit)
	}
	return nil
}

// FitCheckRunSummary cuts summary to what GitHub accepts, ending with a
// note that links the run (its artifacts) when it had to cut.
func FitCheckRunSummary(summary, runURL string) string {
	if utf8.RuneCountInString(summary) <= MaxCheckRunSummary {
		return summary
	}
	note := "\n\n*… truncated to fit a check run; the whole report is in the workflow run's artifacts.*\n"
	if runURL != "" {
		note = "\n\n*… truncated to fit a check run; the whole report is in the [workflow run's artifacts](" + runURL + ").*\n"
	}
	keep := MaxCheckRunSummary - utf8.RuneCountInString(note)
	return string([]rune(summary)[:keep]) + note
}

// conclusion is a check run's conclusion for a commit state: a plan that
// waits for its approval needs an action, not a failure.
// GitHub wants a details URL with action_required.
func conclusion(s runner.CommitState, details bool) string {
	switch {
	case s == runner.StatePending && !details:
		return "neutral"
	}
	switch s {
	case runner.StateSuccess:
		return "success"
	case runner.StateFailure:
		return "failure"
	case runner.StatePending:
		return "action_required"
	}
	return "neutral"
}
