package gitea

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "code.gitea.io/sdk/gitea"

	"github.com/nova-platform/nova/runner"
)

// Comments finds /nova commands in the pull request's comments:
//
//	/nova approve <env> <plan digest prefix, 12 or more lowercase hex>
//	/nova reject <env> <reason…>
//
// The command is the comment's first line; a reject's reason is the rest of
// that line and every line after it. Any other comment is not a command
// and is ignored, never an error.
type Comments struct{ c *Client }

var _ runner.ApprovalSource = (*Comments)(nil)

// Name is the source recorded with the claims.
func (*Comments) Name() string { return runner.SourceGiteaComment }

// Claims returns the commands that approve or reject req's plan in req's
// environment, posted after the plan was recorded (see commentClaim).
func (s *Comments) Claims(ctx context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	activity := "reading comment approvals"
	if err := checkRequest(req, activity); err != nil {
		return nil, err
	}
	c := s.c
	if err := c.needPull(activity); err != nil {
		return nil, err
	}
	// Gitea keeps times to the second: a comment of the plan's own second
	// is listed, and CommentAfterPlan decides.
	comments, err := c.listComments(ctx, req.PlannedAt.Truncate(time.Second))
	if err != nil {
		return nil, err
	}
	var claims []runner.ApprovalClaim
	for _, cm := range comments {
		if claim, ok := commentClaim(cm, req); ok {
			claims = append(claims, claim)
		}
	}
	return claims, nil
}

// commentClaim reads one comment as a claim on req's plan. It counts only
// when it was created after req.PlannedAt (runner.CommentAfterPlan) and
// never edited: Gitea lets
// anyone with write access to pull requests edit anyone's comment, so an
// edited comment's text may not be its poster's — the author of the change
// could turn a reviewer's remark into an approval. (Gitea keeps times to
// the second, so an edit within the second of posting goes unseen.) An
// approval's digest prefix must begin req.PlanDigest, and the claim
// carries the full digest; a rejection applies to the current plan.
func commentClaim(cm *sdk.Comment, req runner.ApprovalRequest) (runner.ApprovalClaim, bool) {
	if cm == nil || cm.Poster == nil || cm.Poster.UserName == "" {
		return runner.ApprovalClaim{}, false
	}
	if cm.Updated.After(cm.Created) {
		return runner.ApprovalClaim{}, false
	}
	cmd, ok := parseCommand(cm.Body)
	if !ok || cmd.env != string(req.Environment) || !runner.CommentAfterPlan(cm.Created, req.PlannedAt, cmd.decision) {
		return runner.ApprovalClaim{}, false
	}
	if cmd.decision == runner.Approve && !strings.HasPrefix(req.PlanDigest, cmd.prefix) {
		return runner.ApprovalClaim{}, false
	}
	return runner.ApprovalClaim{
		Approver:    cm.Poster.UserName,
		Environment: req.Environment,
		PlanDigest:  req.PlanDigest,
		Decision:    cmd.decision,
		Reason:      cmd.reason,
		Source:      runner.SourceGiteaComment,
		SourceRef:   idKey(cm.ID),
		At:          cm.Created.UTC(),
	}, true
}

// command is a parsed /nova line.
type command struct {
	decision runner.Decision
	env      string
	prefix   string // approve: the plan digest prefix
	reason   string // reject
}

var (
	approveLine = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`^/nova[ \t]+approve[ \t]+(\S+)[ \t]+([0-9a-f]{12,})[ \t]*$`)
	})
	rejectLine = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/nova[ \t]+reject[ \t]+(\S+)(?:[ \t]+(.*))?$`) })
)

// parseCommand reads a comment's first line as a command. Matching is
// exact and case-sensitive: an approval that does not parse is no
// approval, and a digest prefix in capitals is not the digest Nova showed.
func parseCommand(body string) (command, bool) {
	body = strings.TrimLeft(body, " \t\r\n")
	line, rest, _ := strings.Cut(body, "\n")
	line = strings.TrimRight(line, " \t\r")
	if m := approveLine().FindStringSubmatch(line); m != nil {
		return command{decision: runner.Approve, env: m[1], prefix: m[2]}, true
	}
	if m := rejectLine().FindStringSubmatch(line); m != nil {
		reason := strings.TrimSpace(m[2] + "\n" + strings.ReplaceAll(rest, "\r\n", "\n"))
		return command{decision: runner.Reject, env: m[1], reason: reason}, true
	}
	return command{}, false
}

// listComments reads the pull request's comments, those updated since
// since (zero for all); a comment created later was updated later too.
func (c *Client) listComments(ctx context.Context, since time.Time) ([]*sdk.Comment, error) {
	return paginate(ctx, c, "listing the comments of "+c.prName(),
		func(cm *sdk.Comment) string {
			if cm == nil {
				return ""
			}
			return idKey(cm.ID)
		},
		func(o sdk.ListOptions) ([]*sdk.Comment, *sdk.Response, error) {
			return c.api(ctx).ListIssueComments(c.owner, c.repo, c.pull, sdk.ListIssueCommentOptions{ListOptions: o, Since: since})
		})
}
