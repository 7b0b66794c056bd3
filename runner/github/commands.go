package github

import (
	"context"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/google/go-github/v66/github"

	"github.com/nova-platform/nova/runner"
)

// Comments is the approval source of comment commands on the pull request:
//
//	/nova approve <env> <digest-prefix>
//	/nova reject <env> <reason…>
//
// The command is the comment's first non-blank line; what follows it is
// free text (and, for a rejection, part of the reason). A quoted command
// ("> /nova approve …" in a reply) is not a command.
type Comments struct{ c *Client }

var _ runner.ApprovalSource = (*Comments)(nil)

// Comments reads /nova commands from the pull request's comments.
func (c *Client) Comments() *Comments { return &Comments{c: c} }

// Name is the source's name in records.
func (s *Comments) Name() string { return runner.SourceGitHubComment }

// minPrefix is the shortest digest prefix an approval may name: 48 bits,
// enough that no other plan of the contract shares it by chance, short
// enough to type.
const minPrefix = 12

var digestPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(fmt.Sprintf(`^[0-9a-f]{%d,64}$`, minPrefix)) })

// Claims returns the commands for req.Environment in comments created after
// the plan was recorded. An approval counts only if its prefix is a prefix
// of req.PlanDigest, so an approval of an earlier plan never carries over
// to a changed one; a rejection applies to the current plan. Anything else,
// a malformed command included, is not a claim (and not an error: the
// thread is a conversation, not an input format).
func (s *Comments) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	if err := needPlan(req, false); err != nil {
		return nil, err
	}
	if err := s.c.needPullRequest(); err != nil {
		return nil, err
	}
	// Timestamps are kept to the second: a comment of the plan's own
	// second is listed, and CommentAfterPlan decides.
	since := req.PlannedAt.Truncate(time.Second)
	comments, err := listAll(func(opts gh.ListOptions) ([]*gh.IssueComment, *gh.Response, error) {
		// since filters on updated_at; created_at is checked below.
		return s.c.gh.Issues.ListComments(ctx, s.c.owner, s.c.repo, s.c.pr,
			&gh.IssueListCommentsOptions{Since: &since, ListOptions: opts})
	})
	if err != nil {
		return nil, s.c.fail(ctx, err, permIssuesRead, "listing comments of pull request %d", s.c.pr)
	}
	var claims []runner.ApprovalClaim
	for _, cm := range comments {
		at := cm.GetCreatedAt().Time
		login := cm.GetUser().GetLogin()
		if login == "" {
			continue
		}
		cmd, ok := parseCommand(cm.GetBody())
		if !ok || cmd.env != string(req.Environment) || !runner.CommentAfterPlan(at, req.PlannedAt, cmd.decision) {
			continue
		}
		if cmd.decision == runner.Approve && !strings.HasPrefix(req.PlanDigest, cmd.prefix) {
			continue
		}
		claims = append(claims, runner.ApprovalClaim{
			Approver:    login,
			Environment: req.Environment,
			PlanDigest:  req.PlanDigest,
			Decision:    cmd.decision,
			Reason:      cmd.reason,
			Source:      runner.SourceGitHubComment,
			SourceRef:   strconv.FormatInt(cm.GetID(), 10),
			At:          at.UTC(),
		})
	}
	return claims, nil
}

// command is a parsed /nova command.
type command struct {
	decision runner.Decision
	env      string
	// prefix is an approval's digest prefix.
	prefix string
	// reason is a rejection's reason.
	reason string
}

// parseCommand reads the command on body's first non-blank line.
func parseCommand(body string) (command, bool) {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return command{}, false
	}
	f := strings.Fields(lines[first])
	if len(f) < 3 || f[0] != "/nova" {
		return command{}, false
	}
	switch f[1] {
	case "approve":
		// Exactly the prefix: "/nova approve prod abc… please" is not
		// something to guess about.
		if len(f) != 4 || !digestPrefix().MatchString(f[3]) {
			return command{}, false
		}
		return command{decision: runner.Approve, env: f[2], prefix: f[3]}, true
	case "reject":
		// A rejection only holds the plan, so one without a reason still
		// counts: ignoring it would be the unsafe way round.
		reason := strings.Join(f[3:], " ")
		if rest := strings.TrimSpace(strings.Join(lines[first+1:], "\n")); rest != "" {
			reason = strings.TrimSpace(reason + "\n" + rest)
		}
		return command{decision: runner.Reject, env: f[2], reason: reason}, true
	}
	return command{}, false
}
