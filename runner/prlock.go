package runner

import (
	"context"
	"fmt"
)

// Pull requests apply to dev before they are merged, each with its own
// version of the contract: two open at once would take turns reverting
// each other's dev. So dev is locked per pull request: the first whose
// change is applied there holds it until the forge says it was merged or
// closed, or an operator releases it (`nova unlock`, nova.lock.released);
// another pull request's run in dev is refused before it plans
// (STATE_HELD_BY_PR), its comment naming the holder. The pull request
// that holds dev is never refused by its own lock.
//
// Who holds is read from the evidence (the authorization records the pull
// request whose run it was; the apply completing it takes the hold), and
// whether the holder is still open from the forge, so no state beyond
// the evidence is kept anywhere. Runs without a pull request (local mode,
// a push to the default branch) are not held by a lock and take none: an
// apply of theirs leaves the hold where it was.

// LockedPerPullRequest reports whether pull requests take turns in e.
// The environments a pull request applies to without anyone's approval
// are locked; the guarded ones need an approval of a plan that shows
// what it changes, and promotion order already serializes them: a pull
// request reaches qa only with a change dev applied, which it cannot
// apply while another holds dev. The set is fixed rather than configured
// in the contract, which the pull request under review writes and could
// exempt itself in.
func (e Environment) LockedPerPullRequest() bool { return e.Autonomous() }

// PullRequestState is what the forge says of a pull request.
type PullRequestState string

const (
	PullRequestOpen   PullRequestState = "open"
	PullRequestMerged PullRequestState = "merged"
	PullRequestClosed PullRequestState = "closed"
)

// PullRequestStates asks the forge about a pull request of the repository
// other than the run's own.
type PullRequestStates interface {
	PullRequestState(ctx context.Context, number int64) (PullRequestState, error)
}

// PullRequestHold is the pull request that holds an environment: its
// number, the change it applied, and the event that applied it (the
// nova.apply.completed, or the nova.apply.resolved that found it applied),
// which a release names.
type PullRequestHold struct {
	PullRequest int64  `json:"pullRequest"`
	Change      string `json:"change,omitempty"`
	Event       string `json:"event"`
}

// LockCheck is the data of nova.lock.checked, and of the nova.run.failed
// of a run the lock refused: whose run it was, who held the environment
// when it began, and what the forge said of the holder.
type LockCheck struct {
	Environment Environment      `json:"environment"`
	PullRequest int64            `json:"pullRequest"`
	Holder      *PullRequestHold `json:"holder,omitempty"`
	HolderState PullRequestState `json:"holderState,omitempty"`
}

// LockRelease is the data of nova.lock.released: an operator released the
// hold that event Hold took, and said why.
type LockRelease struct {
	Environment Environment `json:"environment"`
	PullRequest int64       `json:"pullRequest"`
	Hold        string      `json:"hold"`
	Reason      string      `json:"reason"`
	ReleasedBy  string      `json:"releasedBy"`
}

// PullRequestLock is the stage after change: it refuses a pull request's
// run in a locked environment that another open pull request holds. It is
// wired only into runs of a pull request.
type PullRequestLock struct {
	// PullRequest is the run's pull request.
	PullRequest int64
	// States asks the forge whether the holder is still open.
	States PullRequestStates
	// Evidence is the contract's chain, which names the holder.
	Evidence EvidenceReader
}

var _ Stage = (*PullRequestLock)(nil)

// Name implements Stage.
func (*PullRequestLock) Name() string { return "lock" }

// Run implements Stage.
func (s *PullRequestLock) Run(ctx context.Context, st *State) (Result, error) {
	if st.Contract == nil {
		return Result{}, Errorf(InternalError, "lock reached without a validated contract")
	}
	env := st.Contract.Environment
	in := lockInput{Contract: st.Contract.ID, Env: env, PullRequest: s.PullRequest}
	if env.LockedPerPullRequest() && s.PullRequest > 0 {
		if s.Evidence == nil {
			return Result{}, Errorf(InternalError, "the lock of %s has no evidence to read its holder from", env)
		}
		sum, err := ReadGateSummary(ctx, s.Evidence, st.Contract.ID)
		if err != nil {
			return Result{}, err
		}
		in.Hold = sum.Env(env).Hold
	}
	if h := in.Hold; h != nil && h.PullRequest != s.PullRequest {
		if s.States == nil {
			// Without the forge's word the holder may be open: deciding
			// either way would be a guess.
			return Result{}, Errorf(ConfigInvalid, "pull request #%d holds %s, and without a forge token nothing can ask the forge whether it is still open; give the run a token that may read pull requests", h.PullRequest, env)
		}
		state, err := s.States.PullRequestState(ctx, h.PullRequest)
		if err != nil {
			return Result{}, err
		}
		in.HolderState = state
	}
	return decideLock(in)
}

// lockInput is what the lock decides on: the run, the environment's
// holder by the evidence, and the forge's word on the holder (asked only
// when the holder is another pull request).
type lockInput struct {
	Contract    string
	Env         Environment
	PullRequest int64
	Hold        *PullRequestHold
	HolderState PullRequestState
}

// decideLock is the lock's rule, pure so that it is table-tested. An
// unknown state of the holder is an error, never rounded to open or
// closed.
func decideLock(in lockInput) (Result, error) {
	check := LockCheck{Environment: in.Env, PullRequest: in.PullRequest, Holder: in.Hold, HolderState: in.HolderState}
	pass := func(format string, a ...any) (Result, error) {
		return Result{Verdict: Pass, Event: EventLockChecked, Summary: fmt.Sprintf(format, a...), Data: check}, nil
	}
	h := in.Hold
	switch {
	case !in.Env.LockedPerPullRequest():
		return pass("%s is not locked per pull request", in.Env)
	case in.PullRequest <= 0:
		return pass("a run without a pull request neither waits for %s's lock nor takes it", in.Env)
	case h == nil:
		return pass("%s is free: pull request #%d holds it once it applies", in.Env, in.PullRequest)
	case h.PullRequest == in.PullRequest:
		return pass("pull request #%d holds %s", in.PullRequest, in.Env)
	}
	switch in.HolderState {
	case PullRequestMerged, PullRequestClosed:
		return pass("pull request #%d held %s until it was %s: %s is free", h.PullRequest, in.Env, in.HolderState, in.Env)
	case PullRequestOpen:
		change := "an unidentified change"
		if h.Change != "" {
			change = "change " + ShortDigest(h.Change)
		}
		msg := fmt.Sprintf("%s of contract %s is held by pull request #%d (%s, applied in event %s) until it is merged or closed; run this pull request again then, or have an operator release it: `nova unlock --env %s --contract %s --reason TEXT`",
			in.Env, in.Contract, h.PullRequest, change, h.Event, in.Env, in.Contract)
		return Result{Verdict: Fail, Summary: fmt.Sprintf("%s is held by pull request #%d", in.Env, h.PullRequest),
			Findings: []Finding{{Reason: StateHeldByPR, Message: msg}}, Data: check}, nil
	}
	return Result{}, Errorf(ForgeAPIFailed, "the forge says pull request #%d, which holds %s, is %q: neither open, merged nor closed", h.PullRequest, in.Env, in.HolderState)
}
