package gitea

import (
	"context"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Statuses sets commit statuses in the repository.
type Statuses struct{ c *Client }

var (
	_ runner.StatusSetter = (*Statuses)(nil)
	_ runner.StatusLister = (*Statuses)(nil)
)

// SetStatus adds a status to commit; Gitea shows the newest per context.
func (s *Statuses) SetStatus(ctx context.Context, commit string, st runner.CommitStatus) error {
	c := s.c
	activity := "setting status " + st.Context + " on " + c.owner + "/" + c.repo + "@" + commit
	switch {
	case commit == "":
		return runner.Errorf(runner.InternalError, "setting status %s: no commit", st.Context)
	case st.Context == "":
		return runner.Errorf(runner.InternalError, "%s: no context", activity)
	}
	switch st.State {
	case runner.StatePending, runner.StateSuccess, runner.StateFailure, runner.StateError:
	default:
		return runner.Errorf(runner.InternalError, "%s: state %q is not pending, success, failure or error", activity, st.State)
	}
	// The answer names the state "status", not "state" as the request
	// does; the SDK reads it right, and nothing here needs it anyway.
	_, resp, err := c.api(ctx).CreateStatus(c.owner, c.repo, commit, sdk.CreateStatusOption{
		State:       sdk.StatusState(st.State),
		TargetURL:   st.TargetURL,
		Description: st.Description,
		Context:     st.Context,
	})
	if err != nil {
		return c.fail(ctx, activity, resp, err)
	}
	return nil
}

// ListStatuses implements runner.StatusLister. Gitea lists every status
// the commit was given; the newest of each context (the highest id) is
// the one it shows.
func (s *Statuses) ListStatuses(ctx context.Context, commit string) ([]runner.CommitStatus, error) {
	c := s.c
	all, err := paginate(ctx, c, "listing the statuses of "+c.owner+"/"+c.repo+"@"+commit,
		func(st *sdk.Status) string {
			if st == nil {
				return ""
			}
			return idKey(st.ID)
		},
		func(o sdk.ListOptions) ([]*sdk.Status, *sdk.Response, error) {
			return c.api(ctx).ListStatuses(c.owner, c.repo, commit, sdk.ListStatusesOption{ListOptions: o})
		})
	if err != nil {
		return nil, err
	}
	newest := map[string]*sdk.Status{}
	var order []string
	for _, st := range all {
		if st == nil {
			continue
		}
		if old, ok := newest[st.Context]; !ok {
			order = append(order, st.Context)
			newest[st.Context] = st
		} else if st.ID > old.ID {
			newest[st.Context] = st
		}
	}
	out := make([]runner.CommitStatus, 0, len(order))
	for _, ctxName := range order {
		st := newest[ctxName]
		out = append(out, runner.CommitStatus{Context: st.Context, State: runner.CommitState(st.State), Description: st.Description, TargetURL: st.TargetURL})
	}
	return out, nil
}
