package gitea

import (
	"strings"
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

func TestCommentClaim(t *testing.T) {
	comment := func(body string, change func(*sdk.Comment)) *sdk.Comment {
		cm := &sdk.Comment{ID: 12, Poster: &sdk.User{UserName: "bob"}, Body: body, Created: later, Updated: later}
		if change != nil {
			change(cm)
		}
		return cm
	}
	approval := &runner.ApprovalClaim{
		Approver: "bob", Environment: runner.QA, PlanDigest: digest, Decision: runner.Approve,
		Source: runner.SourceGiteaComment, SourceRef: "12", At: later,
	}
	rejection := func(reason string) *runner.ApprovalClaim {
		c := *approval
		c.Decision, c.Reason = runner.Reject, reason
		return &c
	}
	tests := []struct {
		name    string
		comment *sdk.Comment
		want    *runner.ApprovalClaim
	}{
		{"approve with a 12-character prefix", comment("/nova approve qa "+digest[:12], nil), approval},
		{"approve with the whole digest", comment("/nova approve qa "+digest, nil), approval},
		{"approve, then more lines", comment("/nova approve qa "+digest[:16]+"\r\nchecked the plan", nil), approval},
		{"blank lines and spaces around", comment("\n\n  /nova   approve\tqa  "+digest[:12]+"  \n", nil), approval},
		{"prefix of 11", comment("/nova approve qa "+digest[:11], nil), nil},
		{"prefix of another plan", comment("/nova approve qa 0123456789ab", nil), nil},
		{"prefix longer than the digest", comment("/nova approve qa "+digest+"00", nil), nil},
		{"prefix in capitals", comment("/nova approve qa "+strings.ToUpper(digest[:12]), nil), nil},
		{"other environment", comment("/nova approve prod "+digest[:12], nil), nil},
		{"no prefix", comment("/nova approve qa", nil), nil},
		{"words after the prefix", comment("/nova approve qa "+digest[:12]+" please", nil), nil},
		{"not at the start", comment("LGTM /nova approve qa "+digest[:12], nil), nil},
		{"quoted", comment("> /nova approve qa "+digest[:12], nil), nil},
		{"on a later line", comment("LGTM\n/nova approve qa "+digest[:12], nil), nil},
		{"capitalised command", comment("/Nova approve qa "+digest[:12], nil), nil},
		{"another command", comment("/nova apply qa "+digest[:12], nil), nil},
		// Gitea keeps seconds: an approval names the digest, so it cannot
		// predate the plan within its second; a rejection could.
		{"approval stamped in the plan's second", comment("/nova approve qa "+digest[:12], func(c *sdk.Comment) { c.Created, c.Updated = plannedAt, plannedAt }), func() *runner.ApprovalClaim {
			c := *approval
			c.At = plannedAt
			return &c
		}()},
		{"rejection stamped in the plan's second", comment("/nova reject qa no", func(c *sdk.Comment) { c.Created, c.Updated = plannedAt, plannedAt }), nil},
		{"created before the plan", comment("/nova approve qa "+digest[:12], func(c *sdk.Comment) { c.Created = plannedAt.Add(-time.Hour) }), nil},
		{"edited after it was posted", comment("/nova approve qa "+digest[:12], func(c *sdk.Comment) { c.Updated = later.Add(time.Second) }), nil},
		{"no poster", comment("/nova approve qa "+digest[:12], func(c *sdk.Comment) { c.Poster = nil }), nil},
		{"reject with a reason", comment("/nova reject qa the plan deletes the bucket", nil), rejection("the plan deletes the bucket")},
		{"reject with a reason over lines", comment("/nova reject qa the plan deletes the bucket\r\nand its backups\n", nil), rejection("the plan deletes the bucket\nand its backups")},
		{"reject without a reason still rejects", comment("/nova reject qa", nil), rejection("")},
		{"reject in another environment", comment("/nova reject prod no", nil), nil},
		{"edited rejection", comment("/nova reject qa no", func(c *sdk.Comment) { c.Updated = later.Add(time.Minute) }), nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := commentClaim(tc.comment, request)
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
