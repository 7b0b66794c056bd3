package github

import (
	"context"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// maxDescription is the longest description GitHub accepts on a commit
// status or a deployment status.
const maxDescription = 140

// Statuses sets commit statuses.
type Statuses struct{ c *Client }

var (
	_ runner.StatusSetter = (*Statuses)(nil)
	_ runner.StatusLister = (*Statuses)(nil)
)

// Statuses sets commit statuses.
func (c *Client) Statuses() *Statuses { return &Statuses{c: c} }

// SetStatus sets s on commit. A description longer than GitHub accepts is
// shortened, since a status with a clipped description is better than
// none.
func (st *Statuses) SetStatus(ctx context.Context, commit string, s runner.CommitStatus) error {
	switch s.State {
	case runner.StatePending, runner.StateSuccess, runner.StateFailure, runner.StateError:
	default:
		return runner.Errorf(runner.InternalError, "github: commit status state %q is not pending, success, failure or error", s.State)
	}
	if commit == "" || s.Context == "" {
		return runner.Errorf(runner.InternalError, "github: a commit status needs a commit and a context")
	}
	status := &gh.RepoStatus{
		State:       gh.String(string(s.State)),
		Context:     gh.String(s.Context),
		Description: gh.String(truncate(s.Description, maxDescription)),
	}
	if s.TargetURL != "" {
		status.TargetURL = gh.String(s.TargetURL)
	}
	if _, _, err := st.c.gh.Repositories.CreateStatus(ctx, st.c.owner, st.c.repo, commit, status); err != nil {
		return st.c.fail(ctx, err, permStatusesW, "setting status %q on commit %s", s.Context, commit)
	}
	return nil
}

// truncate shortens s to at most n characters, marking the cut with "…".
func truncate(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// ListStatuses implements runner.StatusLister: the combined status, which
// holds the newest status of each context, a hundred a page.
func (st *Statuses) ListStatuses(ctx context.Context, commit string) ([]runner.CommitStatus, error) {
	all, err := listAll(func(opts gh.ListOptions) ([]*gh.RepoStatus, *gh.Response, error) {
		combined, resp, err := st.c.gh.Repositories.GetCombinedStatus(ctx, st.c.owner, st.c.repo, commit, &opts)
		if err != nil {
			return nil, resp, err
		}
		return combined.Statuses, resp, nil
	})
	if err != nil {
		return nil, st.c.fail(ctx, err, permStatusesR, "reading the statuses of commit %s", commit)
	}
	out := make([]runner.CommitStatus, 0, len(all))
	for _, s := range all {
		out = append(out, runner.CommitStatus{Context: s.GetContext(), State: runner.CommitState(s.GetState()),
			Description: s.GetDescription(), TargetURL: s.GetTargetURL()})
	}
	return out, nil
}
