package runner

import (
	"context"
	"time"
)

// A forge never decides. Each approval source below only finds claims —
// "this person approved (or rejected) this plan" — and the gate's import
// stage checks who may give them before recording the eligible ones in the
// evidence repo as nova.approval.recorded / nova.approval.rejected. The
// gate then decides from the evidence alone, so the same contract and the
// same approvals give the same verdict whichever forge they came from.

// Decision is what an approver decided.
type Decision string

const (
	Approve Decision = "approve"
	Reject  Decision = "reject"
)

// Approval sources, as recorded in ApprovalRecord.Source.
const (
	SourceGitHubEnvironment = "github-environment"
	SourceGitHubReview      = "github-review"
	SourceGitHubComment     = "github-comment"
	SourceGiteaReview       = "gitea-review"
	SourceGiteaComment      = "gitea-comment"
	SourceLocal             = "local"
)

// ApprovalRequest names the plan approvals are sought for.
type ApprovalRequest struct {
	ContractID  string
	Environment Environment
	PlanDigest  string
	// Commit is the commit the plan was made from; a PR review counts only
	// on the PR's head commit, and only if the head is this commit.
	Commit string
	// PlannedAt is when this plan was first recorded: a review submitted
	// before it cannot have seen the plan (see CommentAfterPlan).
	PlannedAt time.Time
	// ForgeRun is the forge's workflow run that made the plan bundle, when
	// known: an environment approval of one workflow run approves the
	// bundle of that run and no other.
	ForgeRun string
}

// ApprovalClaim is one approval or rejection as a source found it, before
// Nova has checked that its author may give it.
type ApprovalClaim struct {
	Approver    string
	Environment Environment
	// PlanDigest is the full digest the claim is bound to; a source that
	// reads a prefix (a comment command) resolves it against the request's
	// digest and drops claims whose prefix does not match.
	PlanDigest string
	Decision   Decision
	// Reason explains a rejection.
	Reason string
	// Source is one of the Source* constants; SourceRef identifies the
	// claim within it (workflow run id, review id, comment id, claim id),
	// so one claim is imported once however often it is read.
	Source    string
	SourceRef string
	At        time.Time
	// Signed holds a local claim's signed form; other sources leave it nil.
	Signed *SignedClaim
	// Problem, when set, says why the claim cannot count (a command that
	// cannot be acted on, an edited approval): it is reported as ignored,
	// so whoever wrote it sees why.
	Problem string
}

// ApprovalSource finds the claims a forge (or the local claim store) holds
// for a plan. It reports what it finds; eligibility is not its concern.
type ApprovalSource interface {
	Name() string
	Claims(ctx context.Context, req ApprovalRequest) ([]ApprovalClaim, error)
}

// Change describes the change under review on a forge: who wrote it, and
// the commits it goes from and to.
type Change struct {
	// Authors are the pull request's author and its commits' authors
	// (forge logins); none of them may approve the change.
	Authors []Login
	// Unlinked are the commits whose author the forge could not link to
	// a login (an email no account claims). Who wrote them is unknown, so
	// nobody can be shown not to have: while any is listed, no approval
	// of the change is accepted.
	Unlinked []string
	// Requester asked for the change when it was not written but
	// requested: a rollback's. Like an author, they may not approve it.
	Requester Login
	// Head is the pull request's current head commit, Base the commit of
	// its base branch the approver config is read from.
	Head string
	Base string
}

// ChangeReader reads the change under review.
type ChangeReader interface {
	Change(ctx context.Context) (Change, error)
}

// TeamMembership answers whether a forge login belongs to a forge team
// ("org/team"). A team the token cannot read is an error
// (APPROVER_TEAM_UNREADABLE), never "not a member": that answer would
// silently drop the team's approvals and, worse, its rejections.
type TeamMembership interface {
	IsTeamMember(ctx context.Context, team, login string) (bool, error)
	// CheckTeam says whether the token can tell who is in team at all,
	// before anyone's membership is asked: a run learns that its token
	// cannot read the approver teams the first time it needs them, not
	// when the first approval arrives.
	CheckTeam(ctx context.Context, team string) error
}

// SignedClaim is a local approval: the claim's canonical JSON and the
// approver's ECDSA P-256 signature over it (base64 DER, as cosign writes),
// verified against the approver's key in the approver config.
type SignedClaim struct {
	Claim     LocalClaim `json:"claim"`
	Signature string     `json:"signature"`
}

// LocalClaim is what a local approver signs.
type LocalClaim struct {
	ID          string      `json:"id"`
	ContractID  string      `json:"contractId"`
	Environment Environment `json:"environment"`
	PlanDigest  string      `json:"planDigest"`
	Approver    string      `json:"approver"`
	Decision    Decision    `json:"decision"`
	Reason      string      `json:"reason,omitempty"`
	At          time.Time   `json:"at"`
}

// CommitState is a commit status's state, as both forges name them.
type CommitState string

const (
	StatePending CommitState = "pending"
	StateSuccess CommitState = "success"
	StateFailure CommitState = "failure"
	StateError   CommitState = "error"
)

// CommitStatus is one status on a commit, one per contract and environment.
type CommitStatus struct {
	Context     string
	State       CommitState
	Description string
	TargetURL   string
}

// PullRequestCommenter keeps one comment per contract and environment on a
// pull request, found again by a hidden marker and updated in place.
type PullRequestCommenter interface {
	UpsertComment(ctx context.Context, marker, body string) error
}

// StatusSetter sets commit statuses.
type StatusSetter interface {
	SetStatus(ctx context.Context, commit string, s CommitStatus) error
}

// DeploymentState is a deployment status's state.
type DeploymentState string

const (
	DeploymentInProgress DeploymentState = "in_progress"
	DeploymentSuccess    DeploymentState = "success"
	DeploymentFailure    DeploymentState = "failure"
	DeploymentInactive   DeploymentState = "inactive"
)

// Deployments records a deployment of a commit to an environment and its
// progress (GitHub Deployments; forges without them have no implementation).
type Deployments interface {
	// StartDeployment creates a deployment and returns its id.
	StartDeployment(ctx context.Context, commit string, env Environment, description string) (int64, error)
	SetDeploymentState(ctx context.Context, id int64, state DeploymentState, description string) error
}

// CommentAfterPlan reports whether a comment the forge stamped at (to the
// second, as GitHub and Gitea keep it) counts as written after the plan
// recorded at planned. An approval names the plan's digest, which nobody
// knows before the plan exists, so one stamped within the plan's own second
// counts; a rejection names no digest and must be stamped in a later second,
// as a review must.
func CommentAfterPlan(at, planned time.Time, d Decision) bool {
	if d == Approve {
		return !at.Before(planned.Truncate(time.Second))
	}
	return at.After(planned)
}
