package runner

import (
	"fmt"
	"strings"
)

// Break-glass comment commands, read like /nova approve (ParseCommand):
//
//	/nova break-glass approve <request id>
//	/nova break-glass revoke <request or grant id> <reason…>
//
// on the issue Nova opened for the request. The command is the comment's
// first non-blank line; a revocation's reason runs on to the lines after.
// The poster is who acts, as the forge says; the comment as posted is the
// claim, so an edited one never counts (anyone with write access may have
// written it).

// BreakGlassCommand is a parsed /nova break-glass command.
type BreakGlassCommand struct {
	// Action is approve or revoke.
	Action string
	// ID names the request (or, for a revocation, its grant).
	ID string
	// Reason is a revocation's reason.
	Reason string
	// Problem says why the command cannot be acted on.
	Problem string
}

const breakGlassCommandUsage = "write `/nova break-glass approve <request id>` or `/nova break-glass revoke <request id> <reason>`"

// ParseBreakGlassCommand reads the command on body's first non-blank line;
// ok is false when the comment is no /nova break-glass command at all.
func ParseBreakGlassCommand(body string) (cmd BreakGlassCommand, ok bool) {
	lines := strings.Split(strings.ReplaceAll(body, "\r\n", "\n"), "\n")
	first := 0
	for first < len(lines) && strings.TrimSpace(lines[first]) == "" {
		first++
	}
	if first == len(lines) {
		return cmd, false
	}
	f := strings.Fields(lines[first])
	if len(f) < 2 || f[0] != "/nova" || !strings.EqualFold(f[1], "break-glass") {
		return cmd, false
	}
	if len(f) < 4 {
		return BreakGlassCommand{Problem: "incomplete command: " + breakGlassCommandUsage}, true
	}
	cmd.Action, cmd.ID = strings.ToLower(f[2]), f[3]
	switch cmd.Action {
	case BreakGlassApproveAction:
		if len(f) != 4 {
			cmd.Problem = "an approval names the request and nothing else: " + breakGlassCommandUsage
		}
	case BreakGlassRevokeAction:
		reason := strings.Join(f[4:], " ")
		if rest := strings.TrimSpace(strings.Join(lines[first+1:], "\n")); rest != "" {
			reason = strings.TrimSpace(reason + "\n" + rest)
		}
		if cmd.Reason = reason; reason == "" {
			cmd.Problem = "a revocation says why: " + breakGlassCommandUsage
		}
	default:
		cmd.Problem = fmt.Sprintf("unknown break-glass command %q in a comment (request and review are `nova break-glass` commands): %s", f[2], breakGlassCommandUsage)
	}
	return cmd, true
}

// BreakGlassCommentProblem says why a posted comment's command may not
// act (a reason and a message), or "" when it may: a command that cannot
// be acted on is ConfigInvalid; an edited comment never counts.
func BreakGlassCommentProblem(c PostedComment, cmd BreakGlassCommand) (Reason, string) {
	switch {
	case cmd.Problem != "":
		return ConfigInvalid, cmd.Problem
	case c.Edited:
		return BreakGlassCommentEdited, fmt.Sprintf("comment %s by %s was edited after it was posted; an edited comment never counts for break-glass: post the command anew", c.Ref, c.Poster)
	}
	return "", ""
}
