package gitea

import (
	"context"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Statuses sets commit statuses in the repository.
type Statuses struct{ c *Client }

var _ runner.StatusSetter = (*Statuses)(nil)

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
