package main

import (
	"context"
	"strconv"

	"github.com/nova-platform/nova/runner"
)

// eventComment is the approval source of the comment the workflow's own
// event delivered. The forge sends issue_comment when a comment is
// created, edited or deleted, with the text as it stood, so a rejection is
// imported the first time it is seen even if someone with write access
// deletes or rewrites it before this run lists the comments. Only a
// comment as it was created may approve; the text an edit replaced, or a
// deleted comment, may only reject.
type eventComment struct {
	comment *EventComment
	source  string
}

var _ runner.ApprovalSource = eventComment{}

func (s eventComment) Name() string { return s.source }

func (s eventComment) Claims(_ context.Context, req runner.ApprovalRequest) ([]runner.ApprovalClaim, error) {
	c := s.comment
	posted := func(body string, edited bool) runner.PostedComment {
		return runner.PostedComment{Poster: c.Poster, Ref: strconv.FormatInt(c.ID, 10), Body: body, Created: c.Created, Edited: edited}
	}
	var texts []runner.PostedComment
	switch c.Action {
	case "created":
		texts = append(texts, posted(c.Body, c.Updated.After(c.Created)))
	case "edited":
		// The text it replaced first: of two claims on one comment the
		// first is imported.
		if c.Previous != "" {
			texts = append(texts, posted(c.Previous, true))
		}
		texts = append(texts, posted(c.Body, true))
	case "deleted":
		texts = append(texts, posted(c.Body, true))
	}
	var claims []runner.ApprovalClaim
	for _, p := range texts {
		claim, ok := runner.CommentClaim(p, req, s.source)
		if !ok || (c.Action != "created" && claim.Decision != runner.Reject) || (c.Action != "created" && claim.Problem != "") {
			continue
		}
		claims = append(claims, claim)
	}
	return claims, nil
}
