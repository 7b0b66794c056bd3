package github

import (
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/nova-platform/nova/runner"
)

const oldSHA = "553c2077f0edc3d5dc5d17262f6aa498e69d6f8e"

func reviewRequest() runner.ApprovalRequest {
	return runner.ApprovalRequest{
		ContractID:  "c0ffee00-0000-4000-8000-000000000001",
		Environment: runner.Prod,
		PlanDigest:  digest,
		Commit:      headSHA,
		PlannedAt:   planned,
	}
}

func TestReviews(t *testing.T) {
	at := time.Date(2024, 5, 2, 10, 0, 0, 0, time.UTC)
	approved := runner.ApprovalClaim{
		Approver: "alice", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Approve,
		Source: runner.SourceGitHubReview, SourceRef: "80", At: at,
	}
	tests := []struct {
		name string
		// review edits the documented review (APPROVED by alice on the
		// head, after the plan).
		review func(map[string]any)
		req    func(*runner.ApprovalRequest)
		want   []runner.ApprovalClaim
	}{
		{
			name: "an approval of the planned head after the plan",
			want: []runner.ApprovalClaim{approved},
		},
		{
			name: "changes requested is a rejection with the review's body as reason",
			review: func(r map[string]any) {
				r["state"] = "CHANGES_REQUESTED"
				r["body"] = "The bucket must not be public."
			},
			want: []runner.ApprovalClaim{{
				Approver: "alice", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Reject,
				Reason: "The bucket must not be public.", Source: runner.SourceGitHubReview, SourceRef: "80", At: at,
			}},
		},
		{
			name:   "a stale review of an older head does not count",
			review: func(r map[string]any) { r["commit_id"] = oldSHA },
		},
		{
			name:   "a review submitted before the plan was recorded does not count",
			review: func(r map[string]any) { r["submitted_at"] = "2024-05-02T09:29:59Z" },
		},
		{
			name:   "a review submitted at the very time of the plan does not count",
			review: func(r map[string]any) { r["submitted_at"] = "2024-05-02T09:30:00Z" },
		},
		{
			name:   "a comment-only review is no decision",
			review: func(r map[string]any) { r["state"] = "COMMENTED" },
		},
		{
			name:   "a dismissed approval is no decision",
			review: func(r map[string]any) { r["state"] = "DISMISSED" },
		},
		{
			name: "a pending review is no decision",
			review: func(r map[string]any) {
				r["state"] = "PENDING"
				delete(r, "submitted_at")
			},
		},
		{
			// The head moved on after the plan: the plan is of other code
			// than what reviewers now see, so no review can approve it.
			name: "a plan of a commit that is no longer the head gets no reviews",
			req:  func(r *runner.ApprovalRequest) { r.Commit = oldSHA },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeGitHub(t)
			f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, fixture(t, "pull.json"))
			})
			f.handle("GET /repos/octo-org/infra/pulls/7/reviews", func(w http.ResponseWriter, r *http.Request) {
				writeJSON(w, 200, []any{fixtureWith(t, "review.json", tt.review)})
			})
			req := reviewRequest()
			if tt.req != nil {
				tt.req(&req)
			}
			got, err := f.client().Reviews().Claims(t.Context(), req)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("claims (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReviewsPaginate(t *testing.T) {
	f := newFakeGitHub(t)
	f.handle("GET /repos/octo-org/infra/pulls/7", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, fixture(t, "pull.json"))
	})
	f.handle("GET /repos/octo-org/infra/pulls/7/reviews", f.pages("reviews", 3))
	got, err := f.client().Reviews().Claims(t.Context(), reviewRequest())
	if err != nil {
		t.Fatal(err)
	}
	// Page 1 holds a stale approval and a comment; the decisions that
	// count are on pages 2 and 3.
	want := []runner.ApprovalClaim{
		{Approver: "carol", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Approve,
			Source: runner.SourceGitHubReview, SourceRef: "83", At: time.Date(2024, 5, 2, 10, 5, 0, 0, time.UTC)},
		{Approver: "dave", Environment: runner.Prod, PlanDigest: digest, Decision: runner.Reject,
			Reason: "The bucket must not be public.", Source: runner.SourceGitHubReview, SourceRef: "84",
			At: time.Date(2024, 5, 2, 10, 10, 0, 0, time.UTC)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("claims (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"", "2", "3"}, f.pagesRead("/repos/octo-org/infra/pulls/7/reviews")); diff != "" {
		t.Errorf("pages read (-want +got):\n%s", diff)
	}
}

func TestReviewsNeedAPlan(t *testing.T) {
	f := newFakeGitHub(t)
	for name, edit := range map[string]func(*runner.ApprovalRequest){
		"no digest":       func(r *runner.ApprovalRequest) { r.PlanDigest = "" },
		"no planned time": func(r *runner.ApprovalRequest) { r.PlannedAt = time.Time{} },
		"no commit":       func(r *runner.ApprovalRequest) { r.Commit = "" },
	} {
		t.Run(name, func(t *testing.T) {
			req := reviewRequest()
			edit(&req)
			if _, err := f.client().Reviews().Claims(t.Context(), req); runner.ReasonOf(err) != runner.InternalError {
				t.Errorf("error = %v; want %s", err, runner.InternalError)
			}
		})
	}
	if n := len(f.requests()); n != 0 {
		t.Errorf("%d requests; want none", n)
	}
}
