package runner

import (
	"fmt"
	"regexp"
	"strings"
	"sync"
	"time"
)

// Comment commands, read alike on every forge:
//
//	/nova approve <env> <plan digest, or its first 32 or more hex digits>
//	/nova reject <env> <reason…>
//
// The command is the comment's first non-blank line; for a rejection,
// what follows is part of the reason. A quoted command ("> /nova …") or
// one in code ("`/nova …`") is not a command. A comment that starts with
// /nova but cannot be acted on (an unknown environment, a digest too short
// to bind one plan) is answered, never dropped: a rejection that went
// unread because it said "production" would be the unsafe way round.

// MinDigestPrefix is the fewest hex digits of a plan digest an approval may
// name: 128 bits, beyond what anyone can grind a second plan to share (12
// digits, 48 bits, took about 75 CPU-seconds to collide).
const MinDigestPrefix = 32

// Command is a parsed /nova command.
type Command struct {
	Decision Decision
	// Env is the environment named, canonical ("Prod" is prod); Named is
	// what the comment wrote.
	Env   Environment
	Named string
	// Digest is what an approval names of the plan digest, lower case.
	Digest string
	// Reason is a rejection's reason.
	Reason string
	// Problem says why the command cannot be acted on; Decision is then
	// what it would have been, if that could be read.
	Problem string
}

var hexDigest = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[0-9a-fA-F]+$`) })

// ParseCommand reads the command on body's first non-blank line; ok is
// false when the comment is not a /nova command at all.
func ParseCommand(body string) (cmd Command, ok bool) {
	body = strings.ReplaceAll(body, "\r\n", "\n")
	lines := strings.Split(body, "\n")
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return Command{}, false
	}
	f := strings.Fields(lines[first])
	if len(f) == 0 || f[0] != "/nova" {
		return Command{}, false
	}
	if len(f) > 1 && strings.EqualFold(f[1], "break-glass") {
		// A break-glass command (ParseBreakGlassCommand) is no claim on
		// a plan: the break-glass workflow answers it.
		return Command{}, false
	}
	usage := "write `/nova approve <env> <plan digest>` or `/nova reject <env> <reason>`"
	if len(f) < 3 {
		return Command{Problem: "incomplete command: " + usage}, true
	}
	switch strings.ToLower(f[1]) {
	case "approve":
		cmd.Decision = Approve
	case "reject":
		cmd.Decision = Reject
	default:
		return Command{Problem: fmt.Sprintf("unknown command %q: %s", f[1], usage)}, true
	}
	cmd.Named = f[2]
	if env := Environment(strings.ToLower(f[2])); env.Valid() {
		cmd.Env = env
	} else {
		cmd.Problem = fmt.Sprintf("unknown environment %q: name dev, qa, prod or dr", f[2])
	}
	if cmd.Decision == Reject {
		reason := strings.Join(f[3:], " ")
		if rest := strings.TrimSpace(strings.Join(lines[first+1:], "\n")); rest != "" {
			reason = strings.TrimSpace(reason + "\n" + rest)
		}
		cmd.Reason = reason
		return cmd, true
	}
	switch {
	case cmd.Problem != "":
	case len(f) != 4:
		cmd.Problem = "an approval names the environment and the plan digest, and nothing else: " + usage
	case !hexDigest().MatchString(f[3]) || len(f[3]) > 64:
		cmd.Problem = fmt.Sprintf("%q is not a plan digest (up to 64 hex digits)", f[3])
	case len(f[3]) < MinDigestPrefix:
		cmd.Problem = fmt.Sprintf("the approval names %d hex digits of the plan digest; name at least %d, or the whole digest, so it binds one plan", len(f[3]), MinDigestPrefix)
	default:
		cmd.Digest = strings.ToLower(f[3])
	}
	return cmd, true
}

// PostedComment is a forge comment as an approval source reads it.
type PostedComment struct {
	// Poster is who posted it, Ref the forge's id of it.
	Poster, Ref string
	Body        string
	Created     time.Time
	// Edited is true when the text is not what the poster posted (the
	// forge says it was updated after it was created, or the event that
	// delivered it was an edit): anyone who may edit comments, the
	// change's author included, may have written it.
	Edited bool
}

// CommentClaim reads one comment as a claim on req's plan from source, or
// ok false when it is no claim on it: not a command, written before the
// plan went on show (CommentAfterPlan), about another environment, or an
// approval of another plan. An edited comment never approves: it is
// reported as a problem, while an edited rejection still holds the plan.
// A command that cannot be acted on is a claim with its Problem, so the
// run answers it.
func CommentClaim(c PostedComment, req ApprovalRequest, source string) (ApprovalClaim, bool) {
	cmd, ok := ParseCommand(c.Body)
	if !ok || c.Poster == "" {
		return ApprovalClaim{}, false
	}
	decision := cmd.Decision
	if decision == "" || cmd.Problem != "" {
		// Judged like a rejection: it names no plan, so it must come
		// after the plan to be about it.
		decision = Reject
	}
	if !CommentAfterPlan(c.Created, req.PlannedAt, decision) {
		return ApprovalClaim{}, false
	}
	if cmd.Env != "" && cmd.Env != req.Environment {
		return ApprovalClaim{}, false
	}
	claim := ApprovalClaim{Approver: c.Poster, Environment: req.Environment, PlanDigest: req.PlanDigest, Decision: cmd.Decision,
		Source: source, SourceRef: c.Ref, At: c.Created.UTC(), Problem: cmd.Problem}
	switch {
	case cmd.Problem != "":
	case cmd.Decision == Reject:
		claim.Reason = cmd.Reason
	case !strings.HasPrefix(req.PlanDigest, cmd.Digest):
		return ApprovalClaim{}, false
	case c.Edited:
		claim.Problem = "the comment was edited after it was posted; an edited comment never approves: post the approval anew"
	}
	return claim, true
}
