package gitea

import (
	"testing"
	"time"

	sdk "code.gitea.io/sdk/gitea"
	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

// digest is sha256("test"): its prefixes hold letters, so capitals differ.
const digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

var (
	plannedAt = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	later     = plannedAt.Add(time.Minute)
	commit    = "5df6c7324fcb2e29c85ef4e859f09cb3b3b7fd1b"
	request   = runner.ApprovalRequest{ContractID: "c1", Environment: runner.QA, PlanDigest: digest, Commit: commit, PlannedAt: plannedAt}
)

// These cover what a real Gitea cannot be made to show on demand (a
// stale review of the head, an edit in a later second); gitea_test.go
// drives the same rules through the real server.

func TestReviewClaim(t *testing.T) {
	approved := func(change func(*sdk.PullReview)) *sdk.PullReview {
		rv := &sdk.PullReview{
			ID: 7, Reviewer: &sdk.User{UserName: "bob"}, State: sdk.ReviewStateApproved,
			CommitID: commit, Official: true, Submitted: later, Body: "lgtm",
		}
		if change != nil {
			change(rv)
		}
		return rv
	}
	approval := runner.ApprovalClaim{
		Approver: "bob", Environment: runner.QA, PlanDigest: digest, Decision: runner.Approve,
		Source: runner.SourceGiteaReview, SourceRef: "7", At: later,
	}
	tests := []struct {
		name   string
		review *sdk.PullReview
		want   *runner.ApprovalClaim
	}{
		{"official approval of the commit after the plan", approved(nil), &approval},
		{"not official (read access, or superseded)", approved(func(r *sdk.PullReview) { r.Official = false }), nil},
		{"stale", approved(func(r *sdk.PullReview) { r.Stale = true }), nil},
		{"dismissed", approved(func(r *sdk.PullReview) { r.Dismissed = true }), nil},
		{"of another commit", approved(func(r *sdk.PullReview) { r.CommitID = "0000000000000000000000000000000000000000" }), nil},
		{"submitted when the plan was recorded", approved(func(r *sdk.PullReview) { r.Submitted = plannedAt }), nil},
		{"submitted before the plan", approved(func(r *sdk.PullReview) { r.Submitted = plannedAt.Add(-time.Second) }), nil},
		{"a comment review", approved(func(r *sdk.PullReview) { r.State = sdk.ReviewStateComment }), nil},
		{"pending", approved(func(r *sdk.PullReview) { r.State = sdk.ReviewStatePending }), nil},
		{"a review request", approved(func(r *sdk.PullReview) { r.State = sdk.ReviewStateRequestReview }), nil},
		{"no reviewer", approved(func(r *sdk.PullReview) { r.Reviewer = nil }), nil},
		{
			"changes requested is a rejection with the body as reason",
			approved(func(r *sdk.PullReview) {
				r.State = sdk.ReviewStateRequestChanges
				r.Body = "  destroys the database\n"
			}),
			&runner.ApprovalClaim{
				Approver: "bob", Environment: runner.QA, PlanDigest: digest, Decision: runner.Reject,
				Reason: "destroys the database", Source: runner.SourceGiteaReview, SourceRef: "7", At: later,
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := reviewClaim(tc.review, request)
			if tc.want == nil {
				if ok {
					t.Fatalf("claim %+v, want none", got)
				}
				return
			}
			if !ok {
				t.Fatal("no claim")
			}
			if diff := cmp.Diff(*tc.want, got); diff != "" {
				t.Errorf("claim (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommentClaim checks what Gitea's comment fields mean to the rules
// (runner.CommentClaim has them whole): an update in a later second is an
// edit, and a comment without a poster is nobody's.
func TestCommentClaim(t *testing.T) {
	comment := func(body string, change func(*sdk.Comment)) *sdk.Comment {
		cm := &sdk.Comment{ID: 12, Poster: &sdk.User{UserName: "bob"}, Body: body, Created: later, Updated: later}
		if change != nil {
			change(cm)
		}
		return cm
	}
	approve := "/nova approve qa " + digest[:32]
	if got, ok := commentClaim(comment(approve, nil), request); !ok || got.Decision != runner.Approve || got.Problem != "" || got.SourceRef != "12" || got.Approver != "bob" {
		t.Errorf("approval: %+v %v", got, ok)
	}
	if got, ok := commentClaim(comment(approve, func(c *sdk.Comment) { c.Updated = later.Add(time.Second) }), request); !ok || got.Problem == "" {
		t.Errorf("edited approval: %+v %v, want it answered as not counting", got, ok)
	}
	if got, ok := commentClaim(comment("/nova reject qa no", func(c *sdk.Comment) { c.Updated = later.Add(time.Minute) }), request); !ok || got.Decision != runner.Reject || got.Problem != "" {
		t.Errorf("edited rejection: %+v %v, want it to hold the plan", got, ok)
	}
	if got, ok := commentClaim(comment(approve, func(c *sdk.Comment) { c.Poster = nil }), request); ok {
		t.Errorf("a comment without a poster: %+v", got)
	}
}
